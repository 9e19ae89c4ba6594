// Conversions between API enums/messages and domain types that need no validation context (the
// pixel types' are proto/pixel_type_proto.h's, shared with the client).
#ifndef CUIMG_SERVER_PROTO_CONVERSION_H_
#define CUIMG_SERVER_PROTO_CONVERSION_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/segmentation_types.h"
#include "cuimg/v1/types.pb.h"
#include "proto/pixel_type_proto.h"

namespace cuimg {

// Fills `image`'s header (type, size, channels) from a view; data is left to the caller.
void SetImageHeader(const ImageView& view, v1::Image* image);

// A wire connectivity (v1::Connectivity's number); UNSPECIFIED is kDefault (face). An unknown
// value is INVALID_ARGUMENT (UNKNOWN_ENUM_VALUE) naming `field`. Whether it suits the image's
// dimensionality is ValidateConnectivity's (segmentation_types.h).
absl::StatusOr<Connectivity> ConnectivityFromProto(int value, absl::string_view field);

}  // namespace cuimg

#endif  // CUIMG_SERVER_PROTO_CONVERSION_H_
