// Turning client-side images into API messages and back.
#ifndef CUIMG_CLIENT_REQUEST_BUILDING_H_
#define CUIMG_CLIENT_REQUEST_BUILDING_H_

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "cuimg/v1/types.pb.h"

namespace cuimg {

v1::PixelType ToProtoPixelType(PixelType type);
// The image's header and pixels into `out`.
void ToProtoImage(const Image& image, v1::Image* out);
// A response image back to an Image; INVALID_ARGUMENT when its byte count does not match.
absl::StatusOr<Image> FromProtoImage(const v1::Image& image);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_REQUEST_BUILDING_H_
