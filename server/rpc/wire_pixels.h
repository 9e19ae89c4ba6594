// Pixels kept out of protobuf's copies on the image RPCs. gRPC's generated code would parse a
// request's inline image into a string (one copy), which the backend then copies into pinned
// staging (two), and would serialize a response from a zero-filled string that the backend had
// filled from staging (three more passes over the pixels). Here the request's pixels are copied
// once, from gRPC's received slices into a HostBuffer that the DMA reads, and the results are
// written by the backend into HostBuffers that gRPC sends as they are.
#ifndef CUIMG_SERVER_WIRE_PIXELS_H_
#define CUIMG_SERVER_WIRE_PIXELS_H_

#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "cuimg/v1/types.pb.h"
#include "google/protobuf/message.h"
#include "server/backend/backend.h"

namespace cuimg {

using HostBufferAllocator = std::function<std::unique_ptr<HostBuffer>(std::size_t bytes)>;

// Parses `wire`, a serialized message whose field 1 is an ImageSource (every image RPC's
// `input`), into `request`. When the ImageSource carries an inline image with pixels, and the
// message lays them out once (as every encoder does), the pixels are copied into
// allocate(size) instead of into input.image.data, which stays empty, and that buffer is
// returned; never when a later oneof member replaced the image (protobuf drops its pixels
// then). Otherwise (an encoded file, a handle, a region) the message is parsed whole and null
// is returned. A batch's `inputs` stay in the message (ParseWithDetachedInputs takes them too).
// INVALID_ARGUMENT, naming the message type, when the bytes are not a valid message of `request`'s
// type.
absl::StatusOr<std::unique_ptr<HostBuffer>> ParseWithDetachedPixels(
    const grpc::ByteBuffer& wire, const HostBufferAllocator& allocate,
    google::protobuf::Message* request);

// As above, and when the pixels are detached, `wire` is cleared and its bytes are freed as the
// pixels are copied out of them, in rounds, each round's bytes handed back to the system by the
// trimmer's thread (MallocTrimmer::TrimAfterFree): glibc would keep them resident until the next
// trim, a second copy of a volume beside its pixels and then its result. Otherwise `wire` is left
// as it is.
absl::StatusOr<std::unique_ptr<HostBuffer>> ParseWithDetachedPixels(
    grpc::ByteBuffer* wire, const HostBufferAllocator& allocate,
    google::protobuf::Message* request);

// A request's inline pixels, copied out of the received bytes into one buffer: every detached
// image's pixels one after another, in the order the message holds them. Images are the
// ImageSource `input` (field 1) and, in a batch (types.proto), each ImageSource of `inputs`
// (field 16): same-shape entries then lie as the slices of one volume.
struct DetachedInputs {
  struct Pixels {
    std::size_t offset = 0;
    std::size_t bytes = 0;
  };
  std::unique_ptr<HostBuffer> buffer;  // null when nothing was detached
  // Where `input`'s pixels are; nullopt when they were not detached (none, or the message's own).
  absl::optional<Pixels> input;
  // inputs[k]'s, for k below the size (entries past it: not detached).
  std::vector<absl::optional<Pixels>> inputs;
};

// ParseWithDetachedPixels' rules for `input`, and for each entry of `inputs` alike: the pixels of
// every inline image go to one buffer from `allocate`, unless anything on the way to any of them
// is not the plain layout (a replaced oneof member, a repeated singular field, bytes that do not
// parse), when protobuf parses the whole message and nothing is detached. `wire` is consumed as
// ParseWithDetachedPixels' second form does (the received bytes freed as they are copied).
absl::StatusOr<DetachedInputs> ParseWithDetachedInputs(grpc::ByteBuffer* wire,
                                                       const HostBufferAllocator& allocate,
                                                       google::protobuf::Message* request);
// As above, leaving `wire` as it is.
absl::StatusOr<DetachedInputs> ParseWithDetachedInputs(const grpc::ByteBuffer& wire,
                                                       const HostBufferAllocator& allocate,
                                                       google::protobuf::Message* request);

// Parses `wire` whole into `request`, as gRPC's generated code would. INVALID_ARGUMENT, naming
// the message type, when the bytes are not a valid message of `request`'s type.
absl::Status ParseMessage(const grpc::ByteBuffer& wire, google::protobuf::Message* request);

// The pixels of a response's results, written outside the message and sent from their buffers.
// Each belongs to an ImageResult anywhere in the response (a top-level field, or nested in
// repeated messages as Pyramid's levels are), or is a singular bytes field of a message in it
// (Deform's positions and normals).
class DetachedResults {
 public:
  // Where a result's pixels are.
  struct Pixels {
    std::shared_ptr<HostBuffer> buffer;
    std::size_t offset = 0;
    std::size_t bytes = 0;
  };

  explicit DetachedResults(HostBufferAllocator allocate) : allocate_(std::move(allocate)) {}

  // `bytes` of uninitialized memory for `result`'s image data; valid until Serialize.
  void* Add(const v1::ImageResult* result, std::size_t bytes);
  // One buffer for several results' pixels (a pyramid's packed levels), given out by Attach.
  std::shared_ptr<HostBuffer> Allocate(std::size_t bytes) { return allocate_(bytes); }
  // `result`'s image data is buffer[offset, offset + bytes), which must lie inside the buffer.
  void Attach(const v1::ImageResult* result, std::shared_ptr<HostBuffer> buffer, std::size_t offset,
              std::size_t bytes);
  // The request's own pixels (ParseWithDetachedPixels' buffer), which TakeRequestPixels may
  // give to a result.
  void set_request_pixels(std::shared_ptr<HostBuffer> pixels) {
    request_pixels_ = std::move(pixels);
  }
  // Makes the request's pixels `result`'s image data and returns them, when they are the
  // `bytes` at `input` (a request whose input is its inline image) and no result has them
  // yet; else null, and the caller Adds a buffer of its own. Whoever writes the result there
  // overwrites the input: only for a backend that has read all of it first
  // (Backend::MorphologyWritesOverInput). For a volume it saves a buffer as large as the input.
  void* TakeRequestPixels(const v1::ImageResult* result, const void* input, std::size_t bytes);
  // The request's own pixels, null when there are none or a result took them whole: a batch's
  // results may be Attached over the entries' inputs in them, by a backend that has read all of
  // an input before it writes that input's result (Backend::MorphologyWritesOverInput).
  const std::shared_ptr<HostBuffer>& request_pixels() const { return request_pixels_; }
  // `bytes` of uninitialized memory for bytes field `field` of `message`; valid until Serialize.
  void* AddBytes(const google::protobuf::Message* message, int field, std::size_t bytes);
  bool empty() const { return results_.empty() && fields_.empty(); }
  // Forgets what was added for `message` and for every message below it (a batch entry that
  // failed after its results were added: its response is then cleared).
  void Discard(const google::protobuf::Message& message);

  // Serializes `response` into `wire`: what protobuf would write (fields that hold results
  // first), with each added result's pixels as its image's data, and each added bytes field's
  // as its value (both must be empty in `response`). The pixels go by reference: their buffers
  // are freed once gRPC has sent them. Forgets what was added; `response` is left as it is.
  // INTERNAL if something added is not in `response`, is not a singular bytes field, or already
  // holds data.
  absl::Status Serialize(const google::protobuf::Message& response, grpc::ByteBuffer* wire);

 private:
  // A bytes field's number and its pixels.
  using Field = std::pair<int, Pixels>;
  HostBufferAllocator allocate_;
  std::shared_ptr<HostBuffer> request_pixels_;  // null once a result took them
  std::unordered_map<const google::protobuf::Message*, Pixels> results_;
  std::unordered_map<const google::protobuf::Message*, std::vector<Field>> fields_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_WIRE_PIXELS_H_
