// StreamReactor: what the two bidirectional streams (ProcessVolumeStream in volume_stream_rpc.cc,
// DetectStream in detect_stream_rpc.cc) share: the call's scope and cancel token, authorization
// on arrival, gRPC's callbacks turned into the stream's events under one lock, a client that
// leaves or stops reading ending the stream, and the stream's end recorded once through
// CallScope::Complete.
#ifndef CUIMG_SERVER_STREAM_REACTOR_H_
#define CUIMG_SERVER_STREAM_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/error.h"
#include "server/rpc/call_scope.h"
#include "server/rpc/imaging_service.h"

namespace cuimg {

// A stream reads Request messages and writes Response messages. A subclass's constructor ends
// with Begin(); after that gRPC's callbacks arrive as the *Locked events below, each with mu_
// held, and each followed by Pump, which moves the stream along and finishes it (FinishLocked)
// once nothing is outstanding. The reactor deletes itself when gRPC is done with it.
template <typename Request, typename Response>
class StreamReactor : public grpc::ServerBidiReactor<Request, Response> {
 public:
  void OnReadDone(bool ok) final {
    std::unique_lock<std::mutex> lock(mu_);
    reading_ = false;
    if (finished_) return;
    if (!ok) {
      input_done_ = true;
      if (ctx_->IsCancelled()) {
        StopLocked(MakeError(absl::StatusCode::kCancelled, ErrorReason::kCancelled, "",
                             "the client cancelled the stream"));
      } else {
        InputEndedLocked();
      }
    } else {
      MessageLocked();
    }
    Pump(std::move(lock));
  }

  void OnWriteDone(bool ok) final {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    WrittenLocked(ok);
    if (!ok) {
      StopLocked(MakeError(absl::StatusCode::kCancelled, ErrorReason::kCancelled, "",
                           "the client stopped reading results"));
    }
    Pump(std::move(lock));
  }

  void OnCancel() final {
    std::unique_lock<std::mutex> lock(mu_);
    // gRPC cancels a call whose deadline passed too, and so does the client when its own copy of
    // the deadline passes: MarkClientGone tells which it was, CheckAlive reports it.
    cancel_.MarkClientGone(began_, ctx_->deadline());
    const absl::Status alive = call_.CheckAlive();
    StopLocked(alive.ok() ? MakeError(absl::StatusCode::kCancelled, ErrorReason::kCancelled, "",
                                      "the client cancelled the stream")
                          : alive);
    Pump(std::move(lock));
  }

  void OnDone() final { delete this; }

 protected:
  // `rpc` names the stream in the metrics and the log. `service` must outlive the reactor.
  StreamReactor(absl::string_view rpc, ImagingService* service, grpc::CallbackServerContext* ctx)
      : service_(service),
        ctx_(ctx),
        cancel_(CancelToken::SteadyDeadline(ctx->deadline()), service->hard_stop()),
        call_(rpc, ctx, &service->metrics()) {
    call_.set_cancel(&cancel_);
  }
  ~StreamReactor() override = default;

  // The subclass constructor's last step: authorizes the caller (a refusal finishes the call)
  // and reads the first message. Not in this constructor: a read may complete before the
  // subclass is built.
  void Begin() {
    if (absl::Status who = service_->AuthorizeCall(call_, kRightProcess); !who.ok()) {
      finished_ = true;
      this->Finish(call_.Complete(who));
      return;
    }
    reading_ = true;
    this->StartRead(&request_);
  }

  // The events, each with mu_ held. MessageLocked: request_ holds the next message.
  // InputEndedLocked: the client half-closed (not cancelled). WrittenLocked: the last StartWrite
  // completed (`ok`: it was sent; if not, StopLocked follows). StopLocked: the stream ends now with
  // `status` (the client left, its deadline passed, it stopped reading): nothing more is answered
  // and the work stops at its next check. Pump: after every event, with the lock, which it
  // releases.
  virtual void MessageLocked() = 0;
  virtual void InputEndedLocked() = 0;
  virtual void WrittenLocked(bool ok) = 0;
  virtual void StopLocked(const absl::Status& status) = 0;
  virtual void Pump(std::unique_lock<std::mutex> lock) = 0;

  // The stream's first unit of work starts: the call's queue time ends (once).
  void MarkStartedLocked() {
    if (started_) return;
    call_.MarkStarted();
    started_ = true;
  }

  // Issues the next read unless one is pending or the input ended.
  void ReadNextLocked() {
    if (reading_ || input_done_) return;
    reading_ = true;
    this->StartRead(&request_);
  }

  // Ends the call with `status`: the bytes counted, the outcome recorded (CallScope::Complete),
  // then Finish outside the lock. Pump's last step, once nothing is running or being written;
  // OnDone may delete `this` right after.
  void FinishLocked(std::unique_lock<std::mutex> lock, const absl::Status& status) {
    finished_ = true;
    service_->metrics().AddBytes(received_bytes_, sent_bytes_);
    const grpc::Status sent = call_.Complete(status);
    lock.unlock();
    this->Finish(sent);
  }

  ImagingService* const service_;
  grpc::CallbackServerContext* const ctx_;
  CancelToken cancel_;  // the stream's own checks (CallScope::CheckAlive)
  // When the stream began: MarkClientGone measures the deadline's budget from here.
  const std::chrono::system_clock::time_point began_ = std::chrono::system_clock::now();
  std::mutex mu_;
  CallScope call_;  // times() guarded by mu_
  Request request_;
  // Guarded by mu_.
  bool reading_ = false;
  bool writing_ = false;
  bool input_done_ = false;
  bool finished_ = false;
  std::int64_t received_bytes_ = 0;
  std::int64_t sent_bytes_ = 0;

 private:
  bool started_ = false;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_STREAM_REACTOR_H_
