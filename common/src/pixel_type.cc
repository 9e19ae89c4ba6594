#include "cuimg/common/pixel_type.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

template <typename T>
T SaturateInteger(double v) {
  if (std::isnan(v)) return T{0};
  const double r = std::nearbyint(v);  // ties to even, as cvRound
  if (r <= static_cast<double>(std::numeric_limits<T>::lowest())) {
    return std::numeric_limits<T>::lowest();
  }
  if (r >= static_cast<double>(std::numeric_limits<T>::max())) {
    return std::numeric_limits<T>::max();
  }
  return static_cast<T>(r);
}

}  // namespace

template <>
std::uint8_t SaturateCast<std::uint8_t>(double v) {
  return SaturateInteger<std::uint8_t>(v);
}
template <>
std::uint16_t SaturateCast<std::uint16_t>(double v) {
  return SaturateInteger<std::uint16_t>(v);
}
template <>
std::int16_t SaturateCast<std::int16_t>(double v) {
  return SaturateInteger<std::int16_t>(v);
}
template <>
std::uint32_t SaturateCast<std::uint32_t>(double v) {
  return SaturateInteger<std::uint32_t>(v);
}
template <>
float SaturateCast<float>(double v) {
  return static_cast<float>(v);
}

absl::Status CheckFilterPixelType(PixelType type, absl::string_view field,
                                  absl::string_view operation) {
  if (IsFilterPixelType(type)) return absl::OkStatus();
  return InvalidFieldError(
      ErrorReason::kUnsupportedPixelType, field,
      absl::StrCat(operation, " takes u8, u16, i16 or f32, not ", PixelTypeName(type),
                   " (u32 is the label type of the segmentation steps)"));
}

}  // namespace cuimg
