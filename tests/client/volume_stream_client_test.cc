// The client's streamed volumes (client/commands/volume_stream.h) against an in-process server on
// the CPU backend: split over several streams, each on its own connection, the volume equals the
// unary result bit for bit (3D elements and chains, whose halo each stream must carry, and
// Gradient); the client's z reach equals the server's for every kind of step; a stream whose
// connection fails at first is sent again once it connects, and one that never connects fails the
// volume.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/commands/volume_stream.h"
#include "server/scheduling/volume_stream_plan.h"
#include "server/validation/proto_conversion.h"
#include "server/validation/request_validation.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

v1::MorphologyStep Step(v1::MorphologyOp op, v1::ElementShape shape, int w, int h, int d,
                        int iterations = 1) {
  v1::MorphologyStep s;
  s.set_op(op);
  s.set_iterations(iterations);
  s.mutable_element()->set_shape(shape);
  s.mutable_element()->set_width(w);
  s.mutable_element()->set_height(h);
  s.mutable_element()->set_depth(d);
  return s;
}

// A Morphology stream header of one step.
v1::VolumeStreamHeader OneStep(const v1::MorphologyStep& step) {
  v1::VolumeStreamHeader header;
  *header.mutable_morphology()->add_steps() = step;
  return header;
}

ConnectionOptions Local(testing::TestServer& server) {
  ConnectionOptions c;
  c.target = absl::StrCat("127.0.0.1:", server.server().grpc_port());
  return c;
}

std::string Bytes(const Image& image) {
  return std::string(reinterpret_cast<const char*>(image.bytes()), image.size_bytes());
}

TEST(VolumeStreamClient, ReachEqualsTheServersForEveryKindOfStep) {
  const v1::MorphologyOp ops[] = {v1::MORPHOLOGY_OP_ERODE,    v1::MORPHOLOGY_OP_DILATE,
                                  v1::MORPHOLOGY_OP_OPEN,     v1::MORPHOLOGY_OP_CLOSE,
                                  v1::MORPHOLOGY_OP_GRADIENT, v1::MORPHOLOGY_OP_TOP_HAT,
                                  v1::MORPHOLOGY_OP_BLACK_HAT};
  int checked = 0;
  for (v1::MorphologyOp op : ops) {
    for (int depth : {0, 1, 2, 4, 7}) {
      for (int iterations : {0, 1, 3}) {
        for (int anchor : {-1, 0, 1, 3, 6}) {
          if (anchor >= std::max(depth, 1)) continue;
          v1::VolumeStreamHeader header;
          header.mutable_volume()->set_pixel_type(v1::PIXEL_TYPE_U8);
          header.mutable_volume()->set_width(8);
          header.mutable_volume()->set_height(8);
          header.mutable_volume()->set_depth(8);
          v1::MorphologyRequest* m = header.mutable_morphology();
          *m->add_steps() = Step(op, v1::ELEMENT_SHAPE_RECT, 3, 3, depth, iterations);
          if (anchor >= 0) m->mutable_steps(0)->mutable_element()->set_anchor_z(anchor);
          *m->add_steps() = Step(v1::MORPHOLOGY_OP_DILATE, v1::ELEMENT_SHAPE_ELLIPSE, 3, 3, 3);
          absl::StatusOr<VolumeStreamJob> job = ValidateVolumeStreamHeader(header, RequestLimits{});
          ASSERT_TRUE(job.ok()) << job.status();
          EXPECT_EQ(HeaderZReach(header), VolumeStreamZReach(*job))
              << "op " << op << " depth " << depth << " iterations " << iterations << " anchor "
              << anchor;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 100);
  v1::VolumeStreamHeader gradient;
  gradient.mutable_gradient()->set_kernel_length(7);
  EXPECT_EQ(HeaderZReach(gradient), 0);
}

TEST(VolumeStreamClient, ReachStopsAtTheFirstGlobalStepAsTheServers) {
  v1::MorphologyStep threshold;
  threshold.set_op(v1::MORPHOLOGY_OP_THRESHOLD);
  threshold.set_hi(9);
  v1::MorphologyStep fill;
  fill.set_op(v1::MORPHOLOGY_OP_FILL_HOLES);
  const v1::MorphologyStep dilate = Step(v1::MORPHOLOGY_OP_DILATE, v1::ELEMENT_SHAPE_RECT, 3, 3, 5);
  const v1::MorphologyStep open_rec =
      Step(v1::MORPHOLOGY_OP_OPEN_REC, v1::ELEMENT_SHAPE_ELLIPSE, 3, 3, 3);
  const std::vector<std::vector<v1::MorphologyStep>> chains = {
      {dilate, threshold, dilate},  // threshold is local: every step counts
      {dilate, fill, dilate},
      {fill, dilate},
      {dilate, open_rec, dilate},
      {threshold, dilate, dilate, fill, dilate, dilate}};
  for (std::size_t i = 0; i < chains.size(); ++i) {
    v1::VolumeStreamHeader header;
    header.mutable_volume()->set_pixel_type(v1::PIXEL_TYPE_U16);
    header.mutable_volume()->set_width(8);
    header.mutable_volume()->set_height(8);
    header.mutable_volume()->set_depth(12);
    for (const v1::MorphologyStep& s : chains[i]) *header.mutable_morphology()->add_steps() = s;
    absl::StatusOr<VolumeStreamJob> job = ValidateVolumeStreamHeader(header, RequestLimits{});
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(HeaderZReach(header), VolumeStreamZReach(*job)) << "chain " << i;
    EXPECT_EQ(HeaderHasGlobalStep(header), i != 0) << "chain " << i;
  }
}

TEST(VolumeStreamClient, AGlobalChainTakesOneStreamAndEqualsUnary) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{13, 11, 17}, 5);
  v1::VolumeStreamHeader header;
  *header.mutable_morphology()->add_steps() =
      Step(v1::MORPHOLOGY_OP_DILATE, v1::ELEMENT_SHAPE_RECT, 3, 3, 3);
  header.mutable_morphology()->add_steps()->set_op(v1::MORPHOLOGY_OP_FILL_HOLES);
  const ConnectionOptions connection = Local(server);
  absl::StatusOr<StreamedVolume> streamed =
      StreamVolume(ConnectStreams(connection, 4), connection, header, volume, 2);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(streamed->stream_timings.size(), 1u);
  EXPECT_EQ(Bytes(streamed->planes[0]),
            testing::UnaryMorphology(server.stub(), volume, header.morphology()));
}

TEST(VolumeStreamClient, ChainsOf3DElementsOverSeveralStreamsEqualUnary) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU16, Extent{21, 13, 29}, 31);
  v1::MorphologyRequest steps;
  *steps.add_steps() = Step(v1::MORPHOLOGY_OP_OPEN, v1::ELEMENT_SHAPE_ELLIPSE, 3, 5, 5, 2);
  *steps.add_steps() = Step(v1::MORPHOLOGY_OP_DILATE, v1::ELEMENT_SHAPE_RECT, 3, 1, 4);
  steps.mutable_steps(1)->mutable_element()->set_anchor_z(0);  // asymmetric in z
  const std::string unary = testing::UnaryMorphology(server.stub(), volume, steps);
  ASSERT_EQ(unary.size(), volume.size_bytes());
  const ConnectionOptions connection = Local(server);
  // Reach 2 * 2 * 2 + 3 = 11: with 7 streams most of each one's input is halo.
  for (int streams : {1, 2, 4, 7, 40}) {
    for (int slab : {1, 4, 29}) {
      v1::VolumeStreamHeader header;
      *header.mutable_morphology() = steps;
      absl::StatusOr<StreamedVolume> out =
          StreamVolume(ConnectStreams(connection, streams), connection, header, volume, slab);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->planes.size(), 1u);
      EXPECT_TRUE(Bytes(out->planes[0]) == unary) << streams << " streams, slabs of " << slab;
      // 40 streams become 14: every stream gets at least 2 slices.
      EXPECT_EQ(out->stream_timings.size(), static_cast<std::size_t>(std::min(streams, 14)));
    }
  }
}

TEST(VolumeStreamClient, GradientOverSeveralStreamsEqualsUnaryPlaneByPlane) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kF32, Extent{17, 11, 9}, 32);
  v1::GradientRequest unary;
  SetImageHeader(volume.view(), unary.mutable_input()->mutable_image());
  unary.mutable_input()->mutable_image()->set_data(reinterpret_cast<const char*>(volume.bytes()),
                                                   volume.size_bytes());
  unary.set_magnitude(true);
  grpc::ClientContext ctx;
  v1::GradientResponse expected;
  ASSERT_TRUE(server.stub().Gradient(&ctx, unary, &expected).ok());
  v1::VolumeStreamHeader header;
  header.mutable_gradient()->set_magnitude(true);
  const ConnectionOptions connection = Local(server);
  absl::StatusOr<StreamedVolume> out =
      StreamVolume(ConnectStreams(connection, 3), connection, header, volume, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->planes.size(), 3u);
  EXPECT_TRUE(Bytes(out->planes[0]) == expected.gx().image().data());
  EXPECT_TRUE(Bytes(out->planes[1]) == expected.gy().image().data());
  EXPECT_TRUE(Bytes(out->planes[2]) == expected.magnitude().image().data());
  EXPECT_NE(out->server_timing().find("stream 3/3: "), std::string::npos) << out->server_timing();
}

TEST(VolumeStreamClient, ABadHeaderFailsWithTheServersMessage) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{9, 9, 8}, 33);
  const ConnectionOptions connection = Local(server);
  absl::StatusOr<StreamedVolume> out = StreamVolume(
      ConnectStreams(connection, 2), connection,
      OneStep(Step(v1::MORPHOLOGY_OP_DILATE, v1::ELEMENT_SHAPE_RECT, 0, 3, 0)), volume, 2);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("steps[0].element.width"), std::string::npos)
      << out.status();
}

TEST(VolumeStreamClient, TheFailedStreamsStatusIsWhatTheCallerGets) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{48, 40, 40}, 34);
  const v1::VolumeStreamHeader header =
      OneStep(Step(v1::MORPHOLOGY_OP_CLOSE, v1::ELEMENT_SHAPE_ELLIPSE, 5, 5, 5));
  const ConnectionOptions connection = Local(server);
  std::vector<std::shared_ptr<grpc::Channel>> channels = ConnectStreams(connection, 4);
  // The third stream's connection goes nowhere (nothing listens on port 1), also when it is
  // tried again: its UNAVAILABLE is what the caller gets, not the CANCELLED of the streams it
  // stopped.
  channels[2] = grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
  absl::StatusOr<StreamedVolume> out = StreamVolume(channels, connection, header, volume, 1);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable) << out.status();
}

// A port nothing listens on now (bound, read and released).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), size), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size), 0);
  close(fd);
  return ntohs(address.sin_port);
}

TEST(VolumeStreamClient, AStreamWhoseConnectionFailsIsSentAgainOnceItConnects) {
  testing::TestServer server;
  const Image volume = testing::RandomImage(PixelType::kU16, Extent{23, 17, 12}, 35);
  const v1::VolumeStreamHeader header =
      OneStep(Step(v1::MORPHOLOGY_OP_OPEN, v1::ELEMENT_SHAPE_ELLIPSE, 5, 3, 3));
  const std::string unary = testing::UnaryMorphology(server.stub(), volume, header.morphology());
  const ConnectionOptions connection = Local(server);
  std::vector<std::shared_ptr<grpc::Channel>> channels = ConnectStreams(connection, 3);
  // The second stream's server starts 0.6 s late: its first connection is refused, and by then
  // the channel's own retries (at most 0.35 s of backoff) have given up, as they do when gRPC
  // 1.51 fails a connect() spuriously. Its part must be streamed again, not fail the volume.
  ConnectionOptions late = connection;
  late.target = absl::StrCat("127.0.0.1:", FreePort());
  channels[1] = MakeChannel(late, 1);
  std::unique_ptr<testing::TestServer> late_server;
  std::thread start_late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    ServerOptions options = testing::TestServerOptions();
    options.listen_address = late.target;
    late_server = std::make_unique<testing::TestServer>(options);
  });
  absl::StatusOr<StreamedVolume> out = StreamVolume(channels, connection, header, volume, 2);
  start_late.join();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(Bytes(out->planes[0]) == unary);
  EXPECT_EQ(out->stream_attempts, (std::vector<int>{1, 2, 1}));
  EXPECT_NE(out->server_timing().find("stream 2/3 (sent twice): "), std::string::npos)
      << out->server_timing();
}

}  // namespace
}  // namespace cuimg

namespace cuimg {
namespace {

TEST(VolumeStreamClient, SummaryIsOneReadableLineWhoseSlabSumsAreNotPartsOfTheWallTime) {
  StreamedVolume v;
  // Each trailer sums its slabs' stages, which overlap: kernel_us exceeds total_us.
  v.stream_timings = {
      "queue_us=10.0 decode_us=0.0 h2d_us=1000.0 kernel_us=300000.0 d2h_us=2000.0 "
      "total_us=200000.0 device=0",
      "queue_us=12.0 decode_us=0.0 h2d_us=500.0 kernel_us=250000.0 d2h_us=500.0 "
      "total_us=180000.0 device=0"};
  v.stream_attempts = {1, 2};
  v.stream_slabs = {20, 18};
  const std::string line = v.summary(250.0, 157286400);
  EXPECT_EQ(line,
            "157.3 MB at 629.1 MB/s over 2 streams, 38 slabs (stream 2 sent twice); server: "
            "longest stream 200.0 ms, slab stages summed 550.0 ms kernel + 4.0 ms copies "
            "(2.8 slabs at once)");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line.find("kernel_us"), std::string::npos);
}

}  // namespace
}  // namespace cuimg
