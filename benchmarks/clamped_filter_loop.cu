#include "clamped_filter_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "cuimg/common/cuda_status.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"

namespace cuimg::bench {
namespace {

constexpr int kPassesPerCheck = 16;

// One pass: out = clamp(best of r over the neighbourhood); changed[pass % 16] = 1 if any pixel
// moved.
template <typename T, bool kDilate>
__global__ void PassKernel(const T* r, const T* mask, T* out, std::int64_t w, std::int64_t h,
                           std::int64_t d, int max_nonzero, int* changed) {
  const std::int64_t n = w * h * d;
  bool moved = false;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t x = i % w, y = i / w % h, z = i / (w * h);
    T v = r[i];
    for (int dz = d > 1 ? -1 : 0; dz <= (d > 1 ? 1 : 0); ++dz) {
      for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
          const int nonzero = (dx != 0) + (dy != 0) + (dz != 0);
          if (nonzero == 0 || nonzero > max_nonzero) continue;
          const std::int64_t xx = x + dx, yy = y + dy, zz = z + dz;
          if (xx < 0 || yy < 0 || zz < 0 || xx >= w || yy >= h || zz >= d) continue;
          const T u = r[(zz * h + yy) * w + xx];
          v = kDilate ? (u > v ? u : v) : (u < v ? u : v);
        }
      }
    }
    const T g = mask[i];
    v = kDilate ? (g < v ? g : v) : (g > v ? g : v);
    moved |= v != r[i];
    out[i] = v;
  }
  if (__any_sync(~0u, moved) && (threadIdx.x & 31) == 0) *changed = 1;
}

template <typename T>
absl::StatusOr<LoopResult> Loop(const Extent& e, bool dilate, int max_nonzero, const T* mask, T* r,
                                T* scratch, int max_passes, double max_seconds,
                                cudaStream_t stream) {
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer flags, DeviceBuffer::Allocate(kPassesPerCheck * sizeof(int)));
  const std::int64_t n = e.Pixels();
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 1 << 16));
  LoopResult result;
  T* bufs[2] = {r, scratch};
  const auto start = std::chrono::steady_clock::now();
  while (result.passes < max_passes &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
             max_seconds) {
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(flags.data(), 0, kPassesPerCheck * sizeof(int), stream), "flags");
    for (int k = 0; k < kPassesPerCheck; ++k) {
      const int p = result.passes + k;
      int* flag = flags.As<int>() + k;
      if (dilate) {
        PassKernel<T, true><<<blocks, 256, 0, stream>>>(
            bufs[p % 2], mask, bufs[(p + 1) % 2], e.width, e.height, e.depth, max_nonzero, flag);
      } else {
        PassKernel<T, false><<<blocks, 256, 0, stream>>>(
            bufs[p % 2], mask, bufs[(p + 1) % 2], e.width, e.height, e.depth, max_nonzero, flag);
      }
      CUIMG_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError(), "PassKernel");
    }
    int host[kPassesPerCheck];
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(host, flags.data(), sizeof(host), cudaMemcpyDeviceToHost, stream),
        "read flags");
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "passes");
    for (int k = 0; k < kPassesPerCheck; ++k) {
      if (host[k] == 0) {
        result.passes += k + 1;
        result.converged = true;
        break;
      }
    }
    if (result.converged) break;
    result.passes += kPassesPerCheck;
  }
  // The last pass wrote bufs[passes % 2]; the passes after it changed nothing.
  if (result.passes % 2 == 1) {
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(r, scratch, n * sizeof(T), cudaMemcpyDeviceToDevice, stream), "result");
  }
  return result;
}

}  // namespace

absl::StatusOr<LoopResult> ClampedFilterLoop(PixelType type, const Extent& extent, bool dilate,
                                             Connectivity connectivity, const void* d_mask,
                                             void* d_r, void* d_scratch, int max_passes,
                                             double max_seconds, cudaStream_t stream) {
  const Connectivity c = ResolveConnectivity(connectivity, extent);
  const int max_nonzero =
      (c == Connectivity::k4 || c == Connectivity::k6) ? 1 : (c == Connectivity::k26 ? 3 : 2);
  if (type == PixelType::kU8) {
    return Loop(extent, dilate, max_nonzero, static_cast<const std::uint8_t*>(d_mask),
                static_cast<std::uint8_t*>(d_r), static_cast<std::uint8_t*>(d_scratch), max_passes,
                max_seconds, stream);
  }
  if (type == PixelType::kI16) {
    return Loop(extent, dilate, max_nonzero, static_cast<const std::int16_t*>(d_mask),
                static_cast<std::int16_t*>(d_r), static_cast<std::int16_t*>(d_scratch), max_passes,
                max_seconds, stream);
  }
  return absl::UnimplementedError("the clamped-filter loop takes u8 and i16");
}

}  // namespace cuimg::bench
