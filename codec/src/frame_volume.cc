#include "cuimg/codec/frame_volume.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_format.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

template <typename In>
absl::Status Rescale(const In* in, std::size_t count, double slope, double intercept,
                     PixelType out_type, void* out, absl::string_view field) {
  if (out_type == PixelType::kF32) {
    auto* o = static_cast<float*>(out);
    for (std::size_t i = 0; i < count; ++i) {
      o[i] = static_cast<float>(static_cast<double>(in[i]) * slope + intercept);
    }
    return absl::OkStatus();
  }
  const auto s = static_cast<std::int64_t>(slope), b = static_cast<std::int64_t>(intercept);
  auto* o = static_cast<std::int16_t*>(out);
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t v = static_cast<std::int64_t>(in[i]) * s + b;
    if (v < std::numeric_limits<std::int16_t>::min() ||
        v > std::numeric_limits<std::int16_t>::max()) {
      return InvalidFieldError(
          ErrorReason::kValueOutOfRange, field,
          absl::StrFormat("stored %d * slope %g + intercept %g = %d does not fit i16 "
                          "[-32768, 32767]; integer rescales give i16, never clamped",
                          static_cast<std::int64_t>(in[i]), slope, intercept, v));
    }
    o[i] = static_cast<std::int16_t>(v);
  }
  return absl::OkStatus();
}

bool IsInteger(double v) { return v == std::nearbyint(v); }

}  // namespace

PixelType FrameVolumeType(const FrameVolume& volume) {
  if (volume.stored_values) return DecodedPixelType(volume.description);
  for (std::size_t i = 0; i < volume.slopes.size(); ++i) {
    if (!IsInteger(volume.slopes[i]) || !IsInteger(volume.intercepts[i])) return PixelType::kF32;
  }
  return PixelType::kI16;
}

absl::Status RescaleFrame(const FrameVolume& volume, int index,
                          absl::Span<const std::uint8_t> stored, void* out,
                          absl::string_view field) {
  if (volume.stored_values) {
    std::memcpy(out, stored.data(), stored.size());
    return absl::OkStatus();
  }
  const FrameDescription& d = volume.description;
  const std::size_t count = static_cast<std::size_t>(d.rows) * d.columns;
  const double slope = volume.slopes[static_cast<std::size_t>(index)];
  const double intercept = volume.intercepts[static_cast<std::size_t>(index)];
  const PixelType out_type = FrameVolumeType(volume);
  switch (DecodedPixelType(d)) {
    case PixelType::kU8:
      return Rescale(stored.data(), count, slope, intercept, out_type, out, field);
    case PixelType::kU16:
      return Rescale(reinterpret_cast<const std::uint16_t*>(stored.data()), count, slope, intercept,
                     out_type, out, field);
    default:
      return Rescale(reinterpret_cast<const std::int16_t*>(stored.data()), count, slope, intercept,
                     out_type, out, field);
  }
}

}  // namespace cuimg
