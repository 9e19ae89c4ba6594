// Resolving a validated input to pixels (image_input.h): inline bytes without a copy, resident
// objects of the caller only, PNG decoded under the limits, shared memory only where offered.
#include "server/rpc/image_input.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuimg/codec/image_codec.h"
#include "server/observability/metrics.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

TEST(DecodeLimitsFor, TakesTheSmallerPixelLimitAndTheSide) {
  RequestLimits limits;
  limits.max_pixels = 1000;
  limits.max_decoded_pixels = 5000;
  limits.max_side = 77;
  DecodeLimits decode = DecodeLimitsFor(limits);
  EXPECT_EQ(decode.max_pixels, 1000);
  EXPECT_EQ(decode.max_side, 77);
  limits.max_decoded_pixels = 10;
  EXPECT_EQ(DecodeLimitsFor(limits).max_pixels, 10);
}

TEST(CheckEncodedShape, NamesTheFieldAndTheLimitThatBinds) {
  RequestLimits limits;
  limits.max_side = 100;
  limits.max_pixels = 2000;
  limits.max_decoded_pixels = 1000;
  const auto shape = [](int w, int h) { return ImageView{PixelType::kU8, Extent{w, h, 1}, 3}; };
  EXPECT_THAT(CheckEncodedShape(shape(40, 25), "input.encoded", limits), IsOk());
  EXPECT_THAT(CheckEncodedShape(shape(101, 1), "input.encoded", limits),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input.encoded: 101x1 exceeds the server limit max_side=100")));
  EXPECT_THAT(CheckEncodedShape(shape(50, 21), "input.encoded", limits),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_decoded_pixels=1000")));
  limits.max_decoded_pixels = 4000;
  EXPECT_THAT(CheckEncodedShape(shape(50, 41), "x", limits),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_pixels=2000")));
}

class ResolveImageTest : public ::testing::Test {
 protected:
  ResolveImageTest()
      : metrics_(registry_, "test", "unknown", "cpu"),
        call_("Morphology", &ctx_, &metrics_),
        store_(ResidentStoreOptions{}) {
    call_.set_identity("alice");
  }

  absl::StatusOr<ResolvedImage> Resolve(const v1::ImageSource& source,
                                        const RequestLimits& limits = RequestLimits{}) {
    absl::StatusOr<ImageInput> input = ValidateImageSource(source, "input", limits);
    if (!input.ok()) return input.status();
    input_ = *std::move(input);
    return ResolveImage(input_, call_, store_, /*shared_memory=*/nullptr, limits, ImageDecoders{});
  }

  prometheus::Registry registry_;
  ServerMetrics metrics_;
  grpc::CallbackServerContext ctx_;
  CallScope call_;
  ResidentStore store_;
  ImageInput input_;
};

TEST_F(ResolveImageTest, InlinePixelsAreTheRequestsOwnBytes) {
  v1::ImageSource source;
  v1::Image* image = source.mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_U8);
  image->set_width(4);
  image->set_height(2);
  image->set_data("abcdefgh");
  image->mutable_spacing()->set_x_mm(0.5);
  absl::StatusOr<ResolvedImage> in = Resolve(source);
  ASSERT_THAT(in, IsOk());
  EXPECT_EQ(static_cast<const void*>(in->view.data),
            static_cast<const void*>(source.image().data().data()));
  EXPECT_EQ(in->view.extent.width, 4);
  EXPECT_EQ(in->spacing.x_mm(), 0.5);
  EXPECT_EQ(in->decoded, nullptr);
}

TEST_F(ResolveImageTest, AHandleIsTheCallersObjectOnly) {
  auto stored = std::make_shared<StoredImage>();
  stored->image = Image(PixelType::kU16, Extent{3, 3, 1}, 1);
  stored->spacing.set_y_mm(2);
  absl::StatusOr<ResidentInfo> alices = store_.Put("alice", stored, 0);
  absl::StatusOr<ResidentInfo> bobs = store_.Put("bob", stored, 0);
  ASSERT_THAT(alices, IsOk());
  ASSERT_THAT(bobs, IsOk());
  v1::ImageSource source;
  source.set_handle(alices->handle);
  absl::StatusOr<ResolvedImage> in = Resolve(source);
  ASSERT_THAT(in, IsOk());
  EXPECT_EQ(in->view.type, PixelType::kU16);
  EXPECT_EQ(in->resident, stored);
  EXPECT_EQ(in->spacing.y_mm(), 2);
  source.set_handle(bobs->handle);
  EXPECT_THAT(Resolve(source), StatusIs(absl::StatusCode::kNotFound, HasSubstr("input.handle: ")));
}

TEST_F(ResolveImageTest, EncodedImagesDecodeUnderTheLimits) {
  Image original(PixelType::kU8, Extent{8, 5, 1}, 1);
  for (std::size_t i = 0; i < original.size_bytes(); ++i) {
    original.bytes()[i] = static_cast<std::uint8_t>(i * 7);
  }
  absl::StatusOr<std::vector<std::uint8_t>> png = EncodePng(original.view());
  ASSERT_THAT(png, IsOk());
  v1::ImageSource source;
  source.set_encoded(std::string(png->begin(), png->end()));
  absl::StatusOr<ResolvedImage> in = Resolve(source);
  ASSERT_THAT(in, IsOk());
  ASSERT_NE(in->decoded, nullptr);
  ASSERT_EQ(in->view.Bytes(), original.size_bytes());
  EXPECT_EQ(std::memcmp(in->view.data, original.bytes(), original.size_bytes()), 0);
  EXPECT_GT(call_.times().decode_us, 0);

  RequestLimits small;
  small.max_decoded_pixels = 39;
  EXPECT_THAT(Resolve(source, small),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input.encoded: ")));
  source.set_encoded(std::string(png->begin(), png->begin() + png->size() / 2));  // truncated
  EXPECT_THAT(Resolve(source),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input.encoded: ")));
}

TEST_F(ResolveImageTest, SharedMemoryOnlyWhereTheServerOffersIt) {
  v1::ImageSource source;
  v1::SharedMemoryImage* shm = source.mutable_shared_memory();
  shm->set_region("region-1");
  shm->mutable_image()->set_pixel_type(v1::PIXEL_TYPE_U8);
  shm->mutable_image()->set_width(2);
  shm->mutable_image()->set_height(2);
  EXPECT_THAT(Resolve(source), StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr("input.shared_memory.region: this server does "
                                                  "not offer shared memory")));
}

}  // namespace
}  // namespace cuimg
