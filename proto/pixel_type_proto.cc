#include "proto/pixel_type_proto.h"

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

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
    case v1::PIXEL_TYPE_U32:
      return PixelType::kU32;
    case v1::PIXEL_TYPE_UNSPECIFIED:
      return InvalidFieldError(ErrorReason::kFieldRequired, field,
                               "is required (PIXEL_TYPE_UNSPECIFIED)");
    default:
      break;
  }
  return InvalidFieldError(ErrorReason::kUnknownEnumValue, field,
                           absl::StrCat("unknown value ", value));
}

v1::PixelType PixelTypeToProto(PixelType type) {
  switch (type) {
    case PixelType::kU8:
      return v1::PIXEL_TYPE_U8;
    case PixelType::kU16:
      return v1::PIXEL_TYPE_U16;
    case PixelType::kI16:
      return v1::PIXEL_TYPE_I16;
    case PixelType::kU32:
      return v1::PIXEL_TYPE_U32;
    case PixelType::kF32:
      break;
  }
  return v1::PIXEL_TYPE_F32;
}

}  // namespace cuimg
