// The wire's pixel types (v1::PixelType) and the kernels' (PixelType), both ways: one table for
// the server, the CLI and the benchmarks.
#ifndef CUIMG_PROTO_PIXEL_TYPE_PROTO_H_
#define CUIMG_PROTO_PIXEL_TYPE_PROTO_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/pixel_type.h"
#include "cuimg/v1/types.pb.h"

namespace cuimg {

// INVALID_ARGUMENT naming `field` for UNSPECIFIED or unknown values.
absl::StatusOr<PixelType> PixelTypeFromProto(int value, absl::string_view field);
// Every PixelType has its wire value.
v1::PixelType PixelTypeToProto(PixelType type);

}  // namespace cuimg

#endif  // CUIMG_PROTO_PIXEL_TYPE_PROTO_H_
