// Pixel element types and the one runtime-type -> template dispatch used across cuimg.
#ifndef CUIMG_COMMON_PIXEL_TYPE_H_
#define CUIMG_COMMON_PIXEL_TYPE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cuimg {

// kU32 is the label type (connected-component labels, masks derived from them): only the
// segmentation code takes it. The filters (morphology, gradient, pyramid, detection) take the
// other four, which VisitPixelType dispatches; VisitAnyPixelType adds U32.
enum class PixelType { kU8, kU16, kI16, kF32, kU32 };

// Size of one element in bytes.
constexpr std::size_t PixelSize(PixelType type) {
  switch (type) {
    case PixelType::kU8:
      return 1;
    case PixelType::kU16:
    case PixelType::kI16:
      return 2;
    case PixelType::kF32:
    case PixelType::kU32:
      return 4;
  }
  return 0;
}

constexpr absl::string_view PixelTypeName(PixelType type) {
  switch (type) {
    case PixelType::kU8:
      return "u8";
    case PixelType::kU16:
      return "u16";
    case PixelType::kI16:
      return "i16";
    case PixelType::kF32:
      return "f32";
    case PixelType::kU32:
      return "u32";
  }
  return "?";
}

template <typename T>
struct PixelTypeOf;
template <>
struct PixelTypeOf<std::uint8_t> {
  static constexpr PixelType value = PixelType::kU8;
};
template <>
struct PixelTypeOf<std::uint16_t> {
  static constexpr PixelType value = PixelType::kU16;
};
template <>
struct PixelTypeOf<std::int16_t> {
  static constexpr PixelType value = PixelType::kI16;
};
template <>
struct PixelTypeOf<float> {
  static constexpr PixelType value = PixelType::kF32;
};
template <>
struct PixelTypeOf<std::uint32_t> {
  static constexpr PixelType value = PixelType::kU32;
};

// True for the types the filters take (every type but U32).
constexpr bool IsFilterPixelType(PixelType type) { return type != PixelType::kU32; }
// OK for a filter type; else INVALID_ARGUMENT (reason UNSUPPORTED_PIXEL_TYPE) naming `field` and
// `operation`. The filters' Create/validators call it, so that U32 never reaches VisitPixelType.
absl::Status CheckFilterPixelType(PixelType type, absl::string_view field,
                                  absl::string_view operation);

// Calls `fn(T{})` with T the C++ type of `type` and returns its result, for the filter types
// (u8, u16, i16, f32): the filters' kernels are instantiated for these only (their lane packing
// assumes at most 16-bit integers). Precondition: IsFilterPixelType(type); entry points refuse
// U32 first with CheckFilterPixelType (a U32 here would be read as f32: same size, so no access
// out of bounds, but wrong values). With VisitAnyPixelType, the only runtime -> compile-time
// switch: every per-type entry point goes through one of the two.
template <typename Fn>
decltype(auto) VisitPixelType(PixelType type, Fn&& fn) {
  switch (type) {
    case PixelType::kU8:
      return std::forward<Fn>(fn)(std::uint8_t{});
    case PixelType::kU16:
      return std::forward<Fn>(fn)(std::uint16_t{});
    case PixelType::kI16:
      return std::forward<Fn>(fn)(std::int16_t{});
    case PixelType::kF32:
    case PixelType::kU32:
      break;
  }
  return std::forward<Fn>(fn)(float{});
}

// As VisitPixelType over every type, U32 (std::uint32_t) included: for the segmentation code
// (labels and masks) and for type-generic host code (copies, conversions, previews).
template <typename Fn>
decltype(auto) VisitAnyPixelType(PixelType type, Fn&& fn) {
  if (type == PixelType::kU32) return std::forward<Fn>(fn)(std::uint32_t{});
  return VisitPixelType(type, std::forward<Fn>(fn));
}

// The value of `v` converted to T as OpenCV's saturate_cast does: rounded to nearest (ties to
// even) and clamped for integer T; NaN becomes 0 for integer T.
template <typename T>
T SaturateCast(double v);

// Largest and lowest values of T; infinities for float, so that "outside never wins".
template <typename T>
constexpr T PixelMax() {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::max();
  }
}
template <typename T>
constexpr T PixelLowest() {
  if constexpr (std::is_floating_point_v<T>) {
    return -std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

}  // namespace cuimg

#endif  // CUIMG_COMMON_PIXEL_TYPE_H_
