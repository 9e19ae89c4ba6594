#include "server/rpc/call_scope.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cuimg/common/error.h"
#include "proto/wire_contract.h"
#include "server/observability/log.h"
#include "server/observability/log_throttle.h"
#include "server/rpc/status_conversion.h"
#include "server/security/authorization.h"

namespace cuimg {
namespace {

// Process-wide, as the log itself is: keys are (RPC, code), a fixed set.
LogThrottle& FailedRequestLines() {
  static LogThrottle* const throttle = new LogThrottle(kRequestLinesPerSecond, kRequestLineBurst);
  return *throttle;
}

double MicrosSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

CallScope::CallScope(absl::string_view rpc, grpc::CallbackServerContext* ctx,
                     ServerMetrics* metrics)
    : rpc_(rpc), ctx_(ctx), metrics_(metrics), start_(std::chrono::steady_clock::now()) {
  metrics_->AddInflight(rpc_, 1);
}

CallScope::~CallScope() {
  if (!completed_) metrics_->AddInflight(rpc_, -1);
}

absl::Status CallScope::CheckSharedMemory() const {
  for (const auto& [region, field] : regions_) {
    if (absl::Status intact = region->CheckIntact(field); !intact.ok()) return intact;
  }
  return absl::OkStatus();
}

void CallScope::MarkStarted() { times_.queue_us = MicrosSince(start_); }

absl::Status CallScope::HoldMore(std::uint64_t bytes, absl::string_view field) {
  if (reservation_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(field, ": the call holds no reservation"));
  }
  return reservation_->Resize(reservation_->bytes() + bytes, field);
}

absl::Status CallScope::CheckAlive() const {
  // The deadline first: gRPC also marks a call whose deadline passed as cancelled.
  if (std::chrono::system_clock::now() > ctx_->deadline()) {
    return MakeError(absl::StatusCode::kDeadlineExceeded, ErrorReason::kDeadlineTooShort, "",
                     "the request's deadline passed before execution");
  }
  if (ctx_->IsCancelled()) {
    return MakeError(absl::StatusCode::kCancelled, ErrorReason::kCancelled, "",
                     "the client cancelled the request");
  }
  return cancel().Check();
}

grpc::Status CallScope::Complete(const absl::Status& status) {
  times_.total_us = MicrosSince(start_);
  ctx_->AddTrailingMetadata(kTimingTrailer, FormatTiming(times_));
  metrics_->RecordRequest(rpc_, status.code(), times_, times_.total_us * 1e-6);
  metrics_->AddInflight(rpc_, -1);
  completed_ = true;
  const std::string reason = WireReason(status);
  if (!status.ok()) {
    metrics_->RecordRejection(reason);
    AddRetryHints(ctx_, static_cast<grpc::StatusCode>(status.code()),
                  reason == ErrorReasonName(ErrorReason::kOverloaded));
  }
  const LogLevel level = status.ok() ? LogLevel::kDebug
                         : status.code() == absl::StatusCode::kInternal ||
                                 status.code() == absl::StatusCode::kUnavailable
                             ? LogLevel::kError
                             : LogLevel::kInfo;
  if (!LogEnabled(level)) return ToGrpcStatus(status);
  const std::string code = absl::StatusCodeToString(status.code());
  // A call refused before it had an identity still names who it was (or that nobody was).
  const std::string identity = identity_.empty() ? RefusedIdentity(status) : identity_;
  const auto total_us = static_cast<std::int64_t>(times_.total_us);
  const auto kernel_us = static_cast<std::int64_t>(times_.kernel_us);
  if (status.ok()) {
    LogEvent(level, "request",
             {{"rpc", rpc_},
              {"identity", identity},
              {"code", code},
              {"total_us", total_us},
              {"kernel_us", kernel_us},
              {"device", times_.device}});
  } else if (FailedRequestLines().Admit(FormatLogFields({{"rpc", rpc_}, {"code", code}}),
                                        absl::Now())) {
    LogEvent(level, "request",
             {{"rpc", rpc_},
              {"identity", identity},
              {"code", code},
              {"reason", reason},
              {"total_us", total_us},
              {"kernel_us", kernel_us},
              {"device", times_.device},
              {"message", status.message()}});
  }
  return ToGrpcStatus(status);
}

std::string FormatTiming(const StageTimes& t) {
  return FormatTimingTrailer(TimingTrailer{t.queue_us, t.decode_us, t.h2d_us, t.kernel_us, t.d2h_us,
                                           t.total_us, t.device, t.decode_device});
}

void ReportSuppressedRequestLines() {
  for (const auto& [key, lines] : FailedRequestLines().TakeSuppressed()) {
    Log(LogLevel::kWarning, "event=request_lines_suppressed ", key, " lines=", lines);
  }
}

}  // namespace cuimg
