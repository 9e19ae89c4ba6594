// Load-test bookkeeping: one record per finished call, and the summary computed from them.
#ifndef CUIMG_CLIENT_LOAD_STATS_H_
#define CUIMG_CLIENT_LOAD_STATS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "proto/wire_contract.h"

namespace cuimg {

struct CallRecord {
  double start_s = 0;     // since the run started
  double latency_ms = 0;  // client-side round trip
  bool warmup = false;    // started during the warm-up: not in the statistics
  int payload = 0;        // which of the run's requests it sent (--input=DIR, --video)
  std::string code;       // gRPC status code name
  std::string message;    // the server's (or gRPC's) message when not OK
  // Server-side stages from the cuimg-timing trailer (µs); negative when absent.
  TimingTrailer server;
};

struct LoadSummary {
  double seconds = 0;  // measured window (after warm-up)
  double warmup_s = 0;
  std::int64_t warmup_calls = 0;  // finished calls that started during the warm-up
  std::int64_t requests = 0;
  std::int64_t ok = 0;
  double throughput = 0;  // OK responses per second
  // Client latency of OK calls, milliseconds (0 when there is none).
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, mean = 0;
  std::map<std::string, std::int64_t> codes;
  // Per failing code: a few distinct messages (truncated), each with its count; calls whose
  // message was not kept are counted in other_messages.
  struct Errors {
    std::int64_t count = 0;
    std::vector<std::pair<std::string, std::int64_t>> messages;
    std::int64_t other_messages = 0;
  };
  std::map<std::string, Errors> errors;
  // Medians of the server's stage times over OK calls, µs.
  double server_queue = 0, server_decode = 0, server_h2d = 0, server_kernel = 0, server_d2h = 0,
         server_total = 0;
  // OK calls per device the trailers named.
  std::map<int, std::int64_t> devices;
  // One window per second of the measured time, by call start, empty seconds included: OK and
  // failed calls, and p50/p99 latency (ms) of the OK ones (has_latency false when there is none).
  struct Window {
    double t = 0;
    std::int64_t ok = 0;
    std::int64_t errors = 0;
    bool has_latency = false;
    double p50 = 0, p99 = 0;
  };
  std::vector<Window> windows;
};

// Distinct messages kept per status code, and the length a message is cut to.
inline constexpr std::size_t kMessagesPerCode = 5;
inline constexpr std::size_t kMessageChars = 200;

// Summarizes the records not marked warmup; `seconds` is the measured window's length,
// `warmup_s` the warm-up's (windows count from its end).
LoadSummary Summarize(const std::vector<CallRecord>& records, double warmup_s, double seconds);
// The summary as JSON: {"config", "context", "seconds", "warmup", "requests", "ok",
// "throughput_rps", "latency_ms", "codes", "errors", "server_us_median", "devices", "windows"};
// latencies of windows without an OK call are null.
nlohmann::ordered_json SummaryJson(const LoadSummary& s, const nlohmann::ordered_json& config,
                                   const nlohmann::ordered_json& context);
// The summary for people, several lines; the errors with their messages when any failed.
std::string SummaryText(const LoadSummary& s);
// One row per measured call: start_s,latency_ms,code,queue_us,decode_us,h2d_us,kernel_us,d2h_us,
// total_us,device,payload,message (the message quoted as RFC 4180 says, empty when OK).
std::string RecordsCsv(const std::vector<CallRecord>& records);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_LOAD_STATS_H_
