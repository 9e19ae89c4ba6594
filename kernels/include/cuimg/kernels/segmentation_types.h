// The vocabulary of the segmentation steps (issue 48) shared by the CPU references, the CUDA
// kernels and the server: connectivity, and the parameters of the global Morphology steps and of
// connected-component labelling. Global steps (reconstruction, hole filling, h-extrema, clean-up
// of small components) read the whole image: their result at a pixel can depend on any other
// pixel, unlike erosion and dilation.
#ifndef CUIMG_KERNELS_SEGMENTATION_TYPES_H_
#define CUIMG_KERNELS_SEGMENTATION_TYPES_H_

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "cuimg/common/image.h"

namespace cuimg {

// Which neighbours are connected: 2D images take 4 (edges) or 8 (edges and corners), 3D volumes
// 6 (faces), 18 (faces and edges) or 26 (all). The default is face connectivity: 4 in 2D, 6 in
// 3D, as scipy.ndimage.label and binary_fill_holes default to.
enum class Connectivity { kDefault = 0, k4 = 4, k8 = 8, k6 = 6, k18 = 18, k26 = 26 };

// The connectivity as used on `extent`: kDefault becomes k4 or k6 (depth 1 is 2D).
Connectivity ResolveConnectivity(Connectivity c, const Extent& extent);
// INVALID_ARGUMENT naming `field` unless `c` suits the image's dimensionality (4/8 in 2D,
// 6/18/26 in 3D, kDefault in both).
absl::Status ValidateConnectivity(Connectivity c, const Extent& extent, const char* field);

// Grey-level reconstruction of a marker under a mask (by dilation: the marker's values spread
// through the mask's pixels, never above the mask) or over it (by erosion, the dual).
enum class ReconstructionMethod { kDilation, kErosion };

// Parameters of connected-component labelling (the Label RPC, and the mask steps that label).
struct LabelSpec {
  Connectivity connectivity = Connectivity::kDefault;
  // Foreground = pixels in [lo, hi] when set; otherwise every non-zero pixel (NaN is background).
  std::optional<std::array<double, 2>> threshold;
  // Components of fewer voxels become background; labels are numbered after removing them.
  std::int64_t min_voxels = 0;
};

// One region's statistics, label k at index k - 1. Boxes are half-open, in index order
// (x, y, z): [begin, end). Centroids are means of voxel indices (x, y, z). Intensity statistics
// are set only when an intensity image was given (else 0).
struct RegionStats {
  std::int64_t voxels = 0;
  std::array<std::int64_t, 3> bbox_begin{};
  std::array<std::int64_t, 3> bbox_end{};
  std::array<double, 3> centroid{};
  double min = 0;
  double max = 0;
  double sum = 0;
  double mean = 0;
};

// Labels of an image: a U32 image of the input's extent (0 = background, regions numbered
// 1..N in the raster order of their first voxel, as scipy.ndimage.label numbers them) and one
// RegionStats per region.
struct LabelResult {
  Image labels;
  std::vector<RegionStats> regions;
};

}  // namespace cuimg

#endif  // CUIMG_KERNELS_SEGMENTATION_TYPES_H_
