// Prometheus metrics of the server, built on an injected registry so tests can read them.
// Names and units follow Prometheus conventions (seconds, bytes, _total for counters).
#ifndef CUIMG_SERVER_METRICS_H_
#define CUIMG_SERVER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/observability/stage_times.h"

namespace cuimg {

class ServerMetrics {
 public:
  // cuimg_build_info carries `version`, `commit` and `backend` as labels.
  ServerMetrics(prometheus::Registry& registry, absl::string_view version, absl::string_view commit,
                absl::string_view backend);

  // Counts a finished request by RPC and status code, and records its latency by stage.
  void RecordRequest(absl::string_view rpc, absl::StatusCode code, const StageTimes& times,
                     double total_seconds);
  void AddInflight(absl::string_view rpc, int delta);
  void AddBytes(std::int64_t received, std::int64_t sent);
  void AddPixels(absl::string_view rpc, std::int64_t pixels);
  // Counts a call answered with an error under its reason (cuimg_rejected_total{reason}: the
  // ErrorInfo reason, "OVERLOADED", ...). CallScope::Complete is its one caller.
  void RecordRejection(absl::string_view reason);

 private:
  // One RPC's time series, found once: prometheus-cpp 1.0's Family::Add builds a metric (for a
  // histogram, its buckets) on every call even when the labels exist, then drops it, and a
  // request records nine of them.
  struct RpcSeries {
    prometheus::Counter* ok;  // requests with code OK
    prometheus::Histogram* duration;
    std::array<prometheus::Histogram*, 5> stages;  // queue, decode, h2d, kernel, d2h
    prometheus::Gauge* inflight;
  };
  const RpcSeries& Series(absl::string_view rpc) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<const RpcSeries>> series_ ABSL_GUARDED_BY(mu_);
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Histogram>& stage_duration_;
  prometheus::Family<prometheus::Gauge>& inflight_;
  prometheus::Counter& bytes_received_;
  prometheus::Counter& bytes_sent_;
  prometheus::Family<prometheus::Counter>& pixels_;
  prometheus::Family<prometheus::Counter>& rejected_;
  // Encoded-input decodes by where they ran ({decoder="gpu"|"cpu"}), and JPEGs a GPU decoder
  // left to the CPU by reason (StageTimes::decode_fallback): made once, as RpcSeries.
  prometheus::Histogram* decode_gpu_;
  prometheus::Histogram* decode_cpu_;
  prometheus::Family<prometheus::Counter>& jpeg_fallbacks_;
  prometheus::Counter* fallback_header_;
  prometheus::Counter* fallback_unsupported_;
  prometheus::Counter* fallback_nvjpeg_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_METRICS_H_
