#include "server/validation/proto_conversion.h"

#include "absl/strings/str_cat.h"

namespace cuimg {

void SetImageHeader(const ImageView& view, v1::Image* image) {
  image->set_pixel_type(PixelTypeToProto(view.type));
  image->set_width(static_cast<std::uint32_t>(view.extent.width));
  image->set_height(static_cast<std::uint32_t>(view.extent.height));
  image->set_depth(view.extent.depth > 1 ? static_cast<std::uint32_t>(view.extent.depth) : 0);
  image->set_channels(static_cast<std::uint32_t>(view.channels));
}

}  // namespace cuimg
