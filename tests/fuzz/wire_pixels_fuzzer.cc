// libFuzzer target: the server's own parse of Morphology, Gradient and Pyramid requests
// (server/rpc/wire_pixels.h), which reads every client's bytes before protobuf sees them, and its
// serialization of responses whose pixels are sent from their own buffers. The first byte picks
// the message (bits 0 and 4) and how many gRPC slices the bytes arrive in (bits 1-3); the rest is
// the message. Whatever the bytes, the outcome must be protobuf's own: the parse fails exactly
// when protobuf's fails, and otherwise, with any detached pixels put back as input.image.data
// (and, for the parse that takes a batch's entries apart too, as each inputs[k].image.data),
// the message equals the one protobuf parses; a response serialized with its pixels detached
// (a pyramid's levels from one shared buffer, a deform's positions and normals from their own,
// a Morphology batch's results from one buffer, one entry's dropped as a failed entry's are)
// parses back to the same response.
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cuimg/v1/deform.pb.h"
#include "cuimg/v1/gradient.pb.h"
#include "cuimg/v1/morphology.pb.h"
#include "cuimg/v1/pyramid.pb.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/backend/host_buffer.h"
#include "server/rpc/wire_pixels.h"

namespace {

// `size` bytes in `count` slices of near-equal sizes (a tag, length or pixel run may straddle
// any boundary).
grpc::ByteBuffer Sliced(const std::uint8_t* data, std::size_t size, std::size_t count) {
  std::vector<grpc::Slice> slices;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t begin = size * i / count;
    const std::size_t end = size * (i + 1) / count;
    if (end > begin) slices.emplace_back(data + begin, end - begin);
  }
  if (slices.empty()) return grpc::ByteBuffer();
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// The message's deterministic serialization: equal for equal messages, NaNs included.
std::string Canonical(const google::protobuf::Message& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);  // flushes when it goes
    coded.SetSerializationDeterministic(true);
    if (!message.SerializeToCodedStream(&coded)) __builtin_trap();
  }
  return out;
}

template <typename Request>
void Check(const std::uint8_t* data, std::size_t size, std::size_t slices) {
  Request expected;
  const bool parses = expected.ParseFromArray(data, static_cast<int>(size));
  Request got;
  absl::StatusOr<std::unique_ptr<cuimg::HostBuffer>> pixels = cuimg::ParseWithDetachedPixels(
      Sliced(data, size, slices), [](std::size_t n) { return cuimg::HeapHostBuffer(n); }, &got);
  if (pixels.ok() != parses) __builtin_trap();
  if (!parses) return;
  if (*pixels != nullptr) {
    // Detached pixels leave the message's own data empty.
    if (!got.input().image().data().empty()) __builtin_trap();
    got.mutable_input()->mutable_image()->set_data(
        std::string(static_cast<const char*>((*pixels)->data()), (*pixels)->size()));
  }
  if (Canonical(expected) != Canonical(got)) __builtin_trap();

  // The same bytes with a batch's entries taken apart too: one buffer, the images in order.
  Request batch;
  absl::StatusOr<cuimg::DetachedInputs> inputs = cuimg::ParseWithDetachedInputs(
      Sliced(data, size, slices), [](std::size_t n) { return cuimg::HeapHostBuffer(n); }, &batch);
  if (!inputs.ok()) __builtin_trap();
  std::vector<std::pair<std::size_t, std::size_t>> placed;  // each image's (offset, bytes)
  auto put_back = [&](const absl::optional<cuimg::DetachedInputs::Pixels>& pixels,
                      cuimg::v1::ImageSource* source) {
    // Only an image's data is ever detached, into the one buffer.
    if (inputs->buffer == nullptr || !source->has_image() || !source->image().data().empty() ||
        pixels->offset > inputs->buffer->size() ||
        pixels->bytes > inputs->buffer->size() - pixels->offset) {
      __builtin_trap();
    }
    placed.emplace_back(pixels->offset, pixels->bytes);
    source->mutable_image()->set_data(std::string(
        static_cast<const char*>(inputs->buffer->data()) + pixels->offset, pixels->bytes));
  };
  // (mutable_input() would add an empty input where there was none.)
  if (inputs->input.has_value()) put_back(inputs->input, batch.mutable_input());
  if (inputs->inputs.size() > static_cast<std::size_t>(batch.inputs_size())) __builtin_trap();
  for (std::size_t k = 0; k < inputs->inputs.size(); ++k) {
    if (inputs->inputs[k].has_value()) {
      put_back(inputs->inputs[k], batch.mutable_inputs(static_cast<int>(k)));
    }
  }
  // The images lie one after another (in the order the message holds them) and fill the buffer.
  std::sort(placed.begin(), placed.end());
  std::size_t offset = 0;
  for (const auto& [at, bytes] : placed) {
    if (at != offset) __builtin_trap();
    offset += bytes;
  }
  if ((inputs->buffer == nullptr ? 0 : inputs->buffer->size()) != offset) __builtin_trap();
  if (Canonical(expected) != Canonical(batch)) __builtin_trap();
}

// The joined bytes of `wire`, parsed back into `got`; traps if they do not parse.
void ParseBack(const grpc::ByteBuffer& wire, google::protobuf::Message* got) {
  std::vector<grpc::Slice> slices;
  if (!wire.Dump(&slices).ok()) __builtin_trap();
  std::string joined;
  for (const grpc::Slice& slice : slices) {
    joined.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  if (!got->ParseFromString(joined)) __builtin_trap();
}

// A deform response: positions and normals moved into buffers of their own, serialized, then
// parsed back.
void CheckDeformResponse(const std::uint8_t* data, std::size_t size) {
  cuimg::v1::DeformResponse expected;
  if (!expected.ParseFromArray(data, static_cast<int>(size))) return;
  cuimg::v1::DeformResponse response = expected;
  cuimg::DetachedResults results([](std::size_t n) { return cuimg::HeapHostBuffer(n); });
  const std::pair<int, std::string*> fields[] = {
      {cuimg::v1::DeformResponse::kPositionsFieldNumber, response.mutable_positions()},
      {cuimg::v1::DeformResponse::kNormalsFieldNumber, response.mutable_normals()}};
  for (const auto& [number, bytes] : fields) {
    if (bytes->empty() && (size & 1) == 0) continue;  // also attach empty ones, sometimes
    void* at = results.AddBytes(&response, number, bytes->size());
    if (!bytes->empty()) std::memcpy(at, bytes->data(), bytes->size());
    bytes->clear();
  }
  grpc::ByteBuffer wire;
  if (!results.Serialize(response, &wire).ok()) __builtin_trap();
  cuimg::v1::DeformResponse got;
  ParseBack(wire, &got);
  if (Canonical(expected) != Canonical(got)) __builtin_trap();
}

// A pyramid response: every level's image data moved into one packed buffer and attached from
// there, serialized, then parsed back.
void CheckPyramidResponse(const std::uint8_t* data, std::size_t size) {
  cuimg::v1::PyramidResponse expected;
  if (!expected.ParseFromArray(data, static_cast<int>(size))) return;
  cuimg::v1::PyramidResponse response = expected;
  struct Range {
    const cuimg::v1::ImageResult* result;
    std::size_t offset;
    std::size_t bytes;
  };
  std::vector<Range> ranges;
  std::string packed;
  for (cuimg::v1::PyramidLevel& level : *response.mutable_levels()) {
    if (!level.has_result() || !level.result().has_image()) continue;
    const std::string& pixels = level.result().image().data();
    ranges.push_back(Range{&level.result(), packed.size(), pixels.size()});
    packed += pixels;
    packed.append(packed.size() % 3, '\x5a');  // padding between levels, as the backend leaves
    level.mutable_result()->mutable_image()->clear_data();
  }
  std::shared_ptr<cuimg::HostBuffer> buffer = cuimg::HeapHostBuffer(packed.size());
  if (!packed.empty()) std::memcpy(buffer->data(), packed.data(), packed.size());
  cuimg::DetachedResults results([](std::size_t n) { return cuimg::HeapHostBuffer(n); });
  for (const Range& r : ranges) results.Attach(r.result, buffer, r.offset, r.bytes);
  grpc::ByteBuffer wire;
  if (!results.Serialize(response, &wire).ok()) __builtin_trap();
  cuimg::v1::PyramidResponse got;
  ParseBack(wire, &got);
  if (Canonical(expected) != Canonical(got)) __builtin_trap();
}

// A Morphology batch response: every entry's result pixels moved into one buffer and attached
// from there; with `drop_one`, one entry is then discarded and its response cleared, as a failed
// entry's are (DetachedResults::Discard). Serialized, then parsed back.
void CheckBatchResponse(const std::uint8_t* data, std::size_t size, bool drop_one) {
  cuimg::v1::MorphologyResponse expected;
  if (!expected.ParseFromArray(data, static_cast<int>(size))) return;
  cuimg::v1::MorphologyResponse response = expected;
  struct Range {
    const cuimg::v1::ImageResult* result;
    std::size_t offset;
    std::size_t bytes;
  };
  std::vector<Range> ranges;
  std::string packed;
  for (cuimg::v1::MorphologyBatchResult& entry : *response.mutable_results()) {
    if (!entry.response().result().has_image()) continue;
    cuimg::v1::ImageResult* result = entry.mutable_response()->mutable_result();
    ranges.push_back(Range{result, packed.size(), result->image().data().size()});
    packed += result->image().data();
    result->mutable_image()->clear_data();
  }
  std::shared_ptr<cuimg::HostBuffer> buffer = cuimg::HeapHostBuffer(packed.size());
  if (!packed.empty()) std::memcpy(buffer->data(), packed.data(), packed.size());
  cuimg::DetachedResults results([](std::size_t n) { return cuimg::HeapHostBuffer(n); });
  for (const Range& r : ranges) results.Attach(r.result, buffer, r.offset, r.bytes);
  if (drop_one && response.results_size() > 0) {
    const int k = static_cast<int>(size % static_cast<std::size_t>(response.results_size()));
    results.Discard(response.results(k).response());
    response.mutable_results(k)->clear_response();
    expected.mutable_results(k)->clear_response();
  }
  grpc::ByteBuffer wire;
  if (!results.Serialize(response, &wire).ok()) __builtin_trap();
  cuimg::v1::MorphologyResponse got;
  ParseBack(wire, &got);
  if (Canonical(expected) != Canonical(got)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t head = data[0];
  const std::size_t slices = 1 + ((head >> 1) & 7);
  switch ((head & 1) | ((head >> 3) & 2)) {
    case 0:
      Check<cuimg::v1::MorphologyRequest>(data + 1, size - 1, slices);
      break;
    case 1:
      Check<cuimg::v1::GradientRequest>(data + 1, size - 1, slices);
      break;
    case 2:
      Check<cuimg::v1::PyramidRequest>(data + 1, size - 1, slices);
      break;
    default:
      // The slice count means nothing here: bits 1 and 2 pick the response.
      if ((head & 4) != 0) {
        CheckBatchResponse(data + 1, size - 1, (head & 2) != 0);
      } else if ((head & 2) == 0) {
        CheckPyramidResponse(data + 1, size - 1);
      } else {
        CheckDeformResponse(data + 1, size - 1);
      }
      break;
  }
  return 0;
}
