// Shared pieces of the GPU benchmarks: event timing with warm-up, medians, rotating inputs, the
// measured copy bandwidth (for memory floors), and one JSON line per result.
#ifndef CUIMG_BENCHMARKS_BENCH_UTIL_H_
#define CUIMG_BENCHMARKS_BENCH_UTIL_H_

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"
#include "stream_hold.h"

namespace cuimg::bench {

// Long enough for any plan's host side (planning, attribute calls, up to 64 launches).
inline constexpr double kHoldUs = 2000;

struct Timing {
  double median_us = 0;
  double p10_us = 0;
  double p90_us = 0;
  int runs = 0;
};

// Calls run(i) `warmup` times then `runs` times (i counts up, for input rotation), each timed by an
// event pair on `stream` held by a spin kernel while the host enqueues (GPU time, without the
// host's submission cost; see stream_hold.h); returns order statistics of the timed runs.
inline absl::StatusOr<Timing> TimeOnStream(cudaStream_t stream, int warmup, int runs,
                                           const std::function<absl::Status(int)>& run) {
  CUIMG_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::Create());
  CUIMG_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::Create());
  for (int i = 0; i < warmup; ++i) CUIMG_RETURN_IF_ERROR(run(i));
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "warm-up");
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    CUIMG_RETURN_IF_ERROR(HoldStream(stream, kHoldUs));
    CUIMG_RETURN_IF_ERROR(start.Record(stream));
    CUIMG_RETURN_IF_ERROR(run(warmup + i));
    CUIMG_RETURN_IF_ERROR(stop.Record(stream));
    CUIMG_RETURN_IF_ERROR(stop.Synchronize());
    CUIMG_ASSIGN_OR_RETURN(float ms, CudaEvent::ElapsedMs(start, stop));
    us.push_back(ms * 1e3);
  }
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[static_cast<std::size_t>(q * (us.size() - 1) + 0.5)]; };
  return Timing{at(0.5), at(0.1), at(0.9), runs};
}

// Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written (the figure
// memory floors divide by).
inline absl::StatusOr<double> MeasureCopyBandwidth(cudaStream_t stream) {
  const std::size_t bytes = std::size_t{1} << 30;
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::Allocate(bytes));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(bytes));
  CUIMG_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(a.data(), 1, bytes, stream), "memset");
  CUIMG_ASSIGN_OR_RETURN(
      Timing t, TimeOnStream(stream, 3, 10, [&](int) -> absl::Status {
        CUIMG_CUDA_RETURN_IF_ERROR(
            cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, stream),
            "d2d copy");
        return absl::OkStatus();
      }));
  return 2.0 * bytes / (t.median_us * 1e-6);
}

inline void PrintJson(const std::string& fields) {
  std::printf("{%s}\n", fields.c_str());
  std::fflush(stdout);
}

}  // namespace cuimg::bench

#endif  // CUIMG_BENCHMARKS_BENCH_UTIL_H_
