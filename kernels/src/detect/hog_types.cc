#include "cuimg/kernels/hog_types.h"

#include <cmath>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {

int CvRound(double v) { return static_cast<int>(std::nearbyint(v)); }

absl::Status ValidateHogWindow(int width, int height) {
  for (const auto& [name, side] :
       {std::pair<const char*, int>{"window_width", width}, {"window_height", height}}) {
    if (side < kHogBlockSize || side > kMaxHogWindowSide || side % kHogCellSize != 0) {
      return InvalidFieldError(
          ErrorReason::kValueOutOfRange, name,
          absl::StrCat(side, " is not a multiple of 8 in [16, ", kMaxHogWindowSide, "]"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateHogModel(const HogModel& model) {
  if (absl::Status s = ValidateHogWindow(model.window_width, model.window_height); !s.ok()) {
    return s;
  }
  if (static_cast<int>(model.weights.size()) != model.DescriptorSize()) {
    return InvalidFieldError(
        ErrorReason::kDataSizeMismatch, "weights",
        absl::StrCat(model.weights.size(), " values, expected ", model.DescriptorSize(), " for a ",
                     model.window_width, "x", model.window_height, " window"));
  }
  for (std::size_t i = 0; i < model.weights.size(); ++i) {
    if (!std::isfinite(model.weights[i])) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange, absl::StrCat("weights[", i, "]"),
                               "is not finite");
    }
  }
  if (!std::isfinite(model.bias)) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "bias", "is not finite");
  }
  return absl::OkStatus();
}

absl::Status ValidateDetectSpec(const DetectSpec& spec) {
  if (!std::isfinite(spec.hit_threshold)) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "hit_threshold",
                             absl::StrCat(spec.hit_threshold, " is not finite"));
  }
  if (spec.win_stride < 8 || spec.win_stride > 64 || spec.win_stride % 8 != 0) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "win_stride",
                             absl::StrCat(spec.win_stride, " is not a multiple of 8 in [8, 64]"));
  }
  if (spec.padding < 0 || spec.padding > 256) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "padding",
                             absl::StrCat(spec.padding, " is not in [0, 256]"));
  }
  if (!(std::isfinite(spec.scale) && spec.scale > 1 && spec.scale <= 4)) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "scale",
                             absl::StrCat(spec.scale, " is not in (1, 4]"));
  }
  if (spec.max_levels < 1) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "max_levels",
                             absl::StrCat(spec.max_levels, " is not >= 1"));
  }
  if (spec.group_threshold < 0 || spec.group_threshold > 1000) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "group_threshold",
                             absl::StrCat(spec.group_threshold, " is not in [0, 1000]"));
  }
  if (!(std::isfinite(spec.group_eps) && spec.group_eps > 0 && spec.group_eps <= 4)) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "group_eps",
                             absl::StrCat(spec.group_eps, " is not in (0, 4]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateDetectInput(PixelType type, const Extent& extent, int channels,
                                 absl::string_view field) {
  if (type != PixelType::kU8) {
    return InvalidFieldError(ErrorReason::kUnsupportedPixelType, field,
                             absl::StrCat("is ", PixelTypeName(type), "; detection needs U8"));
  }
  if (channels != 1 && channels != 3 && channels != 4) {
    return InvalidFieldError(
        ErrorReason::kUnsupportedImageShape, field,
        absl::StrCat("has ", channels, " channels; detection needs 1 (gray), 3 (BGR) or 4 (BGRA)"));
  }
  if (extent.depth != 1) {
    return InvalidFieldError(ErrorReason::kUnsupportedImageShape, field,
                             "is a volume; detection needs a 2D image");
  }
  if (extent.width < 1 || extent.height < 1) {
    return InvalidFieldError(
        ErrorReason::kUnsupportedImageShape, field,
        absl::StrCat("is ", extent.width, "x", extent.height, "; detection needs both sides >= 1"));
  }
  return absl::OkStatus();
}

bool HitOrder(const WindowHit& a, const WindowHit& b) {
  return std::tie(a.level, a.window_y, a.window_x) < std::tie(b.level, b.window_y, b.window_x);
}

}  // namespace cuimg
