// Load-test bookkeeping: one record per finished call, and the summary computed from them.
#ifndef CUIMG_CLIENT_LOAD_STATS_H_
#define CUIMG_CLIENT_LOAD_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cuimg {

struct CallRecord {
  double start_s = 0;     // since the run started
  double latency_ms = 0;  // client-side round trip
  std::string code;       // gRPC status code name
  // Server-side stages from the cuimg-timing trailer (µs); negative when absent.
  double queue_us = -1, h2d_us = -1, kernel_us = -1, d2h_us = -1, total_us = -1;
};

struct LoadSummary {
  double seconds = 0;  // measured window (after warm-up)
  std::int64_t requests = 0;
  std::int64_t ok = 0;
  double throughput = 0;  // OK responses per second
  // Client latency of OK calls, milliseconds.
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, mean = 0;
  std::map<std::string, std::int64_t> codes;
  // Medians of the server's stage times over OK calls, µs.
  double server_queue = 0, server_h2d = 0, server_kernel = 0, server_d2h = 0, server_total = 0;
  // Per-second windows: OK responses and p50/p99 latency (ms).
  struct Window {
    double t = 0;
    std::int64_t ok = 0;
    double p50 = 0, p99 = 0;
  };
  std::vector<Window> windows;
};

// Parses "queue_us=1 h2d_us=2 ..." into `record`.
void ParseTiming(const std::string& trailer, CallRecord* record);
// Records whose start_s >= warmup_s count; `seconds` is the measured window length.
LoadSummary Summarize(const std::vector<CallRecord>& records, double warmup_s, double seconds);
std::string SummaryJson(const LoadSummary& s, const std::string& config_json);
std::string SummaryText(const LoadSummary& s);
// One row per call (after warm-up): start_s,latency_ms,code,queue_us,h2d_us,kernel_us,d2h_us,total_us
std::string RecordsCsv(const std::vector<CallRecord>& records, double warmup_s);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_LOAD_STATS_H_
