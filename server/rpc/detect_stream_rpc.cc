// DetectStream: DetectPedestrians on a sequence of frames over one bidirectional stream. Each frame
// passes through the unary call's steps (ImagingService::ValidateDetect, AdmitDetect, RunDetect)
// as soon as it arrives, on the work queue, so several frames of one stream run at once: on the
// CUDA backend each worker leases its own CUDA stream, which is how frame k+1's decode and copies
// overlap frame k's kernels. Results go back in the order the frames came. A stream holds at most
// --stream_frames_in_flight frames (received and not yet answered); at that bound it stops
// reading, so gRPC flow control holds back a client that sends faster than the server works or
// does not read.
#include <chrono>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "server/rpc/imaging_service.h"
#include "server/rpc/stream_reactor.h"
#include "server/security/untrusted_text.h"

namespace cuimg {
namespace {

// DetectFrame.id, as the proto documents.
constexpr std::size_t kMaxFrameIdBytes = 128;
// The per-frame series in the metrics (requests, stage latencies, and frames held in flight).
constexpr char kFrameRpc[] = "DetectStreamFrame";

// One frame from its arrival until its result is sent (or the stream ends).
struct FrameTask {
  FrameTask(grpc::CallbackServerContext* ctx, ServerMetrics* metrics, std::uint64_t index,
            const std::atomic<bool>* hard_stop)
      : index(index),
        cancel(CancelToken::SteadyDeadline(ctx->deadline()), hard_stop),
        call(kFrameRpc, ctx, metrics) {
    call.set_cancel(&cancel);
  }

  const std::uint64_t index;
  std::string id;  // DetectFrame.id
  const std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();
  v1::DetectFrame message;  // the job's views point into it; emptied once the frame has run
  DetectJob job;
  // Its own token, so a failed frame stops the frames after it and not those before.
  CancelToken cancel;
  // The frame's identity, stage times and regions; its in-flight gauge counts the frames that
  // servers hold (`cuimg_inflight_requests{rpc="DetectStreamFrame"}`).
  CallScope call;
  InflightBudget::Reservation held;
  v1::DetectFrameResult result;
  bool done = false;  // ran (or was skipped); `result` is ready when it succeeded
};

class DetectStreamReactor final : public StreamReactor<v1::DetectFrame, v1::DetectFrameResult> {
 public:
  DetectStreamReactor(ImagingService* service, WorkQueue* queue, grpc::CallbackServerContext* ctx)
      : StreamReactor("DetectStream", service, ctx), queue_(queue) {
    Begin();
  }

 private:
  // The message just read is the next frame: validated and admitted as a unary call would be,
  // then queued. A refusal ends the stream after the frames before it.
  void MessageLocked() override {
    if (!error_.ok()) return;
    auto frame =
        std::make_unique<FrameTask>(ctx_, &service_->metrics(), received_, service_->hard_stop());
    ++received_;
    frame->message.Swap(&request_);
    frame->id = frame->message.id();
    received_bytes_ += static_cast<std::int64_t>(frame->message.ByteSizeLong());
    frame->call.set_identity(call_.identity());
    if (const absl::Status status = Admit(*frame); !status.ok()) {
      FrameFailed(*frame, status);
      return;
    }
    ++running_;
    frames_.push_back(std::move(frame));
  }

  void InputEndedLocked() override {}

  void WrittenLocked(bool ok) override {
    if (!ok) return;
    FrameTask& frame = *frames_.front();
    sent_bytes_ += static_cast<std::int64_t>(frame.result.ByteSizeLong());
    frame.call.times().total_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - frame.received)
            .count();
    service_->metrics().RecordRequest(kFrameRpc, absl::StatusCode::kOk, frame.call.times(),
                                      frame.call.times().total_us * 1e-6);
    frames_.pop_front();
  }

  absl::Status Admit(FrameTask& frame) {
    const v1::DetectFrame& m = frame.message;
    if (m.id().size() > kMaxFrameIdBytes) {
      return InvalidFieldError(ErrorReason::kInvalidFormat, "id",
                               absl::StrCat(m.id().size(), " bytes; at most ", kMaxFrameIdBytes));
    }
    if (!m.has_request()) {
      return InvalidFieldError(ErrorReason::kFieldRequired, "request",
                               "is required (the frame and the parameters)");
    }
    absl::StatusOr<DetectJob> job =
        service_->ValidateDetect(m.request(), service_->options().limits, absl::nullopt);
    if (!job.ok()) return InRequest(job.status());
    frame.job = *std::move(job);
    absl::StatusOr<InflightBudget::Reservation> held =
        service_->AdmitDetect(*ctx_, &frame.job, m.request(), call_.identity(), m.ByteSizeLong());
    if (!held.ok()) return InRequest(held.status());
    frame.held = *std::move(held);
    FrameTask* task = &frame;  // owned by frames_ until sent; the stream ends after it ran
    return queue_->Submit([this, task](WorkQueue::Admission& admission) { Run(*task, admission); });
  }

  // On a work queue thread, without the lock while the backend runs.
  void Run(FrameTask& frame, WorkQueue::Admission& admission) {
    frame.call.MarkStarted();
    {
      std::lock_guard<std::mutex> lock(mu_);
      MarkStartedLocked();
    }
    // Skipped (not answered) when the stream ended or an earlier frame failed: its token says so.
    absl::Status status = frame.call.CheckAlive();
    if (status.ok()) {
      status = service_->RunDetect(frame.job, frame.call, frame.result.mutable_result());
      if (status.ok()) status = frame.call.CheckSharedMemory();
      if (!status.ok()) status = InRequest(status);
    }
    // The request's bytes go now: only the small result waits for the client.
    v1::DetectFrame().Swap(&frame.message);
    frame.held.Release();
    admission.Release();  // before Pump, which may finish the stream
    std::unique_lock<std::mutex> lock(mu_);
    --running_;
    frame.done = true;
    if (!status.ok()) {
      FrameFailed(frame, status);
    } else {
      frame.result.set_index(frame.index);
      frame.result.set_id(frame.id);
      StageTimes& t = frame.call.times();
      t.total_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                             frame.received)
                       .count();
      frame.result.set_timing(FormatTiming(t));
      StageTimes& total = call_.times();
      total.decode_us += t.decode_us;
      total.h2d_us += t.h2d_us;
      total.kernel_us += t.kernel_us;
      total.d2h_us += t.d2h_us;
      total.device = t.device;
    }
    Pump(std::move(lock));
  }

  // A unary call's error names the unary request's fields; here they sit under `request`. An
  // error about no field (the budget's, the queue's) is kept as it is.
  static absl::Status InRequest(const absl::Status& status) {
    if (ErrorFieldOf(status).empty()) return status;
    return WithFieldPrefix(status, "request.");
  }

  // Frame `frame` failed: the stream answers the frames before it, then ends with `status`
  // (naming the frame); the frames after it stop at their next check and are not answered. The
  // earliest failed frame's error wins, so the outcome does not depend on which ran first.
  void FrameFailed(const FrameTask& frame, const absl::Status& status) {
    if (frame.index >= error_index_) return;
    error_index_ = frame.index;
    error_ = WithMessageSuffix(
        status,
        absl::StrCat(" (frame ", frame.index,
                     frame.id.empty() ? "" : absl::StrCat(", id ", QuoteClientValue(frame.id)),
                     ")"));
    for (const std::unique_ptr<FrameTask>& f : frames_) {
      if (f->index > frame.index) f->cancel.Cancel();
    }
  }

  // The whole stream ends now (cancelled, out of time, or the client stopped reading): nothing
  // more is answered and every frame stops at its next check.
  void StopLocked(const absl::Status& status) override {
    if (error_.ok() || error_index_ > 0) error_ = status;
    error_index_ = 0;
    cancel_.Cancel();
    for (const std::unique_ptr<FrameTask>& f : frames_) f->cancel.Cancel();
  }

  // Moves the stream along after any event: sends the next frame's result once it is ready (in
  // order), reads on while under the bound, and finishes once nothing is outstanding. Called with
  // the lock held; releases it. Finish comes last: OnDone may delete `this` after it.
  void Pump(std::unique_lock<std::mutex> lock) override {
    if (finished_) return;
    if (!writing_ && !frames_.empty() && frames_.front()->done &&
        frames_.front()->index < error_index_) {
      writing_ = true;
      StartWrite(&frames_.front()->result);
    }
    if (error_.ok() &&
        static_cast<int>(frames_.size()) < service_->options().stream_frames_in_flight) {
      ReadNextLocked();
    }
    // Frames still to answer: those before a failed one that are not yet sent.
    const bool answering = !frames_.empty() && frames_.front()->index < error_index_;
    const bool done = error_.ok() ? input_done_ && frames_.empty() : !answering;
    if (running_ > 0 || writing_ || !done) return;
    frames_.clear();
    FinishLocked(std::move(lock), error_);
  }

  WorkQueue* const queue_;
  // Everything below is guarded by mu_.
  std::deque<std::unique_ptr<FrameTask>> frames_;  // in index order: received, not yet answered
  std::uint64_t received_ = 0;
  int running_ = 0;  // frames on the work queue
  absl::Status error_;
  // Frames from this index on are not answered (the failed frame's; 0 once the stream stopped).
  std::uint64_t error_index_ = std::numeric_limits<std::uint64_t>::max();
};

}  // namespace

grpc::ServerBidiReactor<v1::DetectFrame, v1::DetectFrameResult>* ImagingService::DetectStream(
    grpc::CallbackServerContext* ctx) {
  return new DetectStreamReactor(this, queue_, ctx);
}

}  // namespace cuimg
