// Prometheus metrics of the server, built on an injected registry so tests can read them.
// Names and units follow Prometheus conventions (seconds, bytes, _total for counters).
#ifndef CUIMG_SERVER_METRICS_H_
#define CUIMG_SERVER_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "server/backend.h"

namespace cuimg {

class ServerMetrics {
 public:
  ServerMetrics(prometheus::Registry& registry, absl::string_view version,
                absl::string_view backend);

  // Counts a finished request by RPC and status code, and records its latency by stage.
  void RecordRequest(absl::string_view rpc, absl::StatusCode code, const StageTimes& times,
                     double total_seconds);
  void AddInflight(absl::string_view rpc, int delta);
  void AddBytes(std::int64_t received, std::int64_t sent);
  void AddPixels(absl::string_view rpc, std::int64_t pixels);
  void RecordRejection(absl::string_view reason);

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Histogram>& stage_duration_;
  prometheus::Family<prometheus::Gauge>& inflight_;
  prometheus::Counter& bytes_received_;
  prometheus::Counter& bytes_sent_;
  prometheus::Family<prometheus::Counter>& pixels_;
  prometheus::Family<prometheus::Counter>& rejected_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_METRICS_H_
