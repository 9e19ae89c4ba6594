#include "cuimg/kernels/label_types.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

std::string Field(absl::string_view prefix, absl::string_view name) {
  return prefix.empty() ? std::string(name) : absl::StrCat(prefix, ".", name);
}

absl::Status ValidateRange(const std::optional<std::array<double, 2>>& range,
                           const std::string& field) {
  if (!range.has_value()) return absl::OkStatus();
  const double lo = (*range)[0];
  const double hi = (*range)[1];
  if (std::isnan(lo) || std::isnan(hi) || lo > hi) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, field,
                             absl::StrCat("[", lo, ", ", hi, "] is not two numbers with lo <= hi"));
  }
  return absl::OkStatus();
}

std::int64_t Half(std::int64_t n) { return (n + 1) / 2; }

}  // namespace

absl::Status ValidateLabelExtent(const Extent& extent, absl::string_view field) {
  if (extent.width < 1 || extent.height < 1 || extent.depth < 1) {
    return InvalidFieldError(
        ErrorReason::kValueOutOfRange, field,
        absl::StrCat(extent.width, "x", extent.height, "x", extent.depth, " has a side below 1"));
  }
  // Checked per side first so that the product cannot overflow.
  if (extent.width > kMaxLabelPixels || extent.height > kMaxLabelPixels ||
      extent.depth > kMaxLabelPixels || extent.SlicePixels() > kMaxLabelPixels ||
      extent.Pixels() > kMaxLabelPixels) {
    return InvalidFieldError(ErrorReason::kLimitExceeded, field,
                             absl::StrCat(extent.width, "x", extent.height, "x", extent.depth,
                                          " has more than 2^31 - 1 pixels, the most labelling "
                                          "takes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLabelSpec(const LabelSpec& spec, const Extent& extent,
                               absl::string_view field) {
  if (absl::Status s = ValidateLabelExtent(extent, Field(field, "extent")); !s.ok()) return s;
  const std::string connectivity = Field(field, "connectivity");
  if (absl::Status s = ValidateConnectivity(spec.connectivity, extent, connectivity.c_str());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateRange(spec.threshold, Field(field, "threshold")); !s.ok()) return s;
  if (spec.min_voxels < 0) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, Field(field, "min_voxels"),
                             absl::StrCat(spec.min_voxels, " is negative"));
  }
  return absl::OkStatus();
}

std::int64_t MaxRegions(const Extent& extent, Connectivity connectivity) {
  const Extent& e = extent;
  switch (ResolveConnectivity(connectivity, extent)) {
    case Connectivity::k8:
    case Connectivity::k18:
      return Half(e.width) * Half(e.height) * e.depth;
    case Connectivity::k26:
      return Half(e.width) * Half(e.height) * Half(e.depth);
    case Connectivity::kDefault:
    case Connectivity::k4:
    case Connectivity::k6:
      break;
  }
  return Half(e.width) * e.height * e.depth;
}

absl::Status ValidateSeededFillSpec(const SeededFillSpec& spec, const Extent& extent,
                                    absl::string_view field) {
  if (absl::Status s = ValidateLabelExtent(extent, Field(field, "extent")); !s.ok()) return s;
  const std::string connectivity = Field(field, "connectivity");
  if (absl::Status s = ValidateConnectivity(spec.connectivity, extent, connectivity.c_str());
      !s.ok()) {
    return s;
  }
  return ValidateRange(spec.range, Field(field, "range"));
}

}  // namespace cuimg
