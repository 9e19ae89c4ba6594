// ReconstructionPlan's internals, shared by its kernels (reconstruction.cu) and their host
// emulation (reconstruction_emulation.cu).
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_PLAN_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_PLAN_H_

#include <cstddef>
#include <cstdint>

#include "cuimg/kernels/reconstruction.h"
#include "segmentation/reconstruction_brick.h"
#include "segmentation/reconstruction_rules.h"

namespace cuimg {

struct ReconstructionPlan::Impl {
  PixelType type = PixelType::kU8;
  Extent extent;
  bool dilate = true;
  bool volume = false;
  int max_nonzero = 1;
  std::int64_t bricks_x = 0, bricks_y = 0, bricks_z = 0;
  std::int64_t bricks = 0;
  // Workspace: a stamp per brick (the last round it was put on a worklist for), three worklists
  // (the current round's, the next one's, and one being reset), then the counters.
  std::size_t stamps_offset = 0;
  std::size_t lists_offset[3] = {};
  std::size_t counters_offset = 0;
  std::size_t workspace_bytes = 0;
};

namespace seg {

// The counters in the workspace: per worklist its length and how far the round has taken it,
// and statistics.
struct WorklistCounters {
  int count[3];
  int fetch[3];
  int busy_rounds;
  int pad;
  unsigned long long bricks_run;
};

template <typename T>
BrickArgs<T> ArgsOf(const ReconstructionPlan::Impl& p, const T* mask, T* r) {
  BrickArgs<T> a;
  a.mask = mask;
  a.r = r;
  // Create keeps every index under 2^31 (BrickIndex).
  a.width = static_cast<BrickIndex>(p.extent.width);
  a.height = static_cast<BrickIndex>(p.extent.height);
  a.depth = static_cast<BrickIndex>(p.extent.depth);
  a.bricks_x = static_cast<BrickIndex>(p.bricks_x);
  a.bricks_y = static_cast<BrickIndex>(p.bricks_y);
  a.bricks_z = static_cast<BrickIndex>(p.bricks_z);
  a.max_nonzero = p.max_nonzero;
  a.flip = !p.dilate;
  return a;
}

// The marker clamped by the mask, NaN where the mask is NaN (reconstruction_rules.h), in place:
// what every pixel holds before the first round.
template <bool kDilate, typename T>
CUIMG_SEG_HD T StartValue(T marker, T mask) {
  return FinalValue(ClampedMarker<kDilate>(marker, mask), mask);
}

}  // namespace seg
}  // namespace cuimg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_PLAN_H_
