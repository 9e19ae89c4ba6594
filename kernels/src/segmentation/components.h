// Host launchers of the union-find phases (ccl_device.cuh) shared by LabelPlan and the mask
// steps. All asynchronous on the stream; extents are validated by the callers (1 to
// kMaxLabelPixels pixels), connectivities resolved.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_COMPONENTS_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_COMPONENTS_H_

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/label.h"
#include "cuimg/kernels/segmentation_types.h"
#include "segmentation/ccl_device.cuh"

namespace cuimg::seg {

// The set whose components are taken: pixels of `type` in `range` (as doubles), else non-zero
// (NaN never).
struct SetSpec {
  PixelType type = PixelType::kU8;
  std::optional<std::array<double, 2>> range;
};

Geometry MakeGeometry(const Extent& extent, Connectivity connectivity);
// Tiles (blocks) of the local and merge kernels; the merge is launched only for more than one.
std::uint32_t TileCount(const Extent& extent, Connectivity connectivity);
// Blocks of the segment kernels: ceil(pixels / kSegmentPixels).
std::uint32_t SegmentCount(const Extent& extent);

// Local labelling and tile merging: afterwards `d_labels` holds a forest of links per
// ccl_device.cuh (roots = the smallest index of each component). Two launches; `mark` (may be
// empty) is called after each ("local", "merge"). `d_local_roots` (may be null; zeroed, a bit a
// pixel): the tile-local roots' bits are set (ccl_phases.h: LocalWrite).
absl::Status LaunchComponents(const SetSpec& set, const Extent& extent, Connectivity connectivity,
                              const void* d_in, std::uint32_t* d_labels, cudaStream_t stream,
                              const LabelPhaseMark& mark = {},
                              std::uint32_t* d_local_roots = nullptr);

// FlattenKernel: every pixel points at its root; with `count`, roots hold r + voxels; with
// `d_segment_roots` (SegmentCount entries), the roots per segment; with `d_root_masks`
// (SegmentCount * kTileThreads entries), each 16 pixels' roots as a bit mask. One launch.
absl::Status LaunchFlatten(const Extent& extent, bool count, std::uint32_t* d_labels,
                           std::uint32_t* d_segment_roots, cudaStream_t stream,
                           std::uint16_t* d_root_masks = nullptr);

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_COMPONENTS_H_
