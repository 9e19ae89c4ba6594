// pixel_messages: a request sent with its pixels by reference must mean what protobuf makes of the
// same request with the pixels inline, and reach the server's detached-pixel path; a response read
// with its pixels apart must mean what protobuf makes of its bytes, however gRPC sliced them; and
// a unary call this way must return what the generated stub returns.
#include "client/pixel_messages.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/v1/morphology.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/rpc/wire_pixels.h"
#include "tests/server/test_server.h"
#include "tests/testing/byte_buffers.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

using google::protobuf::util::MessageDifferencer;

std::string RandomBytes(std::size_t n, std::mt19937& rng) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

using ::cuimg::testing::Joined;
using ::cuimg::testing::Sliced;

std::string Text(const Image::Storage& pixels) { return std::string(pixels.begin(), pixels.end()); }

// A request with every kind of field around the pixels' path, its image's data left empty.
v1::MorphologyRequest Header(std::uint32_t width, std::uint32_t height) {
  v1::MorphologyRequest r;
  v1::Image* image = r.mutable_input()->mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_U8);
  image->set_width(width);
  image->set_height(height);
  image->mutable_spacing()->set_z_mm(1.25);
  v1::MorphologyStep* step = r.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_ERODE);
  step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_ELLIPSE);
  step->mutable_element()->set_width(5);
  step->mutable_element()->set_height(3);
  step->set_border_value(-3.5);
  r.mutable_output()->set_ttl_seconds(7);
  return r;
}

v1::MorphologyResponse Response(const std::string& pixels) {
  v1::MorphologyResponse r;
  v1::Image* image = r.mutable_result()->mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_I16);
  image->set_width(static_cast<std::uint32_t>(pixels.size() / 2));
  image->set_height(1);
  image->mutable_spacing()->set_x_mm(0.75);
  *image->mutable_data() = pixels;
  r.mutable_result()->set_handle("h-1");
  r.add_resolved_elements()->set_width(9);
  return r;
}

TEST(PixelMessages, RequestMeansTheInlineRequestAndReachesTheServersDetachedPath) {
  std::mt19937 rng(1);
  for (std::size_t n : {0, 1, 127, 128, 70000}) {
    const std::string pixels = RandomBytes(n, rng);
    const v1::MorphologyRequest header = Header(static_cast<std::uint32_t>(n), 1);
    auto wire = SerializeWithPixels(header, pixels.data(), pixels.size(), nullptr);
    ASSERT_TRUE(wire.ok()) << wire.status();
    v1::MorphologyRequest expected = header;
    *expected.mutable_input()->mutable_image()->mutable_data() = pixels;
    v1::MorphologyRequest parsed;
    ASSERT_TRUE(parsed.ParseFromString(Joined(*wire)));
    EXPECT_TRUE(MessageDifferencer::Equals(parsed, expected)) << n;

    v1::MorphologyRequest split;
    auto detached = ParseWithDetachedPixels(
        *wire, [](std::size_t bytes) { return HeapHostBuffer(bytes); }, &split);
    ASSERT_TRUE(detached.ok()) << detached.status();
    if (n == 0) continue;
    ASSERT_NE(*detached, nullptr) << "the server parsed the whole message: " << n;
    EXPECT_EQ(std::string(static_cast<const char*>((*detached)->data()), (*detached)->size()),
              pixels);
  }
}

TEST(PixelMessages, RequestPixelsAreSentByReferenceAndReleasedWithTheBuffer) {
  auto pixels = std::make_shared<std::string>(1000, 'x');
  std::weak_ptr<std::string> watch = pixels;
  {
    auto wire = SerializeWithPixels(Header(1000, 1), pixels->data(), pixels->size(), pixels);
    ASSERT_TRUE(wire.ok());
    pixels.reset();
    EXPECT_FALSE(watch.expired());  // gRPC may still read them
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(wire->Dump(&slices).ok());
    bool by_reference = false;
    for (const grpc::Slice& s : slices) {
      by_reference =
          by_reference || s.begin() == reinterpret_cast<const std::uint8_t*>(watch.lock()->data());
    }
    EXPECT_TRUE(by_reference);
  }
  EXPECT_TRUE(watch.expired());
}

TEST(PixelMessages, RequestWithoutAnEmptyInputImageIsRefused) {
  v1::MorphologyRequest no_input;
  EXPECT_EQ(SerializeWithPixels(no_input, "a", 1, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::MorphologyRequest handle;
  handle.mutable_input()->set_handle("h");
  EXPECT_EQ(SerializeWithPixels(handle, "a", 1, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::MorphologyRequest with_data = Header(1, 1);
  with_data.mutable_input()->mutable_image()->set_data("z");
  EXPECT_EQ(SerializeWithPixels(with_data, "a", 1, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// What ParseWithPixels makes of `bytes` equals protobuf's parse, the pixels taken out of it.
void ExpectParsedAsProtobuf(const std::string& bytes, std::mt19937& rng) {
  v1::MorphologyResponse expected;
  ASSERT_TRUE(expected.ParseFromString(bytes));
  const std::string expected_pixels = expected.result().image().data();
  if (expected.result().has_image()) expected.mutable_result()->mutable_image()->clear_data();
  v1::MorphologyResponse got;
  Image::Storage pixels(3, 'q');  // stale contents must go
  ASSERT_TRUE(ParseWithPixels(Sliced(bytes, rng), &got, &pixels).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(got, expected))
      << "got " << got.ShortDebugString() << " expected " << expected.ShortDebugString();
  EXPECT_EQ(Text(pixels), expected_pixels);
}

TEST(PixelMessages, ResponseMeansWhatProtobufParsesHoweverSliced) {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 20; ++trial) {
    const std::string pixels = RandomBytes(rng() % 2 ? rng() % 300 : 50000 + rng() % 1000, rng);
    const std::string bytes = Response(pixels).SerializeAsString();
    ExpectParsedAsProtobuf(bytes, rng);
    // Given twice, the result merges and its data is the last one's (the fallback).
    ExpectParsedAsProtobuf(bytes + Response(RandomBytes(10, rng)).SerializeAsString(), rng);
    // A second result without data merges into the first, which keeps its pixels.
    v1::MorphologyResponse more;
    more.mutable_result()->set_handle("h-2");
    more.mutable_result()->mutable_image()->set_width(4);
    ExpectParsedAsProtobuf(bytes + more.SerializeAsString(), rng);
  }
  v1::MorphologyResponse omitted = Response("");
  ExpectParsedAsProtobuf(omitted.SerializeAsString(), rng);
  ExpectParsedAsProtobuf("", rng);
}

TEST(PixelMessages, ResponseKeepsABufferOfTheRightSize) {
  std::mt19937 rng(3);
  const std::string pixels = RandomBytes(40000, rng);
  Image::Storage buffer(pixels.size());
  const std::uint8_t* before = buffer.data();
  v1::MorphologyResponse got;
  ASSERT_TRUE(
      ParseWithPixels(Sliced(Response(pixels).SerializeAsString(), rng), &got, &buffer).ok());
  EXPECT_EQ(buffer.data(), before);
  EXPECT_EQ(Text(buffer), pixels);
}

TEST(PixelMessages, ResponseThatIsNotAMessageIsInvalid) {
  std::mt19937 rng(4);
  const std::string whole = Response(RandomBytes(500, rng)).SerializeAsString();
  v1::MorphologyResponse got;
  Image::Storage pixels;
  for (std::size_t cut : {std::size_t{1}, std::size_t{5}, whole.size() / 2, whole.size() - 1}) {
    const absl::Status s = ParseWithPixels(Sliced(whole.substr(0, cut), rng), &got, &pixels);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << cut;
    EXPECT_NE(s.message().find("cuimg.v1.MorphologyResponse"), std::string::npos) << s;
  }
  EXPECT_FALSE(ParseWithPixels(Sliced("\xff\xff\xff", rng), &got, &pixels).ok());
}

TEST(PixelMessages, ResponseFromTheServersDetachedResults) {
  std::mt19937 rng(5);
  const std::string pixels = RandomBytes(30000, rng);
  v1::MorphologyResponse response = Response("");
  DetachedResults results([](std::size_t bytes) { return HeapHostBuffer(bytes); });
  std::memcpy(results.Add(&response.result(), pixels.size()), pixels.data(), pixels.size());
  grpc::ByteBuffer wire;
  ASSERT_TRUE(results.Serialize(response, &wire).ok());
  v1::MorphologyResponse got;
  Image::Storage got_pixels;
  ASSERT_TRUE(ParseWithPixels(wire, &got, &got_pixels).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(got, response));
  EXPECT_EQ(Text(got_pixels), pixels);
}

TEST(PixelMessages, UnaryCallReturnsWhatTheGeneratedStubReturns) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kI16, Extent{37, 29, 11}, 6);
  v1::MorphologyRequest request;
  v1::MorphologyStep* step = request.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_DILATE);
  step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_ELLIPSE);
  step->mutable_element()->set_width(5);
  step->mutable_element()->set_height(3);
  step->mutable_element()->set_depth(3);
  const std::string expected = testing::UnaryMorphology(server.stub(), volume, request);

  v1::Image* image = request.mutable_input()->mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_I16);
  image->set_width(37);
  image->set_height(29);
  image->set_depth(11);
  auto owner = std::make_shared<Image>(volume);
  for (std::size_t hint : {std::size_t{0}, volume.size_bytes()}) {
    grpc::ClientContext context;
    v1::MorphologyResponse response;
    Image::Storage result;
    const grpc::Status status =
        UnaryCallWithPixels(server.channel(), &context, "/cuimg.v1.Imaging/Morphology", request,
                            owner->bytes(), owner->size_bytes(), owner, hint, &response, &result);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(Text(result), expected) << hint;
    EXPECT_TRUE(response.result().image().data().empty());
    EXPECT_EQ(response.result().image().depth(), 11u);
  }
  // The server's errors come back as they are.
  request.mutable_steps(0)->mutable_element()->set_width(0);
  grpc::ClientContext context;
  v1::MorphologyResponse response;
  Image::Storage result;
  const grpc::Status status =
      UnaryCallWithPixels(server.channel(), &context, "/cuimg.v1.Imaging/Morphology", request,
                          owner->bytes(), owner->size_bytes(), owner, 0, &response, &result);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
}

}  // namespace
}  // namespace cuimg
