// ProcessVolumeStream over a real gRPC channel on the CPU backend: streamed results equal the unary
// RPCs' bit for bit for any slab sizes, per-slice and 3D elements, chains and Gradient; malformed
// streams get INVALID_ARGUMENT naming the field. Also the slab planning it rests on.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "server/scheduling/volume_stream_plan.h"
#include "server/validation/proto_conversion.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

struct StreamOutcome {
  grpc::Status status;
  std::string data;  // the result slabs' bytes, concatenated
  std::vector<std::pair<std::uint32_t, std::uint32_t>> slabs;  // (z_begin, slices)
  std::string timing;
};

// Sends `messages` on one stream while reading results on this thread (as a real client must:
// the server stops reading while its results go unread).
StreamOutcome RunStream(v1::Imaging::Stub& stub,
                        const std::vector<v1::VolumeStreamRequest>& messages) {
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<v1::VolumeStreamRequest, v1::VolumeStreamResponse>>
      stream = stub.ProcessVolumeStream(&ctx);
  std::thread writer([&] {
    for (const v1::VolumeStreamRequest& m : messages) {
      if (!stream->Write(m)) break;
    }
    stream->WritesDone();
  });
  StreamOutcome out;
  v1::VolumeStreamResponse response;
  while (stream->Read(&response)) {
    out.slabs.emplace_back(response.z_begin(), response.slices());
    out.data += response.data();
  }
  writer.join();
  out.status = stream->Finish();
  const auto& trailers = ctx.GetServerTrailingMetadata();
  if (auto it = trailers.find("cuimg-timing"); it != trailers.end()) {
    out.timing.assign(it->second.data(), it->second.size());
  }
  return out;
}

v1::VolumeStreamRequest Header(const Image& volume) {
  v1::VolumeStreamRequest m;
  SetImageHeader(volume.view(), m.mutable_header()->mutable_volume());
  return m;
}

v1::VolumeStreamRequest Slab(const Image& volume, std::int64_t z, std::int64_t slices) {
  const std::int64_t slice = volume.extent().SlicePixels() * PixelSize(volume.type());
  v1::VolumeStreamRequest m;
  m.set_slab(reinterpret_cast<const char*>(volume.bytes()) + z * slice,
             static_cast<std::size_t>(slices * slice));
  return m;
}

// The header, then slabs of the given sizes (the last one takes what is left).
std::vector<v1::VolumeStreamRequest> Messages(const v1::VolumeStreamRequest& header,
                                              const Image& volume, std::vector<int> sizes) {
  std::vector<v1::VolumeStreamRequest> out{header};
  std::int64_t z = 0;
  for (std::size_t i = 0; z < volume.extent().depth; ++i) {
    const std::int64_t n =
        std::min<std::int64_t>(sizes[std::min(i, sizes.size() - 1)], volume.extent().depth - z);
    out.push_back(Slab(volume, z, n));
    z += n;
  }
  return out;
}

void AddStep(v1::MorphologyRequest* r, v1::MorphologyOp op, v1::ElementShape shape, int w, int h,
             int d, int iterations = 1) {
  v1::MorphologyStep* s = r->add_steps();
  s->set_op(op);
  s->set_iterations(iterations);
  v1::StructuringElement* e = s->mutable_element();
  e->set_shape(shape);
  e->set_width(w);
  e->set_height(h);
  e->set_depth(d);
}

// Streams `volume` through `steps` with each slab size list and compares with the unary result.
void ExpectStreamedEqualsUnary(testing::TestServer& server, const Image& volume,
                               const v1::MorphologyRequest& steps,
                               const std::vector<std::vector<int>>& slab_lists) {
  const std::string unary = testing::UnaryMorphology(server.stub(), volume, steps);
  ASSERT_EQ(unary.size(), volume.size_bytes());
  v1::VolumeStreamRequest header = Header(volume);
  *header.mutable_header()->mutable_morphology() = steps;
  for (const std::vector<int>& sizes : slab_lists) {
    const StreamOutcome out = RunStream(server.stub(), Messages(header, volume, sizes));
    ASSERT_TRUE(out.status.ok()) << out.status.error_message();
    EXPECT_TRUE(out.data == unary) << "slabs of " << sizes[0] << " first";
    std::uint32_t z = 0;
    for (const auto& [begin, slices] : out.slabs) {
      EXPECT_EQ(begin, z);
      z += slices;
    }
    EXPECT_EQ(z, volume.extent().depth);
  }
}

TEST(VolumeStreamPlan, ReachSumsEveryPrimitivePassOfTheChain) {
  auto flat = StructuringElement::Create(ElementSpec{ElementShape::kRect, 5, 5, 0, -1, -1, -1, {}});
  auto deep = StructuringElement::Create(ElementSpec{ElementShape::kRect, 3, 3, 5, -1, -1, 1, {}});
  ASSERT_TRUE(flat.ok() && deep.ok());
  EXPECT_EQ(MorphologyZReach({{MorphOp::kDilate, *flat, 3, BorderMode::kNeutral, 0}}), 0);
  // anchor_z 1 of depth 5: 3 slices on the far side.
  EXPECT_EQ(MorphologyZReach({{MorphOp::kErode, *deep, 1, BorderMode::kNeutral, 0}}), 3);
  EXPECT_EQ(MorphologyZReach({{MorphOp::kOpen, *deep, 2, BorderMode::kNeutral, 0},
                              {MorphOp::kDilate, *flat, 1, BorderMode::kNeutral, 0}}),
            12);
}

TEST(VolumeStreamPlan, WindowsWaitForTheHaloAndClipAtTheEnds) {
  // Nothing until slice 0's halo (2 slices) has arrived.
  EXPECT_FALSE(NextSlabWindow(10, 2, 2, 0, 100).has_value());
  EXPECT_EQ(NextSlabWindow(10, 2, 3, 0, 100), (SlabWindow{0, 1, 0, 3}));
  EXPECT_EQ(NextSlabWindow(10, 2, 7, 1, 100), (SlabWindow{1, 5, 0, 7}));
  EXPECT_EQ(NextSlabWindow(10, 2, 7, 1, 2), (SlabWindow{1, 3, 0, 5}));
  // The whole volume: the last slices need no more input.
  EXPECT_EQ(NextSlabWindow(10, 2, 10, 5, 100), (SlabWindow{5, 10, 3, 10}));
  EXPECT_FALSE(NextSlabWindow(10, 2, 10, 10, 100).has_value());
  EXPECT_EQ(NextSlabWindow(4, 0, 1, 0, 100), (SlabWindow{0, 1, 0, 1}));
}

TEST(VolumeStream, PerSliceElementEqualsUnaryForEverySlabSize) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU16, Extent{37, 23, 11}, 21);
  v1::MorphologyRequest steps;
  AddStep(&steps, v1::MORPHOLOGY_OP_DILATE, v1::ELEMENT_SHAPE_ELLIPSE, 5, 7, 0);
  ExpectStreamedEqualsUnary(server, volume, steps, {{1}, {3}, {4, 7}, {11}, {2, 5, 1}});
}

TEST(VolumeStream, ThreeDimensionalElementsAndChainsEqualUnary) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{19, 13, 17}, 22);
  v1::MorphologyRequest steps;
  AddStep(&steps, v1::MORPHOLOGY_OP_OPEN, v1::ELEMENT_SHAPE_ELLIPSE, 3, 5, 3);
  AddStep(&steps, v1::MORPHOLOGY_OP_DILATE, v1::ELEMENT_SHAPE_CROSS, 3, 3, 0, 2);
  AddStep(&steps, v1::MORPHOLOGY_OP_TOP_HAT, v1::ELEMENT_SHAPE_RECT, 3, 1, 4);
  steps.mutable_steps(2)->mutable_element()->set_anchor_z(0);  // asymmetric in z
  ExpectStreamedEqualsUnary(server, volume, steps, {{1}, {2}, {5, 3}, {17}, {16, 1}});
}

TEST(VolumeStream, FloatVolumeWithConstantBorderEqualsUnary) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kF32, Extent{16, 9, 7}, 23);
  v1::MorphologyRequest steps;
  AddStep(&steps, v1::MORPHOLOGY_OP_GRADIENT, v1::ELEMENT_SHAPE_RECT, 3, 3, 3);
  steps.mutable_steps(0)->set_border_mode(v1::BORDER_MODE_CONSTANT);
  steps.mutable_steps(0)->set_border_value(0.25);
  AddStep(&steps, v1::MORPHOLOGY_OP_ERODE, v1::ELEMENT_SHAPE_RECT, 1, 1, 2);
  ExpectStreamedEqualsUnary(server, volume, steps, {{1}, {3}, {7}});
}

TEST(VolumeStream, GradientEqualsUnaryPlaneByPlanePerSlab) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kI16, Extent{29, 21, 5}, 24);
  v1::GradientRequest unary;
  SetImageHeader(volume.view(), unary.mutable_input()->mutable_image());
  unary.mutable_input()->mutable_image()->set_data(reinterpret_cast<const char*>(volume.bytes()),
                                                   volume.size_bytes());
  unary.set_kernel_length(5);
  unary.set_magnitude(true);
  unary.set_angle(true);
  grpc::ClientContext ctx;
  v1::GradientResponse expected;
  ASSERT_TRUE(server.stub().Gradient(&ctx, unary, &expected).ok());
  v1::VolumeStreamRequest header = Header(volume);
  v1::GradientRequest* g = header.mutable_header()->mutable_gradient();
  g->set_kernel_length(5);
  g->set_magnitude(true);
  g->set_angle(true);
  const std::int64_t plane = volume.extent().SlicePixels() * 4;
  for (const std::vector<int>& sizes : std::vector<std::vector<int>>{{1}, {2}, {5}}) {
    const StreamOutcome out = RunStream(server.stub(), Messages(header, volume, sizes));
    ASSERT_TRUE(out.status.ok()) << out.status.error_message();
    // Each slab: gx's slices, gy's, magnitude's, angle's.
    std::string gx, gy, mag, angle;
    std::size_t offset = 0;
    for (const auto& [begin, slices] : out.slabs) {
      const std::size_t n = slices * plane;
      for (std::string* dst : {&gx, &gy, &mag, &angle}) {
        dst->append(out.data, offset, n);
        offset += n;
      }
    }
    EXPECT_TRUE(gx == expected.gx().image().data());
    EXPECT_TRUE(gy == expected.gy().image().data());
    EXPECT_TRUE(mag == expected.magnitude().image().data());
    EXPECT_TRUE(angle == expected.angle().image().data());
  }
}

TEST(VolumeStream, ReturnsTheTimingTrailer) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{8, 8, 3}, 25);
  v1::VolumeStreamRequest header = Header(volume);
  AddStep(header.mutable_header()->mutable_morphology(), v1::MORPHOLOGY_OP_ERODE,
          v1::ELEMENT_SHAPE_RECT, 3, 3, 0);
  const StreamOutcome out = RunStream(server.stub(), Messages(header, volume, {1}));
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_NE(out.timing.find("kernel_us="), std::string::npos) << out.timing;
}

TEST(VolumeStream, MalformedStreamsGetInvalidArgumentNamingTheField) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU16, Extent{10, 6, 4}, 26);
  v1::VolumeStreamRequest header = Header(volume);
  AddStep(header.mutable_header()->mutable_morphology(), v1::MORPHOLOGY_OP_DILATE,
          v1::ELEMENT_SHAPE_RECT, 3, 3, 3);
  v1::VolumeStreamRequest odd;
  odd.set_slab(std::string(10 * 6 * 2 + 1, '\0'));
  v1::VolumeStreamRequest with_data = header;
  with_data.mutable_header()->mutable_volume()->set_data("xx");
  v1::VolumeStreamRequest with_input = header;
  with_input.mutable_header()->mutable_morphology()->mutable_input()->set_handle("h");
  v1::VolumeStreamRequest empty;
  empty.set_slab("");
  v1::VolumeStreamRequest no_op = Header(volume);
  v1::VolumeStreamRequest bad_step = header;
  bad_step.mutable_header()->mutable_morphology()->mutable_steps(0)->mutable_element()->set_width(
      0);
  struct Case {
    const char* name;
    std::vector<v1::VolumeStreamRequest> messages;
    const char* field;
  };
  const std::vector<Case> cases = {
      {"no messages", {}, "header:"},
      {"slab first", {Slab(volume, 0, 4)}, "header:"},
      {"header twice", {header, header}, "header:"},
      {"header only", {header}, "slab: the stream ended after 0 of 4"},
      {"stops mid-volume", {header, Slab(volume, 0, 3)}, "slab: the stream ended after 3 of 4"},
      {"not whole slices", {header, odd}, "slab: 121 bytes"},
      {"empty slab", {header, empty, Slab(volume, 0, 4)}, "slab: 0 bytes"},
      {"message without content", {header, v1::VolumeStreamRequest()}, "content:"},
      {"too many slices", {header, Slab(volume, 0, 3), Slab(volume, 0, 2)}, "more than the volume"},
      {"header carries data", {with_data}, "header.volume.data"},
      {"operation's input set", {with_input}, "header.morphology.input"},
      {"no operation", {no_op}, "header.operation"},
      {"bad element", {bad_step}, "header.morphology.steps[0].element.width"},
  };
  for (const Case& c : cases) {
    const StreamOutcome out = RunStream(server.stub(), c.messages);
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.name;
    EXPECT_NE(out.status.error_message().find(c.field), std::string::npos)
        << c.name << ": " << out.status.error_message();
  }
  // The server still serves.
  const StreamOutcome ok = RunStream(server.stub(), Messages(header, volume, {2}));
  EXPECT_TRUE(ok.status.ok()) << ok.status.error_message();
}

TEST(VolumeStream, CancellingMidVolumeEndsTheCallAndTheServerServesOn) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{32, 32, 6}, 28);
  v1::VolumeStreamRequest header = Header(volume);
  AddStep(header.mutable_header()->mutable_morphology(), v1::MORPHOLOGY_OP_DILATE,
          v1::ELEMENT_SHAPE_RECT, 3, 3, 3);
  {
    grpc::ClientContext ctx;
    auto stream = server.stub().ProcessVolumeStream(&ctx);
    ASSERT_TRUE(stream->Write(header));
    ASSERT_TRUE(stream->Write(Slab(volume, 0, 3)));
    ctx.TryCancel();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  const StreamOutcome ok = RunStream(server.stub(), Messages(header, volume, {2}));
  EXPECT_TRUE(ok.status.ok()) << ok.status.error_message();
}

TEST(VolumeStream, AStreamThatStallsPastItsDeadlineEndsWithDeadlineExceeded) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{16, 16, 4}, 29);
  v1::VolumeStreamRequest header = Header(volume);
  AddStep(header.mutable_header()->mutable_morphology(), v1::MORPHOLOGY_OP_ERODE,
          v1::ELEMENT_SHAPE_RECT, 3, 3, 0);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  auto stream = server.stub().ProcessVolumeStream(&ctx);
  ASSERT_TRUE(stream->Write(header));
  ASSERT_TRUE(stream->Write(Slab(volume, 0, 1)));
  v1::VolumeStreamResponse first;
  EXPECT_TRUE(stream->Read(&first));  // slice 0 needs no halo: it comes back before the stall
  EXPECT_EQ(first.z_begin(), 0u);
  v1::VolumeStreamResponse more;
  EXPECT_FALSE(stream->Read(&more));  // then nothing until the deadline ends the call
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

TEST(VolumeStream, SlabOverTheInflightBudgetIsResourceExhausted) {
  ServerOptions options = testing::TestServerOptions();
  options.max_inflight_bytes_per_device = 4096;
  testing::TestServer server(options);
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{64, 64, 3}, 27);
  v1::VolumeStreamRequest header = Header(volume);
  AddStep(header.mutable_header()->mutable_morphology(), v1::MORPHOLOGY_OP_ERODE,
          v1::ELEMENT_SHAPE_RECT, 3, 3, 0);
  const StreamOutcome out = RunStream(server.stub(), Messages(header, volume, {3}));
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(out.status.error_message().find("slab"), std::string::npos)
      << out.status.error_message();
}

}  // namespace
}  // namespace cuimg
