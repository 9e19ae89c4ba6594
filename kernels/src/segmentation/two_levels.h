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

// fill_holes of a mask: when `mask` holds at most two values lo < hi and no NaN, writes the hole
// filling into `out` (the components of {mask = lo} that touch no border become hi: the
// labelling's border-seeded FillUnseededComponents, without the marker, its clamp and the
// indicator of RunTwoLevels) and returns true; otherwise writes nothing and returns false. `p`:
// a plan by erosion with the union-find route's workspace (p.two_levels). Synchronizes `stream`
// once.
template <typename T>
absl::StatusOr<bool> FillHolesOfTwoLevels(const ReconstructionPlan::Impl& p, const T* mask, T* out,
                                          std::uint8_t* workspace, cudaStream_t stream);

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_TWO_LEVELS_H_
