// Shared pieces of the GPU benchmarks: event timing with warm-up, medians, rotating inputs, the
// measured copy bandwidth (for memory floors), and one JSON line per result.
#ifndef CUIMG_BENCHMARKS_BENCH_UTIL_H_
#define CUIMG_BENCHMARKS_BENCH_UTIL_H_

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/image.h"
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

// Writes `bytes` as a C-ordered .npy array of `dtype` ("|u1", "<i2", "<u4", ...) and `shape`
// (slowest axis first) at `path`: inputs and results for the Python anchors (--dump).
inline absl::Status WriteNpy(const std::string& path, const void* bytes, std::size_t size,
                             const std::string& dtype, const std::vector<std::int64_t>& shape) {
  std::string dims;
  for (std::int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string header =
      "{'descr': '" + dtype + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic, version 1.0, a 2-byte header length; the header padded to a multiple of 64 bytes.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return absl::NotFoundError(path + ": cannot create");
  const unsigned char preamble[10] = {0x93,
                                      'N',
                                      'U',
                                      'M',
                                      'P',
                                      'Y',
                                      1,
                                      0,
                                      static_cast<unsigned char>(header.size() & 0xff),
                                      static_cast<unsigned char>(header.size() >> 8)};
  const bool ok = std::fwrite(preamble, 1, 10, f) == 10 &&
                  std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
                  std::fwrite(bytes, 1, size, f) == size;
  return std::fclose(f) == 0 && ok ? absl::OkStatus() : absl::DataLossError(path + ": short write");
}

// `image` as DIR/NAME.npy (WriteNpy); nothing when `dir` is empty.
inline absl::Status DumpImage(const std::string& dir, const std::string& name,
                              const ImageView& image) {
  if (dir.empty()) return absl::OkStatus();
  const char* dtype = "|u1";
  switch (image.type) {
    case PixelType::kU8:
      break;
    case PixelType::kU16:
      dtype = "<u2";
      break;
    case PixelType::kI16:
      dtype = "<i2";
      break;
    case PixelType::kF32:
      dtype = "<f4";
      break;
    case PixelType::kU32:
      dtype = "<u4";
      break;
  }
  const Extent& e = image.extent;
  std::vector<std::int64_t> shape{e.height, e.width};
  if (e.depth > 1) shape.insert(shape.begin(), e.depth);
  return WriteNpy(dir + "/" + name + ".npy", image.data, image.Bytes(), dtype, shape);
}

inline void PrintJson(const std::string& fields) {
  std::printf("{%s}\n", fields.c_str());
  std::fflush(stdout);
}

}  // namespace cuimg::bench

#endif  // CUIMG_BENCHMARKS_BENCH_UTIL_H_
