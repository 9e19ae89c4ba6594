// The vocabulary of connected-component labelling and of the mask steps built on it, shared by
// the CPU references (cuimg/reference/label_reference.h) and the CUDA code
// (cuimg/kernels/label.h, mask_steps.h). LabelSpec, RegionStats and LabelResult are in
// segmentation_types.h.
//
// Definitions (both implementations follow them exactly):
// - Components are the connected sets of the foreground under the connectivity (kDefault: 4 in
//   2D, 6 in 3D). Labels are numbered 1..N in the raster order (x fastest, then y, then z) of each
//   component's first voxel, as scipy.ndimage.label numbers them; 0 is background.
// - Region statistics: `voxels`; the half-open box [begin, end) per axis (x, y, z); the centroid
//   double(sum of the coordinate) / double(voxels) per axis. With an intensity image: min and
//   max over the region's values (f32: NaN never wins, -0 orders below +0; a region of NaN only
//   has NaN), `sum` the exact sum of the values rounded once to double (integers: an exact
//   integer sum; f32: an exact fixed-point sum over the whole f32 range, so the order of
//   addition cannot matter; NaN, or +inf with -inf, gives NaN, one infinity gives it), and
//   `mean` = sum / double(voxels). Without one they are 0.
#ifndef CUIMG_KERNELS_LABEL_TYPES_H_
#define CUIMG_KERNELS_LABEL_TYPES_H_

#include <array>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/segmentation_types.h"

namespace cuimg {

// The largest image labelling takes: labels and the GPU's union-find links are 32-bit raster
// indices with the top bit free for marks.
inline constexpr std::int64_t kMaxLabelPixels = (std::int64_t{1} << 31) - 1;

// OK for an extent of 1..kMaxLabelPixels pixels (every side >= 1); else INVALID_ARGUMENT naming
// `field` (reason VALUE_OUT_OF_RANGE, or LIMIT_EXCEEDED above kMaxLabelPixels).
absl::Status ValidateLabelExtent(const Extent& extent, absl::string_view field);

// OK when `spec` suits an image of `extent`: the extent (ValidateLabelExtent, field "extent"),
// the connectivity (ValidateConnectivity, "connectivity"), a threshold of two numbers that are
// not NaN with lo <= hi ("threshold"), min_voxels >= 0 ("min_voxels"); INVALID_ARGUMENT naming
// `field` + "." + that field otherwise (`field` may be empty).
absl::Status ValidateLabelSpec(const LabelSpec& spec, const Extent& extent,
                               absl::string_view field);

// An upper bound of the number of components of any mask of `extent` under `connectivity`
// (resolved): any two pixels of an aligned pair along x (face connectivity), 2x2 square (8, 18)
// or 2x2x2 cube (26) are neighbours, so each such block holds pixels of one component at most.
// Sizes the GPU's region table.
std::int64_t MaxRegions(const Extent& extent, Connectivity connectivity);

// Binary reconstruction, the primitive of hole filling on masks: the components (under
// `connectivity`) of the set S are kept when a seed reaches them; the pixels of S in the other
// components become `fill`; every other pixel keeps its value.
// - S is the pixels in [range[0], range[1]] when `range` is set, else the non-zero pixels; NaN is
//   in neither.
// - Seeds: with `seed_border`, the pixels of S on the image's border (the first or last column,
//   row, or slice of a volume); with `seed_marker`, the pixels of S where the marker image is
//   non-zero and not NaN.
// fill_holes on a mask of 0 and v equals scipy.ndimage.binary_fill_holes with the structure of
// `connectivity` (which connects the background): range [0, 0], seed_border, fill v.
// Reconstruction by dilation of a binary marker under a 0/v mask: S the non-zero pixels,
// seed_marker, fill 0.
struct SeededFillSpec {
  Connectivity connectivity = Connectivity::kDefault;
  std::optional<std::array<double, 2>> range;
  bool seed_border = false;
  bool seed_marker = false;
  // Saturated to the pixel type (SaturateCast).
  double fill = 0;
};

// OK when `spec` suits an image of `extent` (the extent, connectivity and range rules of
// ValidateLabelSpec, the range under "range"); INVALID_ARGUMENT naming the field under `field`
// otherwise.
absl::Status ValidateSeededFillSpec(const SeededFillSpec& spec, const Extent& extent,
                                    absl::string_view field);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_LABEL_TYPES_H_
