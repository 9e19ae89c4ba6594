// wire_pixels: requests parsed with their pixels apart must mean what protobuf makes of the same
// bytes, however gRPC sliced them; responses serialized with detached pixels must parse back to
// the message protobuf would have sent, with the pixels sent from their own buffers.
#include "server/rpc/wire_pixels.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuimg/v1/deform.pb.h"
#include "cuimg/v1/gradient.pb.h"
#include "cuimg/v1/morphology.pb.h"
#include "cuimg/v1/pyramid.pb.h"
#include "tests/testing/byte_buffers.h"

namespace cuimg {
namespace {

std::string RandomBytes(std::size_t n, std::mt19937& rng) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

using ::cuimg::testing::Joined;
using ::cuimg::testing::Sliced;

// Field `field` (≤ 15) of a message holding `bytes` (a nested message or bytes), as protobuf
// writes it.
std::string Field(int field, const std::string& bytes) {
  std::string out(1, static_cast<char>((field << 3) | 2));
  for (std::uint64_t v = bytes.size();; v >>= 7) {
    if (v < 0x80) {
      out.push_back(static_cast<char>(v));
      break;
    }
    out.push_back(static_cast<char>(v | 0x80));
  }
  return out + bytes;
}

HostBufferAllocator Heap() {
  return [](std::size_t bytes) { return HeapHostBuffer(bytes); };
}

v1::MorphologyRequest RequestWithPixels(std::size_t width, std::size_t height, std::mt19937& rng) {
  v1::MorphologyRequest r;
  v1::Image* image = r.mutable_input()->mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_U8);
  image->set_width(static_cast<std::uint32_t>(width));
  image->set_height(static_cast<std::uint32_t>(height));
  image->mutable_spacing()->set_x_mm(0.5);
  *image->mutable_data() = RandomBytes(width * height, rng);
  v1::MorphologyStep* step = r.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_DILATE);
  step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
  step->mutable_element()->set_width(3);
  step->mutable_element()->set_height(3);
  step->set_border_value(-7.25);
  r.mutable_output()->set_ttl_seconds(0);
  return r;
}

// What ParseWithDetachedPixels makes of `bytes`, with any detached pixels put back into the
// message, must be exactly what protobuf parses from them; the same when it may free the received
// bytes (`consume`), which it then does exactly when the pixels are detached.
void ExpectSameAsProtobuf(const std::string& bytes, std::mt19937& rng, bool expect_detached,
                          bool consume) {
  v1::MorphologyRequest expected;
  ASSERT_TRUE(expected.ParseFromString(bytes));
  v1::MorphologyRequest got;
  grpc::ByteBuffer wire = Sliced(bytes, rng);
  absl::StatusOr<std::unique_ptr<HostBuffer>> pixels =
      consume ? ParseWithDetachedPixels(&wire, Heap(), &got)
              : ParseWithDetachedPixels(wire, Heap(), &got);
  ASSERT_TRUE(pixels.ok()) << pixels.status();
  EXPECT_EQ(*pixels != nullptr, expect_detached);
  EXPECT_EQ(wire.Length(), consume && expect_detached ? 0 : bytes.size());
  // Detached pixels always stand for the image's data (never for a replaced oneof member).
  if (*pixels != nullptr) {
    ASSERT_TRUE(got.input().has_image());
    ASSERT_TRUE(got.input().image().data().empty());
    ASSERT_EQ((*pixels)->size(), expected.input().image().data().size());
    got.mutable_input()->mutable_image()->mutable_data()->assign(
        static_cast<const char*>((*pixels)->data()), (*pixels)->size());
  }
  std::string a, b;
  google::protobuf::io::StringOutputStream sa(&a), sb(&b);
  {
    google::protobuf::io::CodedOutputStream ca(&sa), cb(&sb);
    ca.SetSerializationDeterministic(true);
    cb.SetSerializationDeterministic(true);
    ASSERT_TRUE(expected.SerializeToCodedStream(&ca));
    ASSERT_TRUE(got.SerializeToCodedStream(&cb));
  }
  // Not EXPECT_EQ: gtest's diff of two volumes' bytes would take quadratic memory.
  const auto differ = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  EXPECT_TRUE(differ.first == a.end() && differ.second == b.end())
      << "sizes " << a.size() << " and " << b.size() << ", first difference at byte "
      << (differ.first - a.begin());
}

void ExpectSameAsProtobuf(const std::string& bytes, std::mt19937& rng, bool expect_detached) {
  for (const bool consume : {false, true}) {
    SCOPED_TRACE(consume ? "freeing the received bytes" : "leaving the received bytes");
    ExpectSameAsProtobuf(bytes, rng, expect_detached, consume);
  }
}

// 42 MB of pixels are copied out by three threads, each taking a third of the buffer from
// whichever slices hold it.
TEST(WirePixels, AVolumesPixelsCopiedOnSeveralThreadsAreTheSame) {
  std::mt19937 rng(34);
  ExpectSameAsProtobuf(RequestWithPixels(7001, 6007, rng).SerializeAsString(), rng, true);
}

// 67 MB of pixels copied in two rounds, the received bytes of the first freed before the second
// (slices that straddle the rounds' boundary kept for the second).
TEST(WirePixels, AVolumesReceivedBytesFreedInRoundsGiveTheSamePixels) {
  std::mt19937 rng(35);
  const std::string bytes = RequestWithPixels(8200, 8200, rng).SerializeAsString();
  ExpectSameAsProtobuf(bytes, rng, true, true);
}

TEST(WirePixels, AnEncodedRequestsPixelsAreDetachedWhateverTheSlicing) {
  std::mt19937 rng(7);
  for (auto [w, h] : {std::pair<int, int>{640, 480}, {1, 1}, {2, 3}, {127, 129}, {4099, 3}}) {
    for (int trial = 0; trial < 8; ++trial) {
      ExpectSameAsProtobuf(RequestWithPixels(w, h, rng).SerializeAsString(), rng, true);
    }
  }
}

TEST(WirePixels, FieldsInAnyOrderAroundThePixels) {
  std::mt19937 rng(11);
  const v1::MorphologyRequest full = RequestWithPixels(33, 17, rng);
  // Steps and output before the input, and the image's other fields after its data.
  v1::MorphologyRequest others = full;
  others.clear_input();
  v1::Image shape = full.input().image();
  shape.clear_data();
  const std::string image = Field(6, full.input().image().data()) + shape.SerializeAsString();
  const std::string bytes = others.SerializeAsString() + Field(1, Field(1, image));
  for (int trial = 0; trial < 8; ++trial) ExpectSameAsProtobuf(bytes, rng, true);
}

TEST(WirePixels, LayoutsOnlyProtobufsMergeSettlesAreParsedWhole) {
  std::mt19937 rng(13);
  const v1::MorphologyRequest a = RequestWithPixels(20, 10, rng);
  const v1::MorphologyRequest b = RequestWithPixels(20, 10, rng);
  // The input twice: protobuf merges the two images (the second's data wins).
  ExpectSameAsProtobuf(a.SerializeAsString() + b.SerializeAsString(), rng, false);
  // The data twice within one image.
  const std::string image = a.input().image().SerializeAsString() + Field(6, "xy");
  ExpectSameAsProtobuf(Field(1, Field(1, image)), rng, false);
  // The image twice within one source.
  const std::string source = a.input().SerializeAsString() + b.input().SerializeAsString();
  ExpectSameAsProtobuf(Field(1, source), rng, false);
}

TEST(WirePixels, VarintsWrittenLongerThanNeededAreLeftToProtobuf) {
  std::mt19937 rng(23);
  const std::string request = RequestWithPixels(8, 8, rng).SerializeAsString();
  // An unknown varint field (15) whose value 1 is padded to two bytes: writing it again would
  // change the bytes, so the whole message goes to protobuf (which keeps the pixels inline).
  ExpectSameAsProtobuf(request + std::string("\x78\x81\x00", 3), rng, false);
  // The input's length padded the same way.
  const std::string input = RequestWithPixels(8, 8, rng).input().SerializeAsString();
  ASSERT_LT(input.size(), 0x80u);
  std::string padded = "\x0a";
  padded.push_back(static_cast<char>(0x80 | input.size()));
  padded.push_back('\0');
  ExpectSameAsProtobuf(padded + input, rng, false);
}

TEST(WirePixels, ALaterOneofMemberStillWins) {
  std::mt19937 rng(17);
  // One ImageSource whose image is followed by a handle: protobuf keeps the handle and drops
  // the pixels, and so does this parse (found by wire_pixels_fuzzer).
  v1::ImageSource handle;
  handle.set_handle("h-1");
  const std::string source =
      RequestWithPixels(9, 9, rng).input().SerializeAsString() + handle.SerializeAsString();
  ExpectSameAsProtobuf(Field(1, source), rng, false);
  v1::MorphologyRequest got;
  absl::StatusOr<std::unique_ptr<HostBuffer>> pixels =
      ParseWithDetachedPixels(Sliced(Field(1, source), rng), Heap(), &got);
  ASSERT_TRUE(pixels.ok());
  EXPECT_EQ(*pixels, nullptr);
  EXPECT_EQ(got.input().source_case(), v1::ImageSource::kHandle);
  EXPECT_EQ(got.input().handle(), "h-1");
}

TEST(WirePixels, RequestsWithoutInlinePixelsAreParsedAsTheyAre) {
  std::mt19937 rng(19);
  v1::MorphologyRequest handle;
  handle.mutable_input()->set_handle("abc");
  handle.add_steps()->set_op(v1::MORPHOLOGY_OP_ERODE);
  ExpectSameAsProtobuf(handle.SerializeAsString(), rng, false);
  v1::MorphologyRequest encoded = handle;
  encoded.mutable_input()->set_encoded(RandomBytes(70000, rng));
  ExpectSameAsProtobuf(encoded.SerializeAsString(), rng, false);
  v1::MorphologyRequest region = handle;
  region.mutable_input()->mutable_shared_memory()->set_region("r");
  region.mutable_input()->mutable_shared_memory()->set_offset(64);
  ExpectSameAsProtobuf(region.SerializeAsString(), rng, false);
  v1::MorphologyRequest empty_data = RequestWithPixels(3, 3, rng);
  empty_data.mutable_input()->mutable_image()->clear_data();
  ExpectSameAsProtobuf(empty_data.SerializeAsString(), rng, false);
  ExpectSameAsProtobuf("", rng, false);
}

TEST(WirePixels, BytesThatAreNotTheMessageAreInvalidArgument) {
  std::mt19937 rng(23);
  const std::string whole = RequestWithPixels(64, 64, rng).SerializeAsString();
  for (std::size_t cut : {std::size_t{1}, std::size_t{3}, std::size_t{20}, whole.size() - 1}) {
    v1::MorphologyRequest got;
    absl::StatusOr<std::unique_ptr<HostBuffer>> pixels =
        ParseWithDetachedPixels(Sliced(whole.substr(0, cut), rng), Heap(), &got);
    ASSERT_FALSE(pixels.ok()) << "cut at " << cut;
    EXPECT_EQ(pixels.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(pixels.status().message().find("cuimg.v1.MorphologyRequest"), std::string::npos);
  }
  v1::MorphologyRequest got;
  EXPECT_FALSE(ParseWithDetachedPixels(Sliced("\xff\xff\xff", rng), Heap(), &got).ok());
}

TEST(WirePixels, DetachedResultsParseBackAsTheMessageAndAreSentFromTheirBuffers) {
  std::mt19937 rng(29);
  v1::GradientResponse response;
  v1::GradientResponse expected;
  DetachedResults results(Heap());
  std::vector<const void*> buffers;
  // Added out of field order, one with a resident handle beside its pixels.
  for (v1::ImageResult* (v1::GradientResponse::*field)() :
       {&v1::GradientResponse::mutable_magnitude, &v1::GradientResponse::mutable_gx,
        &v1::GradientResponse::mutable_gy}) {
    v1::ImageResult* r = (response.*field)();
    v1::Image* image = r->mutable_image();
    image->set_pixel_type(v1::PIXEL_TYPE_F32);
    image->set_width(31);
    image->set_height(7);
    image->mutable_spacing()->set_z_mm(1.25);
    if (field == &v1::GradientResponse::mutable_gy) r->set_handle("kept");
    const std::string pixels = RandomBytes(31 * 7 * 4, rng);
    void* data = results.Add(r, pixels.size());
    std::memcpy(data, pixels.data(), pixels.size());
    buffers.push_back(data);
    *(expected.*field)() = *r;
    *(expected.*field)()->mutable_image()->mutable_data() = pixels;
  }
  response.add_smoothing_taps(0.25f);
  expected.add_smoothing_taps(0.25f);
  grpc::ByteBuffer wire;
  ASSERT_TRUE(results.Serialize(response, &wire).ok());
  v1::GradientResponse got;
  ASSERT_TRUE(got.ParseFromString(Joined(wire)));
  EXPECT_EQ(got.SerializeAsString(), expected.SerializeAsString());
  // The pixels went by reference.
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(wire.Dump(&slices).ok());
  for (const void* data : buffers) {
    EXPECT_TRUE(std::any_of(slices.begin(), slices.end(),
                            [&](const grpc::Slice& s) { return s.begin() == data; }));
  }
}

// A result takes the request's buffer only when handed those very pixels, and only once; it is
// then sent from that buffer.
TEST(WirePixels, AResultTakesTheRequestsPixelsOnlyWhenItsInputIsThem) {
  std::mt19937 rng(34);
  const std::string pixels = RandomBytes(64 * 32 * 2, rng);
  std::shared_ptr<HostBuffer> request = HeapHostBuffer(pixels.size());
  std::memcpy(request->data(), pixels.data(), pixels.size());
  DetachedResults results(Heap());
  v1::GradientResponse response;
  const char* input = static_cast<const char*>(request->data());
  // Nothing to take before the request's pixels are known.
  EXPECT_EQ(results.TakeRequestPixels(response.mutable_gx(), input, pixels.size()), nullptr);
  results.set_request_pixels(request);
  // Other bytes, part of them, or another size: not the input.
  const std::string elsewhere = pixels;
  EXPECT_EQ(results.TakeRequestPixels(response.mutable_gx(), elsewhere.data(), pixels.size()),
            nullptr);
  EXPECT_EQ(results.TakeRequestPixels(response.mutable_gx(), input + 2, pixels.size() - 2),
            nullptr);
  EXPECT_EQ(results.TakeRequestPixels(response.mutable_gx(), input, pixels.size() / 2), nullptr);
  EXPECT_EQ(results.TakeRequestPixels(response.mutable_gx(), nullptr, pixels.size()), nullptr);
  EXPECT_EQ(results.TakeRequestPixels(response.mutable_gx(), input, pixels.size()), input);
  // Taken once: a second result gets its own buffer.
  EXPECT_EQ(results.TakeRequestPixels(response.mutable_gy(), input, pixels.size()), nullptr);
  v1::Image* image = response.mutable_gx()->mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_U16);
  image->set_width(64);
  image->set_height(32);
  grpc::ByteBuffer wire;
  ASSERT_TRUE(results.Serialize(response, &wire).ok());
  v1::GradientResponse got;
  ASSERT_TRUE(got.ParseFromString(Joined(wire)));
  EXPECT_EQ(got.gx().image().data(), pixels);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(wire.Dump(&slices).ok());
  EXPECT_TRUE(std::any_of(slices.begin(), slices.end(),
                          [&](const grpc::Slice& s) { return s.begin() == request->data(); }));
}

TEST(WirePixels, NestedResultsShareOneBufferAndParseBackAsTheMessage) {
  std::mt19937 rng(31);
  // A pyramid's levels packed in one buffer, with a gap between levels as the backend pads them.
  const std::size_t sizes[] = {40 * 9 * 4, 0, 13 * 3 * 4, 1};
  std::size_t total = 0;
  for (std::size_t n : sizes) total += n + 24;
  std::shared_ptr<HostBuffer> packed = HeapHostBuffer(total);
  const std::string bytes = RandomBytes(total, rng);
  std::memcpy(packed->data(), bytes.data(), total);
  DetachedResults results(Heap());
  v1::PyramidResponse response;
  v1::PyramidResponse expected;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < std::size(sizes); ++i) {
    v1::PyramidLevel* level = response.add_levels();
    level->set_index(static_cast<std::uint32_t>(i));
    level->set_scale(1.5 * static_cast<double>(i));
    level->set_width(static_cast<std::uint32_t>(7 + i));
    level->mutable_result()->mutable_image()->set_width(static_cast<std::uint32_t>(i));
    level->mutable_result()->mutable_image()->mutable_spacing()->set_x_mm(0.5);
    *expected.add_levels() = *level;
    *expected.mutable_levels(static_cast<int>(i))
         ->mutable_result()
         ->mutable_image()
         ->mutable_data() = bytes.substr(offset, sizes[i]);
    results.Attach(&level->result(), packed, offset, sizes[i]);
    offset += sizes[i] + 24;
  }
  // A level without a detached result is written as protobuf writes it.
  v1::PyramidLevel* plain = response.add_levels();
  plain->set_index(99);
  plain->mutable_result()->set_handle("kept");
  *expected.add_levels() = *plain;
  const v1::PyramidResponse before = response;
  grpc::ByteBuffer wire;
  ASSERT_TRUE(results.Serialize(response, &wire).ok());
  EXPECT_TRUE(results.empty());
  v1::PyramidResponse got;
  ASSERT_TRUE(got.ParseFromString(Joined(wire)));
  EXPECT_EQ(got.SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(response.SerializeAsString(), before.SerializeAsString());
  // Every non-empty level went by reference into the one buffer, which the slices keep alive.
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(wire.Dump(&slices).ok());
  const auto* base = static_cast<const std::uint8_t*>(packed->data());
  const std::size_t in_packed = std::count_if(
      slices.begin(), slices.end(),
      [&](const grpc::Slice& s) { return s.begin() >= base && s.begin() < base + total; });
  EXPECT_EQ(in_packed, 3u);
  std::weak_ptr<HostBuffer> alive = packed;
  packed.reset();
  EXPECT_FALSE(alive.expired());
  slices.clear();
  wire.Clear();
  EXPECT_TRUE(alive.expired());
}

TEST(WirePixels, DetachedBytesFieldsParseBackAsTheMessage) {
  std::mt19937 rng(37);
  v1::DeformResponse response;
  response.set_vertex_count(5);
  response.set_handle("mesh-1");
  DetachedResults results(Heap());
  const std::string positions = RandomBytes(60, rng);
  const std::string normals = RandomBytes(60, rng);
  std::memcpy(results.AddBytes(&response, v1::DeformResponse::kNormalsFieldNumber, 60),
              normals.data(), 60);
  std::memcpy(results.AddBytes(&response, v1::DeformResponse::kPositionsFieldNumber, 60),
              positions.data(), 60);
  grpc::ByteBuffer wire;
  ASSERT_TRUE(results.Serialize(response, &wire).ok());
  v1::DeformResponse expected = response;
  expected.set_positions(positions);
  expected.set_normals(normals);
  v1::DeformResponse got;
  ASSERT_TRUE(got.ParseFromString(Joined(wire)));
  EXPECT_EQ(got.SerializeAsString(), expected.SerializeAsString());
}

TEST(WirePixels, ADetachedFieldThatIsNotAnEmptyBytesFieldIsAnInternalError) {
  v1::DeformResponse response;
  grpc::ByteBuffer wire;
  for (int field : {static_cast<int>(v1::DeformResponse::kVertexCountFieldNumber), 99}) {
    DetachedResults results(Heap());
    results.AddBytes(&response, field, 4);
    EXPECT_EQ(results.Serialize(response, &wire).code(), absl::StatusCode::kInternal) << field;
  }
  response.set_positions("already");
  DetachedResults results(Heap());
  results.AddBytes(&response, v1::DeformResponse::kPositionsFieldNumber, 4);
  EXPECT_EQ(results.Serialize(response, &wire).code(), absl::StatusCode::kInternal);
  // A field of a message that is not in the response.
  v1::DeformResponse elsewhere;
  results.AddBytes(&elsewhere, v1::DeformResponse::kNormalsFieldNumber, 4);
  EXPECT_EQ(results.Serialize(v1::DeformResponse(), &wire).code(), absl::StatusCode::kInternal);
}

TEST(WirePixels, AResponseWithNothingDetachedIsSerializedAsItIs) {
  std::mt19937 rng(41);
  v1::GradientResponse response;
  *response.mutable_gx()->mutable_image()->mutable_data() = RandomBytes(70000, rng);
  response.mutable_gx()->set_handle("kept");
  DetachedResults results(Heap());
  grpc::ByteBuffer wire;
  ASSERT_TRUE(results.Serialize(response, &wire).ok());
  EXPECT_EQ(Joined(wire), response.SerializeAsString());
}

TEST(WirePixels, AResultThatIsNotInTheResponseIsAnInternalError) {
  v1::MorphologyResponse response;
  v1::ImageResult elsewhere;
  DetachedResults results(Heap());
  results.Add(&elsewhere, 16);
  grpc::ByteBuffer wire;
  EXPECT_EQ(results.Serialize(response, &wire).code(), absl::StatusCode::kInternal);
}

TEST(WirePixels, PixelsOutsideTheirBufferOrBesideDataAreAnInternalError) {
  DetachedResults results(Heap());
  v1::MorphologyResponse response;
  results.Attach(response.mutable_result(), HeapHostBuffer(8), 4, 5);
  grpc::ByteBuffer wire;
  EXPECT_EQ(results.Serialize(response, &wire).code(), absl::StatusCode::kInternal);
  response.mutable_result()->mutable_image()->set_data("x");
  results.Add(response.mutable_result(), 1);
  EXPECT_EQ(results.Serialize(response, &wire).code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace cuimg
