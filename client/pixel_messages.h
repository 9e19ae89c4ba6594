// A unary image call with the pixels kept out of protobuf's copies: the client's side of
// server/rpc/wire_pixels.h. The generated stub would copy a volume into the request's string,
// serialize it into gRPC's buffers, and parse the response's pixels into a string that grows by
// doubling past 50 MB: for a 157 MB volume, 400 of the CLI's 830 ms on the CPU backend. Here the
// request's pixels go to gRPC by reference and the result's are copied once, into a buffer of the
// right size. The bytes on the wire are the generated code's, but for field order.
#ifndef CUIMG_CLIENT_PIXEL_MESSAGES_H_
#define CUIMG_CLIENT_PIXEL_MESSAGES_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "google/protobuf/message.h"

namespace cuimg {

// Serializes `request`, an image RPC's request whose field 1 is an ImageSource holding an image
// with empty data (every image RPC's `input`), as if the image's data were the `bytes` at
// `pixels` (written after the image's other fields). The pixels are not copied: gRPC reads them
// while it sends, and `owner` keeps them alive until gRPC lets go of them.
// INVALID_ARGUMENT, naming the message type, when `request` has no such input or its data is set.
absl::StatusOr<grpc::ByteBuffer> SerializeWithPixels(const google::protobuf::Message& request,
                                                     const void* pixels, std::size_t bytes,
                                                     std::shared_ptr<const void> owner);

// Parses `wire`, a response whose field 1 is an ImageResult (every image RPC's `result`), into
// `response`, with the result image's data copied once into `pixels` (sized to fit, its memory
// kept when it already has the data's size; empty when there is none) and left empty in
// `response`. When the bytes lay the result out otherwise (its
// data given twice), protobuf parses the whole message and the data is moved out of it, so the
// outcome is always protobuf's. INVALID_ARGUMENT, naming the message type, when the bytes are not
// a valid message of `response`'s type.
absl::Status ParseWithPixels(const grpc::ByteBuffer& wire, google::protobuf::Message* response,
                             Image::Storage* pixels);

// One unary call of `method` (as "/cuimg.v1.Imaging/Morphology") with the request's pixels sent
// from `pixels` (SerializeWithPixels) and the result's read into `result_pixels`
// (ParseWithPixels). `result_bytes`, the result's size when the caller knows it (else 0), has
// that buffer made ready on another thread while the call is under way. A message that cannot be
// built or read is reported as INTERNAL.
grpc::Status UnaryCallWithPixels(const std::shared_ptr<grpc::Channel>& channel,
                                 grpc::ClientContext* context, const std::string& method,
                                 const google::protobuf::Message& request, const void* pixels,
                                 std::size_t bytes, std::shared_ptr<const void> owner,
                                 std::size_t result_bytes, google::protobuf::Message* response,
                                 Image::Storage* result_pixels);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_PIXEL_MESSAGES_H_
