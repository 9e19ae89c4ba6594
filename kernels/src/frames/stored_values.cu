#include "cuimg/kernels/stored_values.h"

#include <algorithm>
#include <type_traits>

#include "cuimg/common/cuda_status.h"

namespace cuimg {
namespace {

template <typename In, typename Out>
__global__ void StoreValuesKernel(const In* in, Out* out, std::int64_t count, std::uint32_t mask,
                                  std::int32_t sign) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const std::uint32_t v = static_cast<std::uint32_t>(static_cast<std::int32_t>(in[i])) & mask;
    out[i] =
        static_cast<Out>(static_cast<std::int32_t>(v ^ static_cast<std::uint32_t>(sign)) - sign);
  }
}

template <typename In>
absl::Status Launch(const In* in, void* out, PixelType out_type, std::int64_t count,
                    std::uint32_t mask, std::int32_t sign, cudaStream_t stream) {
  constexpr int kThreads = 256;
  // A grid-stride loop: enough blocks to fill an H100 several times over, fewer for small frames.
  const int blocks =
      static_cast<int>(std::min<std::int64_t>((count + kThreads - 1) / kThreads, 4096));
  switch (out_type) {
    case PixelType::kU8:
      StoreValuesKernel<<<blocks, kThreads, 0, stream>>>(in, static_cast<std::uint8_t*>(out), count,
                                                         mask, sign);
      break;
    case PixelType::kU16:
      StoreValuesKernel<<<blocks, kThreads, 0, stream>>>(in, static_cast<std::uint16_t*>(out),
                                                         count, mask, sign);
      break;
    case PixelType::kI16:
      StoreValuesKernel<<<blocks, kThreads, 0, stream>>>(in, static_cast<std::int16_t*>(out), count,
                                                         mask, sign);
      break;
    default:
      return absl::InvalidArgumentError("stored values are written as u8, u16 or i16");
  }
  CUIMG_CUDA_CHECK_LAUNCH(stream, "StoreValuesKernel");
  return absl::OkStatus();
}

template <typename In, typename Out>
__global__ void RescaleKernel(const In* in, Out* out, std::int64_t frame_pixels, std::int64_t total,
                              const double* slopes, const double* intercepts, int* bad_frame) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    const int f = static_cast<int>(i / frame_pixels);
    if constexpr (std::is_same_v<Out, float>) {
      out[i] = static_cast<float>(
          __dadd_rn(__dmul_rn(static_cast<double>(in[i]), slopes[f]), intercepts[f]));
    } else {
      const long long v = static_cast<long long>(in[i]) * static_cast<long long>(slopes[f]) +
                          static_cast<long long>(intercepts[f]);
      if (v < -32768 || v > 32767) {
        atomicMin(bad_frame, f);
      } else {
        out[i] = static_cast<std::int16_t>(v);
      }
    }
  }
}

template <typename In>
absl::Status LaunchRescale(const In* in, void* out, PixelType out_type, std::int64_t frame_pixels,
                           int frames, const double* slopes, const double* intercepts,
                           int* bad_frame, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const std::int64_t total = frame_pixels * frames;
  if (total <= 0) return absl::OkStatus();
  const int blocks =
      static_cast<int>(std::min<std::int64_t>((total + kThreads - 1) / kThreads, 8192));
  if (out_type == PixelType::kF32) {
    RescaleKernel<<<blocks, kThreads, 0, stream>>>(in, static_cast<float*>(out), frame_pixels,
                                                   total, slopes, intercepts, bad_frame);
  } else if (out_type == PixelType::kI16) {
    RescaleKernel<<<blocks, kThreads, 0, stream>>>(
        in, static_cast<std::int16_t*>(out), frame_pixels, total, slopes, intercepts, bad_frame);
  } else {
    return absl::InvalidArgumentError("rescaled frames are i16 or f32");
  }
  CUIMG_CUDA_CHECK_LAUNCH(stream, "RescaleKernel");
  return absl::OkStatus();
}

}  // namespace

absl::Status RescaleFramesOnDevice(const void* in, PixelType in_type, void* out, PixelType out_type,
                                   std::int64_t frame_pixels, int frames, const double* slopes,
                                   const double* intercepts, int* bad_frame, cudaStream_t stream) {
  switch (in_type) {
    case PixelType::kU8:
      return LaunchRescale(static_cast<const std::uint8_t*>(in), out, out_type, frame_pixels,
                           frames, slopes, intercepts, bad_frame, stream);
    case PixelType::kU16:
      return LaunchRescale(static_cast<const std::uint16_t*>(in), out, out_type, frame_pixels,
                           frames, slopes, intercepts, bad_frame, stream);
    case PixelType::kI16:
      return LaunchRescale(static_cast<const std::int16_t*>(in), out, out_type, frame_pixels,
                           frames, slopes, intercepts, bad_frame, stream);
    default:
      return absl::InvalidArgumentError("stored values are read as u8, u16 or i16");
  }
}

absl::Status StoreValuesOnDevice(const void* in, PixelType in_type, void* out, PixelType out_type,
                                 std::int64_t count, std::uint32_t mask, std::int32_t sign,
                                 cudaStream_t stream) {
  if (count <= 0) return absl::OkStatus();
  switch (in_type) {
    case PixelType::kU8:
      return Launch(static_cast<const std::uint8_t*>(in), out, out_type, count, mask, sign, stream);
    case PixelType::kU16:
      return Launch(static_cast<const std::uint16_t*>(in), out, out_type, count, mask, sign,
                    stream);
    case PixelType::kI16:
      return Launch(static_cast<const std::int16_t*>(in), out, out_type, count, mask, sign, stream);
    default:
      return absl::InvalidArgumentError("stored values are read as u8, u16 or i16");
  }
}

}  // namespace cuimg
