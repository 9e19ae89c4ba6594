#include "server/validation/element_radius.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

// Decimal inputs are not exact in binary: 1.75 / 0.7 is 2.4999999999999996 in double, which
// plain rounding would take to 2 where the user wrote exactly two and a half voxels.
constexpr double kHalfTolerance = 1e-9;

struct Axis {
  const char* radius_name;  // "x_mm"
  const char* extent_name;  // "width"
  double radius;
  double spacing;
};

// The extent 2k + 1 of one axis, or the error naming its field.
absl::StatusOr<int> AxisExtent(const Axis& axis, absl::string_view field, const ElementFrame& frame,
                               int max_extent) {
  const std::string radius_field = absl::StrCat(field, ".radius.", axis.radius_name);
  if (axis.radius == 0) return 1;
  if (!frame.why_no_spacing.empty()) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, radius_field,
                             absl::StrCat("an element in millimetres needs the input's spacing; ",
                                          frame.why_no_spacing));
  }
  if (axis.spacing <= 0) {
    if (frame.spacing_field.empty()) {
      return InvalidFieldError(ErrorReason::kInvalidCombination, radius_field,
                               absl::StrCat(axis.radius, " mm needs ", frame.spacing_source, ".",
                                            axis.radius_name, ", which is 0 (unknown)"));
    }
    return InvalidFieldError(ErrorReason::kFieldRequired,
                             absl::StrCat(frame.spacing_field, ".", axis.radius_name),
                             absl::StrCat("is 0 (unknown), but ", radius_field, " = ", axis.radius,
                                          " mm needs it to become voxels"));
  }
  const double ratio = axis.radius / axis.spacing;
  // Compared as doubles first: a huge ratio must not reach the integer conversion.
  const double k = std::floor(ratio + 0.5 + kHalfTolerance);
  if (!(2 * k + 1 <= max_extent)) {
    return InvalidFieldError(ErrorReason::kElementTooLarge, radius_field,
                             absl::StrCat(axis.radius, " mm at spacing ", axis.spacing, " mm is ",
                                          k, " voxels either side, extent ", 2 * k + 1,
                                          " exceeds max_element_extent ", max_extent));
  }
  return 2 * static_cast<int>(k) + 1;
}

}  // namespace

absl::StatusOr<v1::StructuringElement> ResolveElementRadius(const v1::StructuringElement& element,
                                                            absl::string_view field,
                                                            const ElementFrame& frame,
                                                            int max_extent) {
  const v1::ElementRadius& r = element.radius();
  const Axis axes[3] = {{"x_mm", "width", r.x_mm(), frame.spacing.x_mm()},
                        {"y_mm", "height", r.y_mm(), frame.spacing.y_mm()},
                        {"z_mm", "depth", r.z_mm(), frame.spacing.z_mm()}};
  for (const Axis& axis : axes) {
    if (!std::isfinite(axis.radius) || axis.radius < 0) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange,
                               absl::StrCat(field, ".radius.", axis.radius_name),
                               absl::StrCat(axis.radius, " is not finite and >= 0"));
    }
  }
  if (element.shape() == v1::ELEMENT_SHAPE_CUSTOM) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, absl::StrCat(field, ".radius"),
                             "not with ELEMENT_SHAPE_CUSTOM (its mask is in voxels)");
  }
  const std::uint32_t sizes[3] = {element.width(), element.height(), element.depth()};
  for (int i = 0; i < 3; ++i) {
    if (sizes[i] != 0) {
      return InvalidFieldError(ErrorReason::kInvalidCombination,
                               absl::StrCat(field, ".", axes[i].extent_name),
                               "must be 0 with radius (the server computes it)");
    }
  }
  if (element.has_anchor_x() || element.has_anchor_y() || element.has_anchor_z()) {
    const char* name = element.has_anchor_x()   ? "anchor_x"
                       : element.has_anchor_y() ? "anchor_y"
                                                : "anchor_z";
    return InvalidFieldError(ErrorReason::kInvalidCombination, absl::StrCat(field, ".", name),
                             "not with radius (the anchor is the centre)");
  }
  if (!element.mask().empty()) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, absl::StrCat(field, ".mask"),
                             "not with radius");
  }
  v1::StructuringElement voxels;
  voxels.set_shape(element.shape());
  int extents[3] = {1, 1, 0};
  const int axis_count = frame.volume && r.z_mm() > 0 ? 3 : 2;
  for (int i = 0; i < axis_count; ++i) {
    absl::StatusOr<int> extent = AxisExtent(axes[i], field, frame, max_extent);
    if (!extent.ok()) return extent.status();
    extents[i] = *extent;
  }
  voxels.set_width(static_cast<std::uint32_t>(extents[0]));
  voxels.set_height(static_cast<std::uint32_t>(extents[1]));
  voxels.set_depth(static_cast<std::uint32_t>(extents[2]));
  return voxels;
}

}  // namespace cuimg
