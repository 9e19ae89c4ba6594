// Host<->device copies of request-sized pageable buffers: straight from pageable memory (what the
// server did before the staging pool) vs staged through pinned chunks (staged_copy.h), for the
// 640x480 u8 frame and the 512x512x300 i16 volume. Wall time on the host, each copy synchronized,
// median of the runs after warm-up (so the pool is warm: no cudaHostAlloc in the timed runs).
// One JSON line per size and direction: {"impl": "staging", ...}.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench_util.h"
#include "cuimg/common/pinned_staging_pool.h"
#include "cuimg/common/staged_copy.h"

namespace cuimg::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MedianUs(int warmup, int runs, const std::function<absl::Status()>& copy,
                absl::Status* status) {
  std::vector<double> us;
  for (int i = 0; i < warmup + runs && status->ok(); ++i) {
    const auto start = Clock::now();
    *status = copy();
    const double t = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (i >= warmup) us.push_back(t);
  }
  if (us.empty()) return 0;
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

absl::Status Run() {
  const std::size_t chunk = std::size_t{4} << 20;  // the server's default chunk
  PinnedStagingPool pool(std::size_t{64} << 20, chunk);
  CUIMG_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  struct Size {
    const char* name;
    std::size_t bytes;
    int runs;
  };
  for (const Size& size : {Size{"frame_640x480_u8", 640 * 480, 200},
                           Size{"volume_512x512x300_i16", std::size_t{512} * 512 * 300 * 2, 10}}) {
    std::vector<unsigned char> host(size.bytes), back(size.bytes);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 7);
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::Allocate(size.bytes));
    absl::Status status;
    auto sync = [&] { return stream.Synchronize(); };
    const double h2d_pageable = MedianUs(
        3, size.runs,
        [&]() -> absl::Status {
          CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d.data(), host.data(), size.bytes,
                                                     cudaMemcpyHostToDevice, stream.get()),
                                     "H2D");
          return sync();
        },
        &status);
    const double h2d_staged = MedianUs(
        3, size.runs,
        [&]() -> absl::Status {
          std::vector<PinnedStagingPool::Lease> keep;
          CUIMG_RETURN_IF_ERROR(
              CopyToDeviceStaged(pool, d.data(), host.data(), size.bytes, stream.get(), &keep));
          return sync();
        },
        &status);
    const double d2h_pageable = MedianUs(
        3, size.runs,
        [&]() -> absl::Status {
          CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(back.data(), d.data(), size.bytes,
                                                     cudaMemcpyDeviceToHost, stream.get()),
                                     "D2H");
          return sync();
        },
        &status);
    const double d2h_staged = MedianUs(
        3, size.runs,
        [&]() -> absl::Status {
          std::vector<PinnedStagingPool::Lease> keep;
          CUIMG_RETURN_IF_ERROR(
              CopyToHostStaged(pool, back.data(), d.data(), size.bytes, stream.get(), &keep));
          return sync();
        },
        &status);
    CUIMG_RETURN_IF_ERROR(status);
    const bool same = std::memcmp(host.data(), back.data(), size.bytes) == 0;
    const PinnedStagingPool::Stats stats = pool.stats();
    const double gb = size.bytes / 1e9;
    for (const char* dir : {"h2d", "d2h"}) {
      const bool h2d = dir[0] == 'h';
      const double pageable = h2d ? h2d_pageable : d2h_pageable;
      const double staged = h2d ? h2d_staged : d2h_staged;
      std::printf(
          "{\"impl\": \"staging\", \"workload\": \"%s\", \"direction\": \"%s\", "
          "\"bytes\": %zu, \"chunk_bytes\": %zu, \"pageable_us\": %.1f, "
          "\"staged_us\": %.1f, \"pageable_gbps\": %.2f, \"staged_gbps\": %.2f, "
          "\"speedup\": %.2f, \"round_trip_equal\": %s, \"pool_misses\": %llu, "
          "\"pool_hits\": %llu}\n",
          size.name, dir, size.bytes, chunk, pageable, staged, gb / (pageable * 1e-6),
          gb / (staged * 1e-6), pageable / staged, same ? "true" : "false",
          static_cast<unsigned long long>(stats.misses),
          static_cast<unsigned long long>(stats.hits));
    }
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace cuimg::bench

int main() {
  const absl::Status s = cuimg::bench::Run();
  if (!s.ok()) {
    std::printf("{\"impl\": \"staging\", \"error\": \"%s\"}\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}
