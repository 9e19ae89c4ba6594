// The segmentation steps of a MorphologyPlan on the GPU (morphology.cu runs the chain): their
// per-pixel kernels (markers, threshold) and the reconstruction that follows. Internal to
// cuimg_kernels.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_SEGMENTATION_STEPS_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_SEGMENTATION_STEPS_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/morphology_types.h"
#include "cuimg/kernels/reconstruction.h"

namespace cuimg::internal {

// True for the steps this file runs (fill_holes ... keep_largest); open_rec and close_rec after
// their element passes.
inline bool IsSegmentationOp(MorphOp op) { return op >= MorphOp::kFillHoles; }

// True for the global steps that reconstruct (all but remove_small and keep_largest, which
// label: mask_steps.h).
inline bool Reconstructs(MorphOp op) {
  return IsSegmentationOp(op) && op != MorphOp::kThreshold && op != MorphOp::kRemoveSmall &&
         op != MorphOp::kKeepLargest;
}

// The method a global step reconstructs by (open_rec, hmax, reconstruct_dilate: dilation).
ReconstructionMethod MethodOf(MorphOp op);

// One segmentation step from `src` (the chain's current image, the mask) into `dst` (not `src`),
// asynchronously on `stream` except for the reconstruction's batches of rounds (ReconstructionPlan
// synchronizes between them and looks at `cancel`). For open_rec / close_rec, `dst` holds the
// element passes' result (the marker) on entry. `d_marker`: the request's marker
// (reconstruct_*), else unused. `reconstruction`: the step's plan (Reconstructs(op)), with its
// workspace `workspace`; remove_small and keep_largest use `workspace` for the labelling
// (MaskStepWorkspaceBytes).
template <typename T>
absl::Status RunSegmentationStep(const MorphologyStep& step, const Extent& extent, const T* src,
                                 T* dst, const T* d_marker,
                                 const ReconstructionPlan* reconstruction, void* workspace,
                                 cudaStream_t stream, const CancelToken& cancel);

}  // namespace cuimg::internal

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_SEGMENTATION_STEPS_H_
