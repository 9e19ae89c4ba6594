#include "server/observability/metrics.h"

#include "absl/status/status.h"

namespace cuimg {
namespace {

// 50 us .. 10 s: a 3x3 dilation of a small image up to a large volume on the CPU backend.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
      50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0};
  return *buckets;
}

}  // namespace

ServerMetrics::ServerMetrics(prometheus::Registry& registry, absl::string_view version,
                             absl::string_view commit, absl::string_view backend)
    : requests_(prometheus::BuildCounter()
                    .Name("cuimg_requests_total")
                    .Help("Finished requests by RPC and gRPC status code.")
                    .Register(registry)),
      duration_(prometheus::BuildHistogram()
                    .Name("cuimg_request_duration_seconds")
                    .Help("Server-side request latency, from arrival to response.")
                    .Register(registry)),
      stage_duration_(prometheus::BuildHistogram()
                          .Name("cuimg_stage_duration_seconds")
                          .Help("Server-side latency of one request stage.")
                          .Register(registry)),
      inflight_(prometheus::BuildGauge()
                    .Name("cuimg_inflight_requests")
                    .Help("Requests admitted and not yet answered.")
                    .Register(registry)),
      bytes_received_(prometheus::BuildCounter()
                          .Name("cuimg_bytes_received_total")
                          .Help("Payload bytes received in requests.")
                          .Register(registry)
                          .Add({})),
      bytes_sent_(prometheus::BuildCounter()
                      .Name("cuimg_bytes_sent_total")
                      .Help("Payload bytes sent in responses.")
                      .Register(registry)
                      .Add({})),
      pixels_(prometheus::BuildCounter()
                  .Name("cuimg_pixels_processed_total")
                  .Help("Input pixels (voxels) processed, by RPC.")
                  .Register(registry)),
      rejected_(prometheus::BuildCounter()
                    .Name("cuimg_rejected_total")
                    .Help("Calls answered with an error, by its reason: the ErrorInfo reason "
                          "sent (proto/cuimg/v1/error_reason.proto), e.g. OVERLOADED, "
                          "VALUE_OUT_OF_RANGE.")
                    .Register(registry)),
      jpeg_fallbacks_(prometheus::BuildCounter()
                          .Name("cuimg_jpeg_cpu_fallbacks_total")
                          .Help("JPEG inputs a GPU decoder left to the CPU decoder, by reason: "
                                "header (a structural fault), unsupported (progressive on the "
                                "hardware decoder, CMYK, 12-bit, ...), nvjpeg (its decode failed).")
                          .Register(registry)) {
  auto& decode = prometheus::BuildHistogram()
                     .Name("cuimg_decode_duration_seconds")
                     .Help(
                         "Decode of encoded (PNG/JPEG) inputs, by where it ran: decoder=\"gpu\" "
                         "(nvJPEG into device memory) or \"cpu\" (libpng, libjpeg-turbo).")
                     .Register(registry);
  decode_gpu_ = &decode.Add({{"decoder", "gpu"}}, LatencyBuckets());
  decode_cpu_ = &decode.Add({{"decoder", "cpu"}}, LatencyBuckets());
  fallback_header_ = &jpeg_fallbacks_.Add({{"reason", "header"}});
  fallback_unsupported_ = &jpeg_fallbacks_.Add({{"reason", "unsupported"}});
  fallback_nvjpeg_ = &jpeg_fallbacks_.Add({{"reason", "nvjpeg"}});
  prometheus::BuildGauge()
      .Name("cuimg_build_info")
      .Help("Build and runtime facts; always 1.")
      .Register(registry)
      .Add({{"version", std::string(version)},
            {"commit", std::string(commit)},
            {"backend", std::string(backend)}})
      .Set(1);
  // Its own series so that an alert on a GPU deployment serving on the CPU (--backend=auto on a
  // node without a driver) reads one label, whatever the version.
  prometheus::BuildGauge()
      .Name("cuimg_backend_info")
      .Help("The backend executing requests (backend=\"cuda\" or \"cpu\"); always 1.")
      .Register(registry)
      .Add({{"backend", std::string(backend)}})
      .Set(1);
}

const ServerMetrics::RpcSeries& ServerMetrics::Series(absl::string_view rpc) {
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = series_.find(rpc);
    if (it != series_.end()) return *it->second;
  }
  const std::string r(rpc);
  auto series = std::make_unique<RpcSeries>();
  series->ok =
      &requests_.Add({{"rpc", r}, {"code", absl::StatusCodeToString(absl::StatusCode::kOk)}});
  series->duration = &duration_.Add({{"rpc", r}}, LatencyBuckets());
  const char* const stages[] = {"queue", "decode", "h2d", "kernel", "d2h"};
  for (std::size_t i = 0; i < series->stages.size(); ++i) {
    series->stages[i] = &stage_duration_.Add({{"rpc", r}, {"stage", stages[i]}}, LatencyBuckets());
  }
  series->inflight = &inflight_.Add({{"rpc", r}});
  absl::MutexLock lock(&mu_);
  // Another thread may have added it meanwhile; both resolved the same metrics.
  return *series_.try_emplace(r, std::move(series)).first->second;
}

void ServerMetrics::RecordRequest(absl::string_view rpc, absl::StatusCode code,
                                  const StageTimes& times, double total_seconds) {
  const RpcSeries& series = Series(rpc);
  series.duration->Observe(total_seconds);
  if (times.decode_fallback != nullptr) {
    const absl::string_view reason = times.decode_fallback;
    (reason == "header"        ? fallback_header_
     : reason == "unsupported" ? fallback_unsupported_
                               : fallback_nvjpeg_)
        ->Increment();
  }
  if (times.decode_us > 0) {
    (times.decode_device >= 0 ? decode_gpu_ : decode_cpu_)->Observe(times.decode_us * 1e-6);
  }
  if (code != absl::StatusCode::kOk) {
    requests_.Add({{"rpc", std::string(rpc)}, {"code", absl::StatusCodeToString(code)}})
        .Increment();
    return;
  }
  series.ok->Increment();
  const double us[] = {times.queue_us, times.decode_us, times.h2d_us, times.kernel_us,
                       times.d2h_us};
  for (std::size_t i = 0; i < series.stages.size(); ++i) series.stages[i]->Observe(us[i] * 1e-6);
}

void ServerMetrics::AddInflight(absl::string_view rpc, int delta) {
  Series(rpc).inflight->Increment(delta);
}

void ServerMetrics::AddBytes(std::int64_t received, std::int64_t sent) {
  bytes_received_.Increment(static_cast<double>(received));
  bytes_sent_.Increment(static_cast<double>(sent));
}

void ServerMetrics::AddPixels(absl::string_view rpc, std::int64_t pixels) {
  pixels_.Add({{"rpc", std::string(rpc)}}).Increment(static_cast<double>(pixels));
}

void ServerMetrics::RecordRejection(absl::string_view reason) {
  rejected_.Add({{"reason", std::string(reason)}}).Increment();
}

}  // namespace cuimg
