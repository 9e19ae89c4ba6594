// Admission's estimates (admission.h): an input's shape from the request, the store or an
// encoded header, without decoding; the bytes a job will hold; who needs the `resident` right.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cuimg/codec/image_codec.h"
#include "server/scheduling/inflight_estimate.h"
#include "server/state/resident_store.h"
#include "server/validation/request_validation.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

ImageInput Inline(PixelType type, Extent extent, int channels) {
  ImageInput in;
  in.kind = ImageInput::Kind::kInline;
  in.type = type;
  in.extent = extent;
  in.channels = channels;
  in.field = "input.image";
  return in;
}

ImageInput Handle(std::string handle) {
  ImageInput in;
  in.kind = ImageInput::Kind::kHandle;
  in.handle = std::move(handle);
  in.field = "input.handle";
  return in;
}

ImageInput Encoded(const std::vector<std::uint8_t>& bytes) {
  ImageInput in;
  in.kind = ImageInput::Kind::kEncoded;
  in.bytes = absl::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  in.field = "input.encoded";
  return in;
}

std::vector<std::uint8_t> Png(int width, int height) {
  Image image(PixelType::kU8, Extent{width, height, 1}, 3);
  absl::StatusOr<std::vector<std::uint8_t>> png = EncodePng(image.view());
  EXPECT_THAT(png, IsOk());
  return png.ok() ? *png : std::vector<std::uint8_t>{};
}

TEST(InputShape, ComesFromTheRequestTheStoreOrTheHeader) {
  ResidentStore store(ResidentStoreOptions{});
  const RequestLimits limits;
  absl::StatusOr<ImageView> shape =
      InputShape(Inline(PixelType::kU16, Extent{5, 4, 3}, 2), "alice", store, limits);
  ASSERT_THAT(shape, IsOk());
  EXPECT_EQ(shape->type, PixelType::kU16);
  EXPECT_EQ(shape->extent.Pixels(), 60);
  EXPECT_EQ(shape->channels, 2);
  EXPECT_EQ(shape->data, nullptr);

  auto stored = std::make_shared<StoredImage>();
  stored->image = Image(PixelType::kF32, Extent{7, 6, 1}, 1);
  absl::StatusOr<ResidentInfo> info = store.Put("alice", stored, 0);
  ASSERT_THAT(info, IsOk());
  shape = InputShape(Handle(info->handle), "alice", store, limits);
  ASSERT_THAT(shape, IsOk());
  EXPECT_EQ(shape->type, PixelType::kF32);
  EXPECT_EQ(shape->extent.width, 7);
  EXPECT_EQ(shape->extent.height, 6);
  // Another identity's handle is as unknown as a made-up one, and the field is named.
  EXPECT_THAT(InputShape(Handle(info->handle), "bob", store, limits),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("input.handle: ")));
  EXPECT_THAT(InputShape(Handle("nope"), "alice", store, limits),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("input.handle: ")));

  const std::vector<std::uint8_t> png = Png(40, 30);
  shape = InputShape(Encoded(png), "alice", store, limits);
  ASSERT_THAT(shape, IsOk());
  EXPECT_EQ(shape->extent.width, 40);
  EXPECT_EQ(shape->extent.height, 30);
  EXPECT_EQ(shape->channels, 3);
}

TEST(InputShape, RefusesCorruptAndOversizedEncodedImages) {
  ResidentStore store(ResidentStoreOptions{});
  const std::vector<std::uint8_t> garbage = {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'g'};
  EXPECT_THAT(InputShape(Encoded(garbage), "alice", store, RequestLimits{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input.encoded: ")));
  RequestLimits small;
  small.max_decoded_pixels = 40 * 30 - 1;
  EXPECT_THAT(InputShape(Encoded(Png(40, 30)), "alice", store, small),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_decoded_pixels")));
  small.max_decoded_pixels = 40 * 30;
  EXPECT_THAT(InputShape(Encoded(Png(40, 30)), "alice", store, small), IsOk());
}

TEST(EstimateInflightBytes, CountsEveryCopyAJobHolds) {
  ResidentStore store(ResidentStoreOptions{});
  const RequestLimits limits;
  const v1::MorphologyRequest morphology_request;  // empty: 0 bytes of message
  MorphologyJob morphology;
  morphology.input = Inline(PixelType::kU8, Extent{100, 50, 1}, 1);
  // The result, written in place into the response's bytes (no input copy since the unary
  // change; inline pixels are counted by the caller, and no steps need no reference scratch).
  EXPECT_EQ(*EstimateInflightBytes(morphology, morphology_request, "a", store, limits),
            1u * 100 * 50);
  // A decoded input adds its pixels once more.
  const std::vector<std::uint8_t> png = Png(40, 30);
  morphology.input = Encoded(png);
  EXPECT_EQ(*EstimateInflightBytes(morphology, morphology_request, "a", store, limits),
            2u * 40 * 30 * 3);

  GradientJob gradient;
  gradient.input = Inline(PixelType::kU8, Extent{10, 10, 1}, 1);
  const v1::GradientRequest gradient_request;
  const std::uint64_t two_planes =
      *EstimateInflightBytes(gradient, gradient_request, "a", store, limits);
  EXPECT_EQ(two_planes, 2u * 2 * 100 * sizeof(float));
  gradient.spec.magnitude = true;
  gradient.spec.angle = true;
  EXPECT_EQ(*EstimateInflightBytes(gradient, gradient_request, "a", store, limits), 2 * two_planes);

  // An unknown handle is NOT_FOUND naming the field, not an estimate of 0.
  morphology.input = Handle("gone");
  EXPECT_THAT(EstimateInflightBytes(morphology, morphology_request, "a", store, limits),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("input.handle")));
  DeformJob deform;
  deform.mesh.kind = MeshInput::Kind::kHandle;
  deform.mesh.handle = "gone";
  EXPECT_THAT(EstimateInflightBytes(deform, v1::DeformRequest(), "a", store, limits),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("mesh.handle")));
}

TEST(UsesResident, AHandleInputOrAKeptResultNeedsTheRight) {
  const ImageInput inline_input = Inline(PixelType::kU8, Extent{1, 1, 1}, 1);
  OutputSpec returned;
  OutputSpec kept;
  kept.keep_resident = true;
  EXPECT_FALSE(UsesResident(inline_input, returned));
  EXPECT_TRUE(UsesResident(inline_input, kept));
  EXPECT_TRUE(UsesResident(Handle("h"), returned));
  DetectJob detect;
  detect.input = inline_input;
  EXPECT_FALSE(UsesResident(detect));
  detect.input = Handle("h");
  EXPECT_TRUE(UsesResident(detect));
  DeformJob deform;
  EXPECT_FALSE(UsesResident(deform));
  deform.output.keep_resident = true;
  EXPECT_TRUE(UsesResident(deform));
}

}  // namespace
}  // namespace cuimg
