#include "server/validation/proto_conversion.h"

#include "absl/strings/str_cat.h"

namespace cuimg {

absl::StatusOr<PixelType> PixelTypeFromProto(int value, absl::string_view field) {
  switch (value) {
    case v1::PIXEL_TYPE_U8:
      return PixelType::kU8;
    case v1::PIXEL_TYPE_U16:
      return PixelType::kU16;
    case v1::PIXEL_TYPE_I16:
      return PixelType::kI16;
    case v1::PIXEL_TYPE_F32:
      return PixelType::kF32;
    case v1::PIXEL_TYPE_UNSPECIFIED:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": is required (PIXEL_TYPE_UNSPECIFIED)"));
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": unknown value ", value));
}

v1::PixelType PixelTypeToProto(PixelType type) {
  switch (type) {
    case PixelType::kU8:
      return v1::PIXEL_TYPE_U8;
    case PixelType::kU16:
      return v1::PIXEL_TYPE_U16;
    case PixelType::kI16:
      return v1::PIXEL_TYPE_I16;
    case PixelType::kF32:
      break;
  }
  return v1::PIXEL_TYPE_F32;
}

void SetImageHeader(const ImageView& view, v1::Image* image) {
  image->set_pixel_type(PixelTypeToProto(view.type));
  image->set_width(static_cast<std::uint32_t>(view.extent.width));
  image->set_height(static_cast<std::uint32_t>(view.extent.height));
  image->set_depth(view.extent.depth > 1 ? static_cast<std::uint32_t>(view.extent.depth) : 0);
  image->set_channels(static_cast<std::uint32_t>(view.channels));
}

}  // namespace cuimg
