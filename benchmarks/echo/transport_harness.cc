#include "benchmarks/echo/transport_harness.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>

#include "proto/wire_contract.h"

namespace cuimg::bench {
namespace {

// After 1 s of warm-up, sets `measuring` for `seconds`; returns the seconds it was set.
double MeasureWindow(std::atomic<bool>& measuring, double seconds) {
  std::this_thread::sleep_for(std::chrono::seconds(1));
  measuring = true;
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  measuring = false;
  return Us(Clock::now() - start) * 1e-6;
}

// What one caller measured: its calls' latencies (µs) and the server's times for them.
struct CallerLog {
  std::vector<double> latency_us;
  std::vector<ServerTimes> server;
  void Add(double us, const ServerTimes& t) {
    latency_us.push_back(us);
    server.push_back(t);
  }
};

// Calls/s and percentiles over every caller's log of `elapsed` seconds.
Load Summarize(const std::vector<CallerLog>& logs, double elapsed, long errors) {
  std::vector<double> all, queue, total;
  for (const CallerLog& log : logs) {
    all.insert(all.end(), log.latency_us.begin(), log.latency_us.end());
    for (const ServerTimes& t : log.server) {
      queue.push_back(t.queue);
      total.push_back(t.total);
    }
  }
  Load out;
  out.rps = all.size() / elapsed;
  out.p50_ms = Percentile(all, 0.5) * 1e-3;
  out.p99_ms = Percentile(all, 0.99) * 1e-3;
  out.queue_p50_us = Percentile(queue, 0.5);
  out.server_p50_us = Percentile(total, 0.5);
  out.errors = errors;
  return out;
}

}  // namespace

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

std::string RandomBytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t r = rng();
    std::memcpy(&s[i], &r, 8);
  }
  return s;
}

ServerTimes TimesOf(absl::string_view trailer) {
  const cuimg::TimingTrailer t = cuimg::ParseTimingTrailer(trailer);
  auto us = [](double v) { return std::max(0.0, v); };
  return ServerTimes{us(t.queue_us), us(t.total_us), us(t.h2d_us), us(t.kernel_us), us(t.d2h_us)};
}
ServerTimes TimesOf(const grpc::ClientContext& ctx) {
  return TimesOf(cuimg::TimingTrailerText(ctx));
}

cuimg::v1::MorphologyRequest Dilate(const std::string& pixels, int w, int h, int depth,
                                    cuimg::v1::PixelType type, cuimg::v1::ElementShape shape,
                                    int size) {
  cuimg::v1::MorphologyRequest r;
  cuimg::v1::Image* image = r.mutable_input()->mutable_image();
  image->set_pixel_type(type);
  image->set_width(w);
  image->set_height(h);
  image->set_depth(depth);
  image->set_data(pixels);
  cuimg::v1::MorphologyStep* step = r.add_steps();
  step->set_op(cuimg::v1::MORPHOLOGY_OP_DILATE);
  step->mutable_element()->set_shape(shape);
  step->mutable_element()->set_width(size);
  step->mutable_element()->set_height(size);
  return r;
}

Sequential RunSequential(const Call& call, int requests) {
  Sequential out;
  for (int i = 0; i < 200; ++i) call(0, nullptr);
  for (int i = 0; i < requests; ++i) {
    ServerTimes t;
    const auto start = Clock::now();
    const bool ok = call(0, &t);
    out.latency_us.push_back(Us(Clock::now() - start));
    out.server.push_back(t);
    out.errors += !ok;
  }
  return out;
}

Load RunLoad(const Call& call, int concurrency, double seconds) {
  std::atomic<bool> measuring{false}, stop{false};
  std::vector<CallerLog> logs(concurrency);
  std::atomic<long> errors{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < concurrency; ++k) {
    threads.emplace_back([&, k] {
      while (!stop.load()) {
        ServerTimes t;
        const auto start = Clock::now();
        const bool ok = call(k, &t);
        if (measuring.load()) {
          logs[k].Add(Us(Clock::now() - start), t);
          if (!ok) ++errors;
        }
      }
    });
  }
  const double elapsed = MeasureWindow(measuring, seconds);
  stop = true;
  for (std::thread& t : threads) t.join();
  return Summarize(logs, elapsed, errors.load());
}

Load RunLoadCallback(const AsyncCall& issue, int concurrency, double seconds) {
  struct Slot {
    // The finished call's context is kept until the next one finishes: a context is not
    // destroyed inside its own completion.
    std::unique_ptr<grpc::ClientContext> ctx, retired;
    Clock::time_point start;
  };
  std::vector<Slot> slots(concurrency);
  std::vector<CallerLog> logs(concurrency);
  std::atomic<bool> measuring{false}, stop{false};
  std::atomic<long> errors{0};
  std::mutex mu;
  std::condition_variable cv;
  int active = concurrency;
  std::function<void(int)> start = [&](int k) {
    Slot& slot = slots[k];
    slot.retired = std::move(slot.ctx);
    slot.ctx = std::make_unique<grpc::ClientContext>();
    slot.start = Clock::now();
    issue(k, slot.ctx.get(), [&, k](bool ok) {
      if (measuring.load()) {
        logs[k].Add(Us(Clock::now() - slots[k].start), TimesOf(*slots[k].ctx));
        if (!ok) ++errors;
      }
      if (!stop.load()) return start(k);
      std::lock_guard<std::mutex> lock(mu);
      if (--active == 0) cv.notify_one();
    });
  };
  for (int k = 0; k < concurrency; ++k) start(k);
  const double elapsed = MeasureWindow(measuring, seconds);
  stop = true;
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return active == 0; });
  return Summarize(logs, elapsed, errors.load());
}

void Report(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace cuimg::bench
