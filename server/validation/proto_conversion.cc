#include "server/validation/proto_conversion.h"

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {

void SetImageHeader(const ImageView& view, v1::Image* image) {
  image->set_pixel_type(PixelTypeToProto(view.type));
  image->set_width(static_cast<std::uint32_t>(view.extent.width));
  image->set_height(static_cast<std::uint32_t>(view.extent.height));
  image->set_depth(view.extent.depth > 1 ? static_cast<std::uint32_t>(view.extent.depth) : 0);
  image->set_channels(static_cast<std::uint32_t>(view.channels));
}

absl::StatusOr<Connectivity> ConnectivityFromProto(int value, absl::string_view field) {
  switch (value) {
    case v1::CONNECTIVITY_UNSPECIFIED:
      return Connectivity::kDefault;
    case v1::CONNECTIVITY_4:
      return Connectivity::k4;
    case v1::CONNECTIVITY_8:
      return Connectivity::k8;
    case v1::CONNECTIVITY_6:
      return Connectivity::k6;
    case v1::CONNECTIVITY_18:
      return Connectivity::k18;
    case v1::CONNECTIVITY_26:
      return Connectivity::k26;
    default:
      break;
  }
  return InvalidFieldError(
      ErrorReason::kUnknownEnumValue, field,
      absl::StrCat("unknown value ", value, " (4 or 8 in 2D, 6, 18 or 26 in 3D)"));
}

}  // namespace cuimg
