// Label and the segmentation steps through the service in process (CPU backend): the labels and
// region table equal the CPU reference's, a label image kept resident feeds Morphology's mask
// steps as U32 and is checked against the chain at admission, a region table that does not fit
// the in-flight budget is refused, and a streamed volume with a global step equals the unary
// call. (SciPy and scikit-image are the oracles over the wire: tests/e2e/test_segmentation_*.py.)
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuimg/common/error.h"
#include "cuimg/reference/label_reference.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

// A mask of 0 and 1 (u8): a pseudo-random pattern of `density` percent foreground.
Image Mask(Extent extent, int density, std::uint32_t seed) {
  Image mask(PixelType::kU8, extent, 1);
  std::uint32_t state = seed;
  for (std::int64_t i = 0; i < extent.Pixels(); ++i) {
    state = state * 1664525u + 1013904223u;
    mask.As<std::uint8_t>()[i] = (state >> 24) % 100 < static_cast<std::uint32_t>(density);
  }
  return mask;
}

v1::LabelRequest LabelRequestOf(const Image& image, v1::Connectivity connectivity) {
  v1::LabelRequest r;
  v1::Image* in = r.mutable_input()->mutable_image();
  SetImageHeader(image.view(), in);
  in->set_data(reinterpret_cast<const char*>(image.bytes()), image.size_bytes());
  r.set_connectivity(connectivity);
  return r;
}

std::string Bytes(const Image& image) {
  return std::string(reinterpret_cast<const char*>(image.bytes()), image.size_bytes());
}

TEST(SegmentationService, LabelEqualsTheReferenceWithItsRegionTable) {
  testing::TestServer server;
  const Image mask = Mask(Extent{37, 29, 5}, 12, 1);
  v1::LabelRequest request = LabelRequestOf(mask, v1::CONNECTIVITY_18);
  const Image intensity = testing::RandomImage(PixelType::kI16, mask.extent(), 2);
  SetImageHeader(intensity.view(), request.mutable_intensity()->mutable_image());
  request.mutable_intensity()->mutable_image()->set_data(Bytes(intensity));
  request.mutable_input()->mutable_image()->mutable_spacing()->set_z_mm(2);
  grpc::ClientContext ctx;
  v1::LabelResponse response;
  ASSERT_TRUE(server.stub().Label(&ctx, request, &response).ok());

  LabelSpec spec;
  spec.connectivity = Connectivity::k18;
  const ImageView intensity_view = intensity.view();
  absl::StatusOr<LabelResult> expected = LabelReference(mask.view(), spec, &intensity_view);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(response.labels().image().pixel_type(), v1::PIXEL_TYPE_U32);
  EXPECT_EQ(response.labels().image().data(), Bytes(expected->labels));
  ASSERT_EQ(response.region_count(), expected->regions.size());
  ASSERT_GT(response.region_count(), 10u);
  const v1::RegionTable& t = response.regions();
  for (std::size_t k = 0; k < expected->regions.size(); ++k) {
    const RegionStats& r = expected->regions[k];
    EXPECT_EQ(t.voxels(k), static_cast<std::uint64_t>(r.voxels));
    for (int axis = 0; axis < 3; ++axis) {
      EXPECT_EQ(t.bbox_begin(3 * k + axis), r.bbox_begin[axis]);
      EXPECT_EQ(t.bbox_end(3 * k + axis), r.bbox_end[axis]);
      EXPECT_EQ(t.centroid(3 * k + axis), r.centroid[axis]);
    }
    EXPECT_EQ(t.sum(k), r.sum);
    EXPECT_EQ(t.min(k), r.min);
  }
  // x and y spacing unknown: no centroid in millimetres.
  EXPECT_EQ(t.centroid_mm_size(), 0);
}

TEST(SegmentationService, ResidentLabelsFeedTheMaskStepsAndAreCheckedAtAdmission) {
  testing::TestServer server;
  const Image mask = Mask(Extent{30, 22, 1}, 50, 3);
  v1::LabelRequest request = LabelRequestOf(mask, v1::CONNECTIVITY_8);
  request.mutable_output()->set_keep_resident(true);
  request.mutable_output()->set_omit_data(true);
  v1::LabelResponse labelled;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(server.stub().Label(&ctx, request, &labelled).ok());
  }
  ASSERT_FALSE(labelled.labels().handle().empty());
  EXPECT_EQ(labelled.labels().image().width(), 30u);  // the shape, without pixels
  EXPECT_TRUE(labelled.labels().image().data().empty());

  v1::MorphologyRequest keep;
  keep.mutable_input()->set_handle(labelled.labels().handle());
  v1::MorphologyStep* step = keep.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_KEEP_LARGEST);
  step->set_connectivity(v1::CONNECTIVITY_8);
  v1::MorphologyResponse kept;
  {
    grpc::ClientContext ctx;
    const grpc::Status status = server.stub().Morphology(&ctx, keep, &kept);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_EQ(kept.result().image().pixel_type(), v1::PIXEL_TYPE_U32);
  std::vector<std::uint32_t> values(30 * 22);
  ASSERT_EQ(kept.result().image().data().size(), values.size() * 4);
  std::memcpy(values.data(), kept.result().image().data().data(), values.size() * 4);
  std::uint32_t label = 0;
  for (std::uint32_t v : values) {
    if (v == 0) continue;
    if (label == 0) label = v;
    EXPECT_EQ(v, label);  // one component left, with its label
  }
  EXPECT_NE(label, 0u);

  // A 3D connectivity on the resident 2D labels: refused at admission, naming the step.
  step->set_connectivity(v1::CONNECTIVITY_26);
  grpc::ClientContext ctx;
  const grpc::Status refused = server.stub().Morphology(&ctx, keep, &kept);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("steps[0].connectivity"), std::string::npos)
      << refused.error_message();
}

TEST(SegmentationService, ARegionTableOverTheBudgetIsRefused) {
  ServerOptions options = testing::TestServerOptions();
  // A checkerboard's 2048 regions need about half a megabyte of table; its labels far less.
  options.max_inflight_bytes_per_device = 256 << 10;
  testing::TestServer server(options);
  Image checker(PixelType::kU8, Extent{64, 64, 1}, 1);
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 64; ++x) checker.As<std::uint8_t>()[y * 64 + x] = (x + y) % 2;
  }
  grpc::ClientContext ctx;
  v1::LabelResponse response;
  const grpc::Status status =
      server.stub().Label(&ctx, LabelRequestOf(checker, v1::CONNECTIVITY_4), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
}

TEST(SegmentationService, AStreamedGlobalChainEqualsTheUnaryCall) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU16, Extent{19, 15, 13}, 4, 12);
  v1::MorphologyRequest chain;
  v1::MorphologyStep* dilate = chain.add_steps();
  dilate->set_op(v1::MORPHOLOGY_OP_DILATE);
  dilate->mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
  dilate->mutable_element()->set_width(3);
  dilate->mutable_element()->set_height(3);
  dilate->mutable_element()->set_depth(3);
  v1::MorphologyStep* hmax = chain.add_steps();
  hmax->set_op(v1::MORPHOLOGY_OP_HMAX);
  hmax->set_h(3);
  const std::string unary = testing::UnaryMorphology(server.stub(), volume, chain);
  ASSERT_EQ(unary.size(), volume.size_bytes());

  grpc::ClientContext ctx;
  auto stream = server.stub().ProcessVolumeStream(&ctx);
  v1::VolumeStreamRequest message;
  SetImageHeader(volume.view(), message.mutable_header()->mutable_volume());
  *message.mutable_header()->mutable_morphology() = chain;
  ASSERT_TRUE(stream->Write(message));
  const std::size_t slice = 19 * 15 * 2;
  for (int z = 0; z < 13; z += 4) {
    message.set_slab(reinterpret_cast<const char*>(volume.bytes()) + z * slice,
                     std::min(4, 13 - z) * slice);
    ASSERT_TRUE(stream->Write(message));
  }
  stream->WritesDone();
  std::string streamed;
  v1::VolumeStreamResponse reply;
  while (stream->Read(&reply)) {
    EXPECT_EQ(reply.z_begin() * slice, streamed.size());
    streamed += reply.data();
  }
  const grpc::Status status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(streamed, unary);
}

}  // namespace
}  // namespace cuimg
