// CallScope: one RPC's lifecycle bookkeeping: in-flight gauge, stage times, the `cuimg-timing`
// trailer, the request counter/latency metrics, and an error's reason and retry hints, all
// recorded exactly once at completion.
#ifndef CUIMG_SERVER_CALL_SCOPE_H_
#define CUIMG_SERVER_CALL_SCOPE_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/cancel_token.h"
#include "server/backend/backend.h"
#include "server/observability/metrics.h"
#include "server/rpc/live_calls.h"
#include "server/state/inflight_budget.h"
#include "server/state/shared_memory_region.h"

namespace cuimg {

class DetachedResults;

class CallScope {
 public:
  CallScope(absl::string_view rpc, grpc::CallbackServerContext* ctx, ServerMetrics* metrics);
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  StageTimes& times() { return times_; }
  const std::string& rpc() const { return rpc_; }
  // The authorized caller (authorization.h); set once before the call does any work.
  void set_identity(std::string identity) { identity_ = std::move(identity); }
  const std::string& identity() const { return identity_; }
  // The call's place among the live calls (live_calls.h), given up with the scope.
  void set_hold(LiveCalls::Hold hold) { hold_ = std::move(hold); }
  grpc::CallbackServerContext* context() const { return ctx_; }
  // Where the results' inline pixels go (wire_pixels.h): set by ImagingService::Serve for every
  // image RPC, null for the others.
  void set_detached_results(DetachedResults* results) { detached_results_ = results; }
  DetachedResults* detached_results() const { return detached_results_; }
  // A shared-memory region the call reads or writes (named by request field `field`), held until
  // the call ends. Added where requests find their regions (image_input.h's FindRegion).
  // Inline so that code using it (image_input.cc) links without the rest of the scope (the
  // fuzzers build those files alone).
  void UseRegion(std::shared_ptr<const SharedMemoryRegion> region, std::string field) {
    regions_.emplace_back(std::move(region), std::move(field));
  }
  // FAILED_PRECONDITION naming the field and key when a region the call used was shrunk by its
  // client (SharedMemoryRegion::CheckIntact); checked once the call's work is done (by
  // ImagingService::Serve), since its reads and writes may then have missed the client's pages.
  absl::Status CheckSharedMemory() const;
  // The token that the call's backend work checks (backend.h); set before the work starts, it
  // must outlive the scope's use. NeverCancelled() until set.
  void set_cancel(const CancelToken* cancel) { cancel_ = cancel; }
  const CancelToken& cancel() const { return cancel_ == nullptr ? NeverCancelled() : *cancel_; }
  // The call's hold on the in-flight budget (ImagingService::Serve sets it; it must outlive the
  // call's work), for results whose size is known only once the work has run.
  void set_reservation(InflightBudget::Reservation* reservation) { reservation_ = reservation; }
  // Adds `bytes` to the call's reservation: RESOURCE_EXHAUSTED naming `field` when the budget
  // cannot take them (as Reserve refuses), FAILED_PRECONDITION when the call holds none.
  absl::Status HoldMore(std::uint64_t bytes, absl::string_view field);
  // Marks the end of queueing (the request starts executing).
  void MarkStarted();
  // CANCELLED or DEADLINE_EXCEEDED (DEADLINE_TOO_SHORT) when the client is gone or out of time,
  // UNAVAILABLE (SHUTTING_DOWN) when the token says the server is stopping; checked before and
  // between stages so no device work is done for a dead request.
  absl::Status CheckAlive() const;
  // Records metrics and the timing trailer and logs the request line; returns the status to
  // finish the RPC with. The one place a call's outcome is recorded: an error counts under its
  // reason (cuimg_rejected_total{reason}, the reason ToGrpcStatus sends), gets the retry hints
  // of the wire contract (transient: OVERLOADED; a RESOURCE_EXHAUSTED of any other reason says
  // never retry), and its request line is rate-limited per RPC and code (see
  // ReportSuppressedRequestLines). Call it once, before Finish.
  grpc::Status Complete(const absl::Status& status);

 private:
  std::string rpc_;
  grpc::CallbackServerContext* ctx_;
  ServerMetrics* metrics_;
  std::chrono::steady_clock::time_point start_;
  StageTimes times_;
  std::string identity_;
  DetachedResults* detached_results_ = nullptr;
  std::vector<std::pair<std::shared_ptr<const SharedMemoryRegion>, std::string>> regions_;
  const CancelToken* cancel_ = nullptr;
  InflightBudget::Reservation* reservation_ = nullptr;
  bool completed_ = false;
  LiveCalls::Hold hold_;
};

// `times` as the `cuimg-timing` trailer carries them, written by the wire contract
// (FormatTimingTrailer); also each DetectStream frame's timing.
std::string FormatTiming(const StageTimes& times);

// Request lines of failed calls are at most kRequestLineBurst at once, then
// kRequestLinesPerSecond, per (RPC, code): any client can cause them at will.
inline constexpr double kRequestLinesPerSecond = 5;
inline constexpr double kRequestLineBurst = 10;

// One line per (RPC, code) whose request lines were left out since the last call:
// "event=request_lines_suppressed rpc=... code=... lines=N". The server calls it every second and
// once more when it stops.
void ReportSuppressedRequestLines();

}  // namespace cuimg

#endif  // CUIMG_SERVER_CALL_SCOPE_H_
