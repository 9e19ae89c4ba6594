#include "client/load_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace cuimg {
namespace {

double Percentile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * (sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return Percentile(v, 0.5);
}

}  // namespace

void ParseTiming(const std::string& trailer, CallRecord* r) {
  for (absl::string_view kv : absl::StrSplit(trailer, ' ', absl::SkipEmpty())) {
    const std::pair<absl::string_view, absl::string_view> p = absl::StrSplit(kv, '=');
    double v = 0;
    if (!absl::SimpleAtod(p.second, &v)) continue;
    if (p.first == "queue_us") r->queue_us = v;
    if (p.first == "h2d_us") r->h2d_us = v;
    if (p.first == "kernel_us") r->kernel_us = v;
    if (p.first == "d2h_us") r->d2h_us = v;
    if (p.first == "total_us") r->total_us = v;
  }
}

LoadSummary Summarize(const std::vector<CallRecord>& records, double warmup_s, double seconds) {
  LoadSummary s;
  s.seconds = seconds;
  std::vector<double> lat, queue, h2d, kernel, d2h, total;
  std::map<std::int64_t, std::vector<double>> windows;
  for (const CallRecord& r : records) {
    if (r.start_s < warmup_s) continue;
    ++s.requests;
    ++s.codes[r.code];
    if (r.code != "OK") continue;
    ++s.ok;
    lat.push_back(r.latency_ms);
    windows[static_cast<std::int64_t>(r.start_s - warmup_s)].push_back(r.latency_ms);
    if (r.total_us >= 0) {
      queue.push_back(r.queue_us);
      h2d.push_back(r.h2d_us);
      kernel.push_back(r.kernel_us);
      d2h.push_back(r.d2h_us);
      total.push_back(r.total_us);
    }
  }
  std::sort(lat.begin(), lat.end());
  s.throughput = seconds > 0 ? s.ok / seconds : 0;
  s.p50 = Percentile(lat, 0.5);
  s.p90 = Percentile(lat, 0.9);
  s.p99 = Percentile(lat, 0.99);
  s.p999 = Percentile(lat, 0.999);
  s.max = lat.empty() ? 0 : lat.back();
  double sum = 0;
  for (double v : lat) sum += v;
  s.mean = lat.empty() ? 0 : sum / lat.size();
  s.server_queue = Median(queue);
  s.server_h2d = Median(h2d);
  s.server_kernel = Median(kernel);
  s.server_d2h = Median(d2h);
  s.server_total = Median(total);
  for (auto& [second, v] : windows) {
    std::sort(v.begin(), v.end());
    s.windows.push_back(LoadSummary::Window{static_cast<double>(second),
                                            static_cast<std::int64_t>(v.size()),
                                            Percentile(v, 0.5), Percentile(v, 0.99)});
  }
  return s;
}

std::string SummaryJson(const LoadSummary& s, const std::string& config_json) {
  std::string codes;
  for (const auto& [code, n] : s.codes) {
    absl::StrAppend(&codes, codes.empty() ? "" : ",", "\"", code, "\":", n);
  }
  std::string windows;
  for (const auto& w : s.windows) {
    absl::StrAppend(&windows, windows.empty() ? "" : ",",
                    absl::StrFormat(R"({"t":%.0f,"ok":%d,"p50_ms":%.4f,"p99_ms":%.4f})", w.t, w.ok,
                                    w.p50, w.p99));
  }
  return absl::StrFormat(
      R"({"config":%s,"seconds":%.3f,"requests":%d,"ok":%d,"throughput_rps":%.2f,)"
      R"("latency_ms":{"p50":%.4f,"p90":%.4f,"p99":%.4f,"p999":%.4f,"max":%.4f,"mean":%.4f},)"
      R"("codes":{%s},"server_us_median":{"queue":%.1f,"h2d":%.1f,"kernel":%.1f,"d2h":%.1f,)"
      R"("total":%.1f},"windows":[%s]})",
      config_json, s.seconds, s.requests, s.ok, s.throughput, s.p50, s.p90, s.p99, s.p999, s.max,
      s.mean, codes, s.server_queue, s.server_h2d, s.server_kernel, s.server_d2h, s.server_total,
      windows);
}

std::string SummaryText(const LoadSummary& s) {
  std::string codes;
  for (const auto& [code, n] : s.codes) absl::StrAppend(&codes, " ", code, "=", n);
  return absl::StrFormat(
      "requests %d in %.1f s, %.1f ok/s\n"
      "latency ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f\n"
      "codes:%s\n"
      "server µs (median): queue %.1f  h2d %.1f  kernel %.1f  d2h %.1f  total %.1f\n",
      s.requests, s.seconds, s.throughput, s.p50, s.p90, s.p99, s.p999, s.max, s.mean, codes,
      s.server_queue, s.server_h2d, s.server_kernel, s.server_d2h, s.server_total);
}

std::string RecordsCsv(const std::vector<CallRecord>& records, double warmup_s) {
  std::string out = "start_s,latency_ms,code,queue_us,h2d_us,kernel_us,d2h_us,total_us\n";
  for (const CallRecord& r : records) {
    if (r.start_s < warmup_s) continue;
    absl::StrAppend(&out, absl::StrFormat("%.6f,%.4f,%s,%.1f,%.1f,%.1f,%.1f,%.1f\n", r.start_s,
                                          r.latency_ms, r.code, r.queue_us, r.h2d_us, r.kernel_us,
                                          r.d2h_us, r.total_us));
  }
  return out;
}

}  // namespace cuimg
