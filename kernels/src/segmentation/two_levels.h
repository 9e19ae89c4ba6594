// ReconstructionPlan's union-find route (two_levels.cu). Internal to cuimg_kernels.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_TWO_LEVELS_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_TWO_LEVELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "segmentation/reconstruction_plan.h"

namespace cuimg::seg {

// With `r` holding the clamped marker (StartValue): when `mask` and `r` hold at most two values
// between them and no NaN, writes the reconstruction into `r` (FillUnseededComponents on the
// device, TwoLevelFill's spec) and returns true; otherwise leaves `r` as it is and returns false.
// Synchronizes `stream` once (the host reads what the pass found).
template <typename T>
absl::StatusOr<bool> RunTwoLevels(const ReconstructionPlan::Impl& p, const T* mask, T* r,
                                  std::uint8_t* workspace, cudaStream_t stream);

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_TWO_LEVELS_H_
