#include "client/load/load_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

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

// Four decimals are more than a millisecond or microsecond figure means; the JSON stays legible.
double Round4(double v) { return std::round(v * 1e4) / 1e4; }

std::string CsvQuoted(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

// "NAME (size: calls): 1:10 4:40, mean 3.40 as the calls saw them", when there are any.
void AppendBatches(std::string* out, absl::string_view name,
                   const std::map<int, std::int64_t>& batches) {
  if (batches.empty()) return;
  std::int64_t calls = 0;
  double frames = 0;
  absl::StrAppend(out, name, " (size: calls):");
  for (const auto& [size, n] : batches) {
    absl::StrAppend(out, " ", size, ":", n);
    calls += n;
    frames += static_cast<double>(size) * n;
  }
  absl::StrAppend(out, absl::StrFormat(", mean %.2f as the calls saw them\n", frames / calls));
}

}  // namespace

LoadSummary Summarize(const std::vector<CallRecord>& records, double warmup_s, double seconds) {
  LoadSummary s;
  s.seconds = seconds;
  s.warmup_s = warmup_s;
  std::vector<double> lat, queue, decode, h2d, kernel, d2h, total;
  // Every second of the measured window has its window, calls or not: a stall shows as zeros
  // instead of vanishing. A call started right at the end may add one more.
  s.windows.resize(static_cast<std::size_t>(std::max(1.0, std::ceil(seconds - 1e-9))));
  std::vector<std::vector<double>> window_latencies(s.windows.size());
  for (const CallRecord& r : records) {
    if (r.warmup) {
      ++s.warmup_calls;
      continue;
    }
    ++s.requests;
    ++s.codes[r.code];
    s.images_per_call = std::max(s.images_per_call, r.images);
    const std::size_t second =
        static_cast<std::size_t>(std::max(0.0, std::floor(r.start_s - warmup_s)));
    if (second >= s.windows.size()) {
      s.windows.resize(second + 1);
      window_latencies.resize(second + 1);
    }
    if (r.code != "OK") {
      ++s.windows[second].errors;
      LoadSummary::Errors& e = s.errors[r.code];
      ++e.count;
      auto it = std::find_if(e.messages.begin(), e.messages.end(),
                             [&](const auto& m) { return m.first == r.message; });
      if (it != e.messages.end()) {
        ++it->second;
      } else if (e.messages.size() < kMessagesPerCode) {
        e.messages.emplace_back(r.message, 1);
      } else {
        ++e.other_messages;
      }
      continue;
    }
    ++s.ok;
    s.images += r.images - r.failed_images;
    s.failed_images += r.failed_images;
    lat.push_back(r.latency_ms);
    window_latencies[second].push_back(r.latency_ms);
    const TimingTrailer& t = r.server;
    if (t.device >= 0) ++s.devices[t.device];
    if (t.decode_batch > 0) ++s.decode_batches[t.decode_batch];
    if (t.detect_batch > 0) ++s.detect_batches[t.detect_batch];
    if (t.total_us >= 0) {
      queue.push_back(t.queue_us);
      decode.push_back(std::max(0.0, t.decode_us));  // a server without the field: no decode
      h2d.push_back(t.h2d_us);
      kernel.push_back(t.kernel_us);
      d2h.push_back(t.d2h_us);
      total.push_back(t.total_us);
    }
  }
  std::sort(lat.begin(), lat.end());
  s.throughput = seconds > 0 ? s.ok / seconds : 0;
  s.image_throughput = seconds > 0 ? s.images / seconds : 0;
  s.p50 = Percentile(lat, 0.5);
  s.p90 = Percentile(lat, 0.9);
  s.p99 = Percentile(lat, 0.99);
  s.p999 = Percentile(lat, 0.999);
  s.max = lat.empty() ? 0 : lat.back();
  double sum = 0;
  for (double v : lat) sum += v;
  s.mean = lat.empty() ? 0 : sum / lat.size();
  s.server_queue = Median(queue);
  s.server_decode = Median(decode);
  s.server_h2d = Median(h2d);
  s.server_kernel = Median(kernel);
  s.server_d2h = Median(d2h);
  s.server_total = Median(total);
  for (std::size_t i = 0; i < s.windows.size(); ++i) {
    LoadSummary::Window& w = s.windows[i];
    std::vector<double>& v = window_latencies[i];
    std::sort(v.begin(), v.end());
    w.t = static_cast<double>(i);
    w.ok = static_cast<std::int64_t>(v.size());
    w.has_latency = !v.empty();
    w.p50 = Percentile(v, 0.5);
    w.p99 = Percentile(v, 0.99);
  }
  return s;
}

nlohmann::ordered_json SummaryJson(const LoadSummary& s, const nlohmann::ordered_json& config,
                                   const nlohmann::ordered_json& context) {
  nlohmann::ordered_json j;
  j["config"] = config;
  j["context"] = context;
  j["seconds"] = Round4(s.seconds);
  j["warmup"] = {{"seconds", s.warmup_s}, {"calls", s.warmup_calls}};
  j["requests"] = s.requests;
  j["ok"] = s.ok;
  j["throughput_rps"] = std::round(s.throughput * 100) / 100;
  j["images_per_call"] = s.images_per_call;
  j["images_per_s"] = std::round(s.image_throughput * 100) / 100;
  j["failed_images"] = s.failed_images;
  j["latency_ms"] = {{"p50", Round4(s.p50)},   {"p90", Round4(s.p90)}, {"p99", Round4(s.p99)},
                     {"p999", Round4(s.p999)}, {"max", Round4(s.max)}, {"mean", Round4(s.mean)}};
  j["codes"] = nlohmann::ordered_json::object();
  for (const auto& [code, n] : s.codes) j["codes"][code] = n;
  j["errors"] = nlohmann::ordered_json::object();
  for (const auto& [code, e] : s.errors) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    for (const auto& [message, n] : e.messages) {
      messages.push_back({{"message", message}, {"count", n}});
    }
    j["errors"][code] = {
        {"count", e.count}, {"messages", messages}, {"other_messages", e.other_messages}};
  }
  j["server_us_median"] = {{"queue", Round4(s.server_queue)}, {"decode", Round4(s.server_decode)},
                           {"h2d", Round4(s.server_h2d)},     {"kernel", Round4(s.server_kernel)},
                           {"d2h", Round4(s.server_d2h)},     {"total", Round4(s.server_total)}};
  j["devices"] = nlohmann::ordered_json::object();
  for (const auto& [device, n] : s.devices) j["devices"][absl::StrCat(device)] = n;
  j["decode_batches"] = nlohmann::ordered_json::object();
  for (const auto& [size, n] : s.decode_batches) j["decode_batches"][absl::StrCat(size)] = n;
  j["detect_batches"] = nlohmann::ordered_json::object();
  for (const auto& [size, n] : s.detect_batches) j["detect_batches"][absl::StrCat(size)] = n;
  j["windows"] = nlohmann::ordered_json::array();
  for (const LoadSummary::Window& w : s.windows) {
    nlohmann::ordered_json window = {{"t", w.t}, {"ok", w.ok}, {"errors", w.errors}};
    window["p50_ms"] = w.has_latency ? nlohmann::ordered_json(Round4(w.p50)) : nullptr;
    window["p99_ms"] = w.has_latency ? nlohmann::ordered_json(Round4(w.p99)) : nullptr;
    j["windows"].push_back(std::move(window));
  }
  return j;
}

std::string SummaryText(const LoadSummary& s) {
  std::string out = absl::StrFormat("requests %d in %.1f s, %.1f ok/s, %.1f images/s", s.requests,
                                    s.seconds, s.throughput, s.image_throughput);
  if (s.images_per_call > 1) {
    absl::StrAppend(&out, absl::StrFormat(" (%d images a call", s.images_per_call));
    if (s.failed_images > 0) {
      absl::StrAppend(&out, absl::StrFormat(", %d failed alone", s.failed_images));
    }
    absl::StrAppend(&out, ")");
  }
  if (s.warmup_s > 0 || s.warmup_calls > 0) {
    absl::StrAppend(&out, absl::StrFormat(" (after a %.1f s warm-up of %d calls, not counted)",
                                          s.warmup_s, s.warmup_calls));
  }
  absl::StrAppend(&out, "\n");
  if (s.ok > 0) {
    absl::StrAppend(
        &out, absl::StrFormat("latency ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  "
                              "mean %.3f\n",
                              s.p50, s.p90, s.p99, s.p999, s.max, s.mean));
  } else {
    absl::StrAppend(&out, "latency ms: no successful calls\n");
  }
  absl::StrAppend(&out, "codes:");
  for (const auto& [code, n] : s.codes) absl::StrAppend(&out, " ", code, "=", n);
  absl::StrAppend(&out, "\n");
  for (const auto& [code, e] : s.errors) {
    absl::StrAppend(&out, "  ", code, " x", e.count, ":\n");
    for (const auto& [message, n] : e.messages) {
      absl::StrAppend(&out, absl::StrFormat("    %6d  %s\n", n, message));
    }
    if (e.other_messages > 0) {
      absl::StrAppend(&out, absl::StrFormat("    %6d  (other messages)\n", e.other_messages));
    }
  }
  if (s.ok > 0) {
    absl::StrAppend(&out, absl::StrFormat("server µs (median): queue %.1f  decode %.1f  h2d %.1f  "
                                          "kernel %.1f  d2h %.1f  total %.1f\n",
                                          s.server_queue, s.server_decode, s.server_h2d,
                                          s.server_kernel, s.server_d2h, s.server_total));
  }
  // Each call counts the batch its frame ran in: a batch of n is seen by its n calls.
  AppendBatches(&out, "server decode batches", s.decode_batches);
  AppendBatches(&out, "server HOG launch batches", s.detect_batches);
  return out;
}

std::string RecordsCsv(const std::vector<CallRecord>& records) {
  std::string out =
      "start_s,latency_ms,code,queue_us,decode_us,h2d_us,kernel_us,d2h_us,total_us,device,payload,"
      "message\n";
  for (const CallRecord& r : records) {
    if (r.warmup) continue;
    absl::StrAppend(&out,
                    absl::StrFormat("%.6f,%.4f,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d,%d,", r.start_s,
                                    r.latency_ms, r.code, r.server.queue_us, r.server.decode_us,
                                    r.server.h2d_us, r.server.kernel_us, r.server.d2h_us,
                                    r.server.total_us, r.server.device, r.payload),
                    r.message.empty() ? "" : CsvQuoted(r.message), "\n");
  }
  return out;
}

}  // namespace cuimg
