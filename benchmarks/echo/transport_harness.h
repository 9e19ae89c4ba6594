// What transport_bench's measurements share: the payloads (random pixels, the dilation request
// both servers get), the server's stage times from the timing trailer, the call loops (one call at
// a time; closed loops under load, blocking or on gRPC's callback API) with their statistics, and
// the JSON line each measurement prints.
#ifndef CUIMG_BENCHMARKS_ECHO_TRANSPORT_HARNESS_H_
#define CUIMG_BENCHMARKS_ECHO_TRANSPORT_HARNESS_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/string_view.h"
#include "cuimg/v1/imaging_service.pb.h"

namespace cuimg::bench {

using Clock = std::chrono::steady_clock;

// `d` in microseconds.
double Us(Clock::duration d);

// The `p` quantile (0 to 1, nearest rank) of `v`; 0 when `v` is empty.
double Percentile(std::vector<double> v, double p);

// `n` bytes from a generator seeded with `seed` (the same for the same seed); a tail of fewer than
// 8 bytes stays zero.
std::string RandomBytes(std::size_t n, std::uint64_t seed);

// A Morphology request dilating `pixels` (a w x h x depth image of `type`; depth 0 for 2D) once
// with a `size` x `size` element of `shape`.
cuimg::v1::MorphologyRequest Dilate(const std::string& pixels, int w, int h, int depth,
                                    cuimg::v1::PixelType type, cuimg::v1::ElementShape shape,
                                    int size);

// The server's stage times (µs) from the `cuimg-timing` trailer (absent or negative: 0).
struct ServerTimes {
  double queue = 0, total = 0, h2d = 0, kernel = 0, d2h = 0;
};
ServerTimes TimesOf(absl::string_view trailer);
// The trailer of a finished call.
ServerTimes TimesOf(const grpc::ClientContext& ctx);

// One call; returns false on error (printed once).
using Call = std::function<bool(int worker, ServerTimes* times)>;

// One call at a time: every call's round trip (µs) and the server's times for it.
struct Sequential {
  std::vector<double> latency_us;
  std::vector<ServerTimes> server;
  int errors = 0;
};

// Makes 200 warm-up calls, then `requests` timed ones, one at a time, as worker 0.
Sequential RunSequential(const Call& call, int requests);

struct Load {
  double rps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  // From cuimg's timing trailers (zero for the echo): waiting for a worker, and handler entry to
  // the reply (before gRPC sends it). Where a loaded call's time goes.
  double queue_p50_us = 0;
  double server_p50_us = 0;
  long errors = 0;
};

// `concurrency` threads each making blocking calls back to back (worker k is thread k); the calls
// of `seconds` after 1 s of warm-up are measured.
Load RunLoad(const Call& call, int concurrency, double seconds);

// The closed loop of RunLoad on gRPC's callback API: `concurrency` slots, each issuing its next
// call from the previous one's completion (on gRPC's threads), so no client thread blocks per
// call. `issue(slot, ctx, done)` starts one call on `ctx` and calls done(ok) when it ends.
using AsyncCall =
    std::function<void(int slot, grpc::ClientContext* ctx, std::function<void(bool ok)> done)>;
Load RunLoadCallback(const AsyncCall& issue, int concurrency, double seconds);

// Streams `messages` through a bidi call while reading on this thread; the total received bytes,
// `size` of each response.
template <typename Stream, typename Request, typename Response>
std::size_t Pump(Stream* stream, const std::vector<Request>& messages, Response* response,
                 std::size_t (*size)(const Response&)) {
  std::thread writer([&] {
    for (const Request& m : messages) {
      if (!stream->Write(m)) break;
    }
    stream->WritesDone();
  });
  std::size_t received = 0;
  while (stream->Read(response)) received += size(*response);
  writer.join();
  return received;
}

// Prints one line (a JSON object) to stdout and flushes it.
void Report(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace cuimg::bench

#endif  // CUIMG_BENCHMARKS_ECHO_TRANSPORT_HARNESS_H_
