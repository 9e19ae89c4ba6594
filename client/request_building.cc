#include "client/request_building.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace cuimg {

v1::PixelType ToProtoPixelType(PixelType type) {
  switch (type) {
    case PixelType::kU8: return v1::PIXEL_TYPE_U8;
    case PixelType::kU16: return v1::PIXEL_TYPE_U16;
    case PixelType::kI16: return v1::PIXEL_TYPE_I16;
    case PixelType::kF32: break;
  }
  return v1::PIXEL_TYPE_F32;
}

void ToProtoImage(const Image& image, v1::Image* out) {
  out->set_pixel_type(ToProtoPixelType(image.type()));
  out->set_width(static_cast<std::uint32_t>(image.extent().width));
  out->set_height(static_cast<std::uint32_t>(image.extent().height));
  out->set_depth(image.extent().depth > 1 ? static_cast<std::uint32_t>(image.extent().depth) : 0);
  out->set_channels(static_cast<std::uint32_t>(image.channels()));
  out->set_data(reinterpret_cast<const char*>(image.bytes()), image.size_bytes());
}

absl::StatusOr<Image> FromProtoImage(const v1::Image& image) {
  PixelType type;
  switch (image.pixel_type()) {
    case v1::PIXEL_TYPE_U8: type = PixelType::kU8; break;
    case v1::PIXEL_TYPE_U16: type = PixelType::kU16; break;
    case v1::PIXEL_TYPE_I16: type = PixelType::kI16; break;
    case v1::PIXEL_TYPE_F32: type = PixelType::kF32; break;
    default: return absl::InvalidArgumentError("response: unknown pixel type");
  }
  Image out(type, Extent{image.width(), image.height(), image.depth() == 0 ? 1 : image.depth()},
            image.channels() == 0 ? 1 : static_cast<int>(image.channels()));
  if (image.data().size() != out.size_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat("response: ", image.data().size(),
                                                   " bytes, expected ", out.size_bytes()));
  }
  std::memcpy(out.bytes(), image.data().data(), out.size_bytes());
  return out;
}

}  // namespace cuimg
