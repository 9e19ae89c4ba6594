#include "cuimg/kernels/pyramid_types.h"

#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

std::int64_t RoundHalfAway(double v) { return static_cast<std::int64_t>(std::llround(v)); }

std::size_t AlignUp(std::size_t n) {
  return (n + kPyramidLevelAlignment - 1) / kPyramidLevelAlignment * kPyramidLevelAlignment;
}

}  // namespace

absl::Status ValidatePyramidParameters(const PyramidSpec& spec) {
  if (spec.levels < 1) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "levels",
                             absl::StrCat(spec.levels, " is not >= 1"));
  }
  if (!(std::isfinite(spec.ratio) && spec.ratio > 1.0 && spec.ratio <= kMaxPyramidRatio)) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "ratio",
                             absl::StrCat(spec.ratio, " is not in (1, ", kMaxPyramidRatio, "]"));
  }
  if (spec.min_width < 1) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "min_width",
                             absl::StrCat(spec.min_width, " is not >= 1"));
  }
  if (spec.min_height < 1) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "min_height",
                             absl::StrCat(spec.min_height, " is not >= 1"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePyramidSpec(PixelType input_type, const Extent& extent,
                                 const PyramidSpec& spec) {
  if (absl::Status s = CheckFilterPixelType(input_type, "input_type", "the pyramid"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckFilterPixelType(spec.output_type, "output_type", "the pyramid");
      !s.ok()) {
    return s;
  }
  if (extent.width < 1 || extent.height < 1 || extent.depth != 1) {
    // The image's errors name no field: the caller knows which field holds the image.
    return InvalidFieldError(ErrorReason::kUnsupportedImageShape, "",
                             absl::StrCat("extent ", extent.width, "x", extent.height, "x",
                                          extent.depth, " is not a 2D image with both sides >= 1"));
  }
  if (extent.width > (1 << 30) || extent.height > (1 << 30)) {
    return InvalidFieldError(ErrorReason::kUnsupportedImageShape, "",
                             "extent: a side exceeds 2^30");
  }
  CUIMG_RETURN_IF_ERROR(ValidatePyramidParameters(spec));
  if (spec.output_type != PixelType::kF32 && spec.output_type != input_type) {
    return InvalidFieldError(
        ErrorReason::kUnsupportedPixelType, "output_type",
        absl::StrCat(PixelTypeName(spec.output_type), " is neither F32 nor the input's ",
                     PixelTypeName(input_type)));
  }
  // The minimum that the image does not reach is at fault: the image is the caller's to keep.
  for (const auto& [field, side, min] :
       {std::tuple<const char*, int, int>{"min_width", extent.width, spec.min_width},
        {"min_height", extent.height, spec.min_height}}) {
    if (side < min) {
      return InvalidFieldError(
          ErrorReason::kValueOutOfRange, field,
          absl::StrCat(min, " exceeds the image's ", extent.width, "x", extent.height,
                       " (min_width x min_height ", spec.min_width, "x", spec.min_height,
                       "): the pyramid would have no level"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PyramidLevel>> PlanPyramidLevels(PixelType input_type,
                                                            const Extent& extent,
                                                            const PyramidSpec& spec) {
  if (absl::Status s = ValidatePyramidSpec(input_type, extent, spec); !s.ok()) return s;
  std::vector<PyramidLevel> levels;
  const std::size_t element = PixelSize(spec.output_type);
  std::size_t offset = 0;
  for (int i = 0; i < spec.levels; ++i) {
    PyramidLevel level;
    level.index = i;
    level.scale = std::pow(spec.ratio, i);
    level.width = RoundHalfAway(static_cast<double>(extent.width) / level.scale);
    level.height = RoundHalfAway(static_cast<double>(extent.height) / level.scale);
    if (level.width < spec.min_width || level.height < spec.min_height) break;
    level.offset_bytes = offset;
    level.bytes = static_cast<std::size_t>(level.width * level.height) * element;
    offset = AlignUp(offset + level.bytes);
    levels.push_back(level);
  }
  return levels;
}

std::size_t PyramidOutputBytes(const std::vector<PyramidLevel>& levels) {
  return levels.empty() ? 0 : AlignUp(levels.back().offset_bytes + levels.back().bytes);
}

double ResizeScale(std::int64_t src, std::int64_t dst) {
  const double inv_scale = static_cast<double>(dst) / static_cast<double>(src);
  return 1.0 / inv_scale;
}

}  // namespace cuimg
