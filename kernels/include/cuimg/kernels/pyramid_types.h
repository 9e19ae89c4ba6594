// The vocabulary of the bilinear image pyramid, shared by the CPU reference and the CUDA kernels:
// the request's parameters, the level list they define, and the resampling rule.
#ifndef CUIMG_KERNELS_PYRAMID_TYPES_H_
#define CUIMG_KERNELS_PYRAMID_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "cuimg/common/pixel_type.h"

namespace cuimg {

inline constexpr int kDefaultPyramidLevels = 31;
inline constexpr double kDefaultPyramidRatio = 1.05;
// The largest ratio: beyond it level 1 already skips most of the input's pixels (bilinear taps).
inline constexpr double kMaxPyramidRatio = 16;
inline constexpr int kDefaultPyramidMinSide = 8;
// Level offsets in the packed output are multiples of this many bytes.
inline constexpr std::size_t kPyramidLevelAlignment = 256;

enum class PyramidMode {
  // Every level is resampled directly from the input ("improved pyramid", paper 004).
  kFromBase,
  // Level i is resampled from level i-1, in f32 whatever the output type.
  kCascaded,
};

struct PyramidSpec {
  // Levels wanted, >= 1 (the list stops earlier at the minimum size).
  int levels = kDefaultPyramidLevels;
  // Scale between consecutive levels, in (1, kMaxPyramidRatio].
  double ratio = kDefaultPyramidRatio;
  // The list stops before the first level whose width or height would be below these (>= 1).
  int min_width = kDefaultPyramidMinSide;
  int min_height = kDefaultPyramidMinSide;
  PyramidMode mode = PyramidMode::kFromBase;
  // F32 or the input's type (integer outputs are rounded to nearest, ties to even, and saturated).
  PixelType output_type = PixelType::kF32;
};

// One level of the packed output: level i has scale ratio^i (std::pow) and size
// (round(width / scale), round(height / scale)), rounded half away from zero.
struct PyramidLevel {
  int index = 0;
  std::int64_t width = 0;
  std::int64_t height = 0;
  double scale = 1.0;            // ratio^index: input size / level size, before rounding
  std::size_t offset_bytes = 0;  // from the start of the packed output; a multiple of 256
  std::size_t bytes = 0;         // width * height * element size
};

// The rules on a spec alone: INVALID_ARGUMENT naming the field (levels, ratio, min_width,
// min_height) when levels < 1, ratio is not in (1, kMaxPyramidRatio] or a minimum side is < 1.
absl::Status ValidatePyramidParameters(const PyramidSpec& spec);

// The rules on the types, then on the input, with ValidatePyramidParameters between:
// INVALID_ARGUMENT when either type is U32 (reason UNSUPPORTED_PIXEL_TYPE, naming input_type or
// output_type), the input is not one 2D channel with both sides >= 1 (naming no field: the
// caller knows which holds the image), output_type is neither F32 nor the input type (naming
// output_type), or not even level 0 reaches the minimum size (naming min_width or min_height).
absl::Status ValidatePyramidSpec(PixelType input_type, const Extent& extent,
                                 const PyramidSpec& spec);

// The level list of a valid spec, finest first, with offsets packing the levels (in the output
// type) one after another at 256-byte boundaries. Errors of ValidatePyramidSpec otherwise.
absl::StatusOr<std::vector<PyramidLevel>> PlanPyramidLevels(PixelType input_type,
                                                            const Extent& extent,
                                                            const PyramidSpec& spec);

// Total bytes of the packed output of `levels` (the end of the last level, 256-aligned).
std::size_t PyramidOutputBytes(const std::vector<PyramidLevel>& levels);

// The OpenCV resize scale for one axis: 1 / (dst / src), computed as cv::resize does (the
// division order matters in the last bit).
double ResizeScale(std::int64_t src, std::int64_t dst);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_PYRAMID_TYPES_H_
