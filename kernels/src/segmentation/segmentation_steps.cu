// The segmentation steps' per-pixel kernels: the markers of hmax/hmin and the threshold, by the
// rules the CPU reference uses (reconstruction_rules.h), then the reconstruction
// (reconstruction.cu); remove_small and keep_largest are the labelling's (mask_steps.h).
#include "segmentation/segmentation_steps.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/mask_steps.h"
#include "segmentation/reconstruction_rules.h"

namespace cuimg::internal {
namespace {

int Blocks(std::int64_t n) {
  return static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 4096));
}

#define CUIMG_GRID_STRIDE(i, n)                                                                  \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

template <bool kDilate, typename T>
__global__ void HeightMarkerKernel(const T* in, T* out, std::int64_t n, double h) {
  CUIMG_GRID_STRIDE(i, n) { out[i] = seg::HeightMarker<kDilate>(in[i], h); }
}

template <typename T>
__global__ void ThresholdKernel(const T* in, T* out, std::int64_t n, double lo, double hi) {
  CUIMG_GRID_STRIDE(i, n) { out[i] = seg::ThresholdValue(in[i], lo, hi); }
}

#undef CUIMG_GRID_STRIDE

}  // namespace

ReconstructionMethod MethodOf(MorphOp op) {
  return op == MorphOp::kFillHoles || op == MorphOp::kReconstructErode ||
                 op == MorphOp::kCloseRec || op == MorphOp::kHMin
             ? ReconstructionMethod::kErosion
             : ReconstructionMethod::kDilation;
}

template <typename T>
absl::Status RunSegmentationStep(const MorphologyStep& step, const Extent& extent, const T* src,
                                 T* dst, const T* d_marker,
                                 const ReconstructionPlan* reconstruction, void* workspace,
                                 cudaStream_t stream, const CancelToken& cancel) {
  const std::int64_t n = extent.Pixels();
  switch (step.op) {
    case MorphOp::kThreshold:
      ThresholdKernel<<<Blocks(n), 256, 0, stream>>>(src, dst, n, step.lo, step.hi);
      CUIMG_CUDA_CHECK_LAUNCH(stream, "ThresholdKernel");
      return absl::OkStatus();
    case MorphOp::kFillHoles:
      return reconstruction->RunFillHoles(src, dst, workspace, stream, cancel);
    case MorphOp::kHMax:
      HeightMarkerKernel<true><<<Blocks(n), 256, 0, stream>>>(src, dst, n, step.h);
      CUIMG_CUDA_CHECK_LAUNCH(stream, "HeightMarkerKernel");
      break;
    case MorphOp::kHMin:
      HeightMarkerKernel<false><<<Blocks(n), 256, 0, stream>>>(src, dst, n, step.h);
      CUIMG_CUDA_CHECK_LAUNCH(stream, "HeightMarkerKernel");
      break;
    case MorphOp::kReconstructDilate:
    case MorphOp::kReconstructErode:
      CUIMG_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(dst, d_marker, n * sizeof(T), cudaMemcpyDeviceToDevice, stream),
          "copy the marker");
      break;
    case MorphOp::kOpenRec:
    case MorphOp::kCloseRec:
      break;  // the element passes wrote the marker
    case MorphOp::kRemoveSmall:
      return RemoveSmallOnDevice(PixelTypeOf<T>::value, extent, step.connectivity, step.min_voxels,
                                 src, dst, workspace, stream);
    case MorphOp::kKeepLargest:
      return KeepLargestOnDevice(PixelTypeOf<T>::value, extent, step.connectivity, src, dst,
                                 workspace, stream);
    default:
      return absl::InternalError(absl::StrCat(MorphOpName(step.op), ": not a segmentation step"));
  }
  return reconstruction->Run(src, dst, workspace, stream, cancel);
}

#define CUIMG_INSTANTIATE_SEGMENTATION_STEP(T)                                                     \
  template absl::Status RunSegmentationStep<T>(const MorphologyStep&, const Extent&, const T*, T*, \
                                               const T*, const ReconstructionPlan*, void*,         \
                                               cudaStream_t, const CancelToken&);
CUIMG_INSTANTIATE_SEGMENTATION_STEP(std::uint8_t)
CUIMG_INSTANTIATE_SEGMENTATION_STEP(std::uint16_t)
CUIMG_INSTANTIATE_SEGMENTATION_STEP(std::int16_t)
CUIMG_INSTANTIATE_SEGMENTATION_STEP(std::uint32_t)
CUIMG_INSTANTIATE_SEGMENTATION_STEP(float)
#undef CUIMG_INSTANTIATE_SEGMENTATION_STEP

}  // namespace cuimg::internal
