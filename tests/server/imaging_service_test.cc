// The service over a real gRPC channel, in process, on the CPU backend: results, bad requests,
// resident objects, overload and shutdown.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "cuimg/codec/image_codec.h"
#include "cuimg/kernels/group_rectangles.h"
#include "cuimg/kernels/hog_model_file.h"
#include "cuimg/reference/hog_reference.h"
#include "cuimg/reference/morphology_reference.h"
#include "cuimg/reference/pyramid_reference.h"
#include "grpc_protocols/health.grpc.pb.h"
#include "proto/wire_contract.h"
#include "server/validation/proto_conversion.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

Image ReferenceDilate(const Image& image, int size) {
  auto se = StructuringElement::Create(
      ElementSpec{ElementShape::kEllipse, size, size, 0, -1, -1, -1, {}});
  return *MorphologyReference(image, {{MorphOp::kDilate, *se, 1, BorderMode::kNeutral, 0}});
}

Image FromProto(const v1::Image& p) {
  Image out(*PixelTypeFromProto(p.pixel_type(), "x"),
            Extent{p.width(), p.height(), p.depth() == 0 ? 1 : p.depth()}, 1);
  std::memcpy(out.bytes(), p.data().data(), out.size_bytes());
  return out;
}

TEST(ImagingService, MorphologyReturnsTheReferenceResultWithTimingTrailer) {
  testing::TestServer server;
  const Image input = testing::RandomImage(PixelType::kU16, Extent{37, 23, 4}, 5);
  grpc::ClientContext ctx;
  v1::MorphologyResponse response;
  ASSERT_TRUE(server.stub().Morphology(&ctx, testing::DilateRequest(input, 5), &response).ok());
  EXPECT_EQ(testing::FirstMismatch(FromProto(response.result().image()), ReferenceDilate(input, 5)),
            -1);
  EXPECT_EQ(response.result().image().depth(), 4u);
  const auto& trailers = ctx.GetServerTrailingMetadata();
  ASSERT_EQ(trailers.count("cuimg-timing"), 1u);
  EXPECT_NE(std::string(trailers.find("cuimg-timing")->second.data(),
                        trailers.find("cuimg-timing")->second.size())
                .find("kernel_us="),
            std::string::npos);
}

// The stages of the timing trailer do not overlap: together they fit in the total. (The copy
// of inline pixels out of the received bytes runs before queueing and counts in h2d only.)
TEST(ImagingService, TimingTrailerStagesAddUpToAtMostTheTotal) {
  testing::TestServer server;
  const Image input = testing::RandomImage(PixelType::kU8, Extent{4096, 4096, 1}, 6);
  for (int call = 0; call < 3; ++call) {
    grpc::ClientContext ctx;
    v1::MorphologyResponse response;
    ASSERT_TRUE(server.stub().Morphology(&ctx, testing::DilateRequest(input, 3), &response).ok());
    const auto& trailers = ctx.GetServerTrailingMetadata();
    ASSERT_EQ(trailers.count("cuimg-timing"), 1u);
    const auto value = trailers.find("cuimg-timing")->second;
    std::map<std::string, double> stage;
    std::istringstream fields(std::string(value.data(), value.size()));
    for (std::string field; fields >> field;) {
      const std::size_t eq = field.find('=');
      ASSERT_NE(eq, std::string::npos) << field;
      stage[field.substr(0, eq)] = std::stod(field.substr(eq + 1));
    }
    const double sum = stage["queue_us"] + stage["decode_us"] + stage["h2d_us"] +
                       stage["kernel_us"] + stage["d2h_us"];
    EXPECT_GT(stage["h2d_us"], 0.0) << "the 16 MB copy out of the received bytes";
    EXPECT_GE(stage["queue_us"], 0.0);
    // The trailer rounds each stage to 0.1 us.
    EXPECT_LE(sum, stage["total_us"] + 0.5) << std::string(value.data(), value.size());
  }
}

// Returned pyramid levels leave in pieces of at most pinned_message_max_bytes (several levels to
// a piece, or one level alone when it is larger): every level must still be the reference's.
TEST(ImagingService, PyramidLevelsReturnedInPiecesEqualTheReference) {
  ServerOptions options = testing::TestServerOptions();
  options.pinned_message_max_bytes = 4096;
  testing::TestServer server(options);
  const Image input = testing::RandomImage(PixelType::kU8, Extent{97, 61, 1}, 9);
  for (const PixelType out : {PixelType::kF32, PixelType::kU8}) {
    v1::PyramidRequest request;
    v1::Image* image = request.mutable_input()->mutable_image();
    SetImageHeader(input.view(), image);
    image->set_data(reinterpret_cast<const char*>(input.bytes()), input.size_bytes());
    request.set_levels(14);
    request.set_ratio(1.15);
    request.set_output_type(PixelTypeToProto(out));
    grpc::ClientContext ctx;
    v1::PyramidResponse response;
    ASSERT_TRUE(server.stub().Pyramid(&ctx, request, &response).ok());
    PyramidSpec spec;
    spec.levels = 14;
    spec.ratio = 1.15;
    spec.output_type = out;
    absl::StatusOr<std::vector<Image>> want = PyramidReference(input, spec, 1);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ(response.levels_size(), static_cast<int>(want->size()));
    for (int i = 0; i < response.levels_size(); ++i) {
      EXPECT_EQ(testing::FirstMismatch(FromProto(response.levels(i).result().image()), (*want)[i]),
                -1)
          << "level " << i;
    }
  }
}

TEST(ImagingService, DecodesPngInput) {
  testing::TestServer server;
  const Image input = testing::RandomImage(PixelType::kU8, Extent{31, 17, 1}, 8);
  auto png = EncodePng(input.view());
  ASSERT_TRUE(png.ok());
  v1::MorphologyRequest request = testing::DilateRequest(input, 3);
  request.mutable_input()->set_encoded(std::string(png->begin(), png->end()));
  grpc::ClientContext ctx;
  v1::MorphologyResponse response;
  ASSERT_TRUE(server.stub().Morphology(&ctx, request, &response).ok());
  EXPECT_EQ(testing::FirstMismatch(FromProto(response.result().image()), ReferenceDilate(input, 3)),
            -1);
}

TEST(ImagingService, BadRequestsGetInvalidArgumentAndTheServerKeepsServing) {
  testing::TestServer server;
  const Image input = testing::RandomImage(PixelType::kU8, Extent{8, 8, 1}, 1);
  std::vector<std::pair<v1::MorphologyRequest, std::string>> bad;
  bad.emplace_back(testing::DilateRequest(input, 3), "input.image.width");
  bad.back().first.mutable_input()->mutable_image()->set_width(0);
  bad.emplace_back(testing::DilateRequest(input, 3), "input.image.data");
  bad.back().first.mutable_input()->mutable_image()->set_data("short");
  bad.emplace_back(testing::DilateRequest(input, 3), "steps[0].element.width");
  bad.back().first.mutable_steps(0)->mutable_element()->set_width(5000);
  bad.emplace_back(testing::DilateRequest(input, 3), "steps[0].op");
  bad.back().first.mutable_steps(0)->set_op(static_cast<v1::MorphologyOp>(77));
  bad.emplace_back(testing::DilateRequest(input, 3), "input.encoded");
  bad.back().first.mutable_input()->set_encoded("not an image at all");
  bad.emplace_back(testing::DilateRequest(input, 3), "input.handle");
  bad.back().first.mutable_input()->set_handle("img-does-not-exist");
  for (const auto& [request, field] : bad) {
    grpc::ClientContext ctx;
    v1::MorphologyResponse response;
    const grpc::Status status = server.stub().Morphology(&ctx, request, &response);
    EXPECT_TRUE(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
                status.error_code() == grpc::StatusCode::NOT_FOUND)
        << field << ": " << status.error_code();
    EXPECT_NE(status.error_message().find(field), std::string::npos) << status.error_message();
  }
  grpc::ClientContext ctx;
  v1::MorphologyResponse response;
  EXPECT_TRUE(server.stub().Morphology(&ctx, testing::DilateRequest(input, 3), &response).ok());
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(ImagingService, DetectPedestriansReturnsTheReferenceDetections) {
  testing::TestServer server;
  const std::string png = ReadBytes("/usr/share/doc/opencv-doc/examples/data/basketball2.png");
  v1::DetectPedestriansRequest request;
  request.mutable_input()->set_encoded(png);
  grpc::ClientContext ctx;
  v1::DetectPedestriansResponse response;
  const grpc::Status status = server.stub().DetectPedestrians(&ctx, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  // The CPU backend is the reference; grouping is the same function for every backend.
  absl::StatusOr<Image> image = DecodeImage(
      absl::MakeConstSpan(reinterpret_cast<const std::uint8_t*>(png.data()), png.size()));
  ASSERT_TRUE(image.ok());
  absl::StatusOr<HogModel> model =
      ReadHogModelFile(std::string(CUIMG_SOURCE_MODELS_DIR) + "/opencv_people_64x128.hogsvm");
  ASSERT_TRUE(model.ok());
  absl::StatusOr<DetectResult> want = DetectReference(image->view(), *model, DetectSpec{});
  ASSERT_TRUE(want.ok());
  const std::vector<Detection> boxes = FinishDetections(want->geometry, want->hits, DetectSpec{});
  ASSERT_FALSE(boxes.empty());
  ASSERT_EQ(response.detections_size(), static_cast<int>(boxes.size()));
  for (int i = 0; i < response.detections_size(); ++i) {
    const v1::Detection& d = response.detections(i);
    EXPECT_EQ(d.x(), boxes[i].x);
    EXPECT_EQ(d.y(), boxes[i].y);
    EXPECT_EQ(d.width(), boxes[i].width);
    EXPECT_EQ(d.height(), boxes[i].height);
    EXPECT_EQ(d.score(), boxes[i].score);
    if (i > 0) {
      EXPECT_LE(d.score(), response.detections(i - 1).score());
    }
  }
  EXPECT_EQ(response.model(), "opencv_people_64x128");
  EXPECT_EQ(response.levels(), want->geometry.levels.size());
  EXPECT_EQ(response.windows(), static_cast<std::uint64_t>(want->geometry.windows));
  EXPECT_EQ(ctx.GetServerTrailingMetadata().count("cuimg-timing"), 1u);
}

TEST(ImagingService, DetectPedestriansRefusesUnknownModelsAndBadInputs) {
  testing::TestServer server;
  v1::DetectPedestriansRequest request;
  v1::Image* image = request.mutable_input()->mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_U8);
  image->set_width(80);
  image->set_height(140);
  image->set_data(std::string(80 * 140, '\x10'));
  request.set_model("no_such_model");
  {
    grpc::ClientContext ctx;
    v1::DetectPedestriansResponse response;
    const grpc::Status s = server.stub().DetectPedestrians(&ctx, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_NE(s.error_message().find("model: 'no_such_model'"), std::string::npos)
        << s.error_message();
  }
  request.clear_model();
  request.set_win_stride(5);
  {
    grpc::ClientContext ctx;
    v1::DetectPedestriansResponse response;
    const grpc::Status s = server.stub().DetectPedestrians(&ctx, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("win_stride"), std::string::npos) << s.error_message();
  }
  // A flat image: no detections, no error.
  request.set_win_stride(0);
  grpc::ClientContext ctx;
  v1::DetectPedestriansResponse response;
  ASSERT_TRUE(server.stub().DetectPedestrians(&ctx, request, &response).ok());
  EXPECT_EQ(response.detections_size(), 0);
}

TEST(ImagingService, ListModelsListsTheRepositoryModels) {
  testing::TestServer server;
  grpc::ClientContext ctx;
  v1::ListModelsResponse response;
  ASSERT_TRUE(server.stub().ListModels(&ctx, v1::ListModelsRequest{}, &response).ok());
  ASSERT_EQ(response.models_size(), 2);
  const v1::DetectorModel& daimler = response.models(0);
  const v1::DetectorModel& people = response.models(1);
  EXPECT_EQ(daimler.name(), "opencv_daimler_48x96");
  EXPECT_EQ(daimler.window_width(), 48u);
  EXPECT_EQ(daimler.descriptor_size(), 1980u);
  EXPECT_FALSE(daimler.gamma_correction());
  EXPECT_EQ(people.name(), "opencv_people_64x128");
  EXPECT_EQ(people.window_height(), 128u);
  EXPECT_EQ(people.descriptor_size(), 3780u);
  EXPECT_TRUE(people.gamma_correction());
  EXPECT_NE(people.description().find("OpenCV"), std::string::npos);
}

TEST(ImagingService, StartFailsNamingAModelFileThatDoesNotParse) {
  const std::string dir = ::testing::TempDir() + "/cuimg_bad_models";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/broken.hogsvm") << "cuimg-hog-svm 1\nwindow 64\n";
  ServerOptions options = testing::TestServerOptions();
  options.models_dir = dir;
  absl::StatusOr<std::unique_ptr<CuimgServer>> server =
      CuimgServer::Start(options, CreateCpuBackend(options));
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find(dir + "/broken.hogsvm"), std::string::npos)
      << server.status();
  options.models_dir = dir + "/missing";
  server = CuimgServer::Start(options, CreateCpuBackend(options));
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kNotFound);
}

TEST(ImagingService, ResidentResultsAreReusableByHandle) {
  testing::TestServer server;
  const Image input = testing::RandomImage(PixelType::kI16, Extent{20, 10, 3}, 11);
  // A result kept resident, without pixels in the response.
  v1::MorphologyRequest first = testing::DilateRequest(input, 3);
  first.mutable_output()->set_keep_resident(true);
  first.mutable_output()->set_omit_data(true);
  v1::MorphologyResponse r1;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(server.stub().Morphology(&ctx, first, &r1).ok());
  }
  EXPECT_FALSE(r1.result().has_image());
  ASSERT_FALSE(r1.result().handle().empty());
  // Dilating it again by handle equals dilating twice.
  v1::MorphologyRequest second = testing::DilateRequest(input, 3);
  second.mutable_input()->set_handle(r1.result().handle());
  v1::MorphologyResponse r2;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(server.stub().Morphology(&ctx, second, &r2).ok());
  }
  EXPECT_EQ(testing::FirstMismatch(FromProto(r2.result().image()),
                                   ReferenceDilate(ReferenceDilate(input, 3), 3)),
            -1);
  // Download streams the resident result back.
  {
    grpc::ClientContext ctx;
    v1::DownloadRequest request;
    request.set_handle(r1.result().handle());
    request.set_chunk_bytes(1 << 16);
    auto reader = server.stub().Download(&ctx, request);
    v1::DownloadResponse message;
    std::string bytes;
    v1::Image header;
    while (reader->Read(&message)) {
      if (message.has_image()) {
        header = message.image();
        bytes += header.data();
      } else {
        bytes += message.chunk();
      }
    }
    ASSERT_TRUE(reader->Finish().ok());
    header.set_data(bytes);
    EXPECT_EQ(testing::FirstMismatch(FromProto(header), ReferenceDilate(input, 3)), -1);
  }
  // List shows it; Release frees it; using it afterwards is NOT_FOUND.
  {
    grpc::ClientContext ctx;
    v1::ListResidentResponse list;
    ASSERT_TRUE(server.stub().ListResident(&ctx, v1::ListResidentRequest(), &list).ok());
    ASSERT_EQ(list.objects_size(), 1);
    EXPECT_EQ(list.objects(0).size_bytes(), input.size_bytes());
    EXPECT_EQ(list.used_bytes(), input.size_bytes());
  }
  {
    grpc::ClientContext ctx;
    v1::ReleaseRequest release;
    release.set_handle(r1.result().handle());
    v1::ReleaseResponse out;
    ASSERT_TRUE(server.stub().Release(&ctx, release, &out).ok());
  }
  grpc::ClientContext ctx;
  v1::MorphologyResponse r3;
  EXPECT_EQ(server.stub().Morphology(&ctx, second, &r3).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(ImagingService, UploadInChunksThenUseByHandle) {
  testing::TestServer server;
  const Image input = testing::RandomImage(PixelType::kF32, Extent{64, 32, 2}, 13);
  grpc::ClientContext ctx;
  v1::UploadResponse response;
  auto writer = server.stub().Upload(&ctx, &response);
  v1::UploadRequest first;
  SetImageHeader(input.view(), first.mutable_image());
  const char* bytes = reinterpret_cast<const char*>(input.bytes());
  first.mutable_image()->set_data(bytes, 1000);
  ASSERT_TRUE(writer->Write(first));
  for (std::size_t off = 1000; off < input.size_bytes(); off += 3000) {
    v1::UploadRequest chunk;
    chunk.set_chunk(bytes + off, std::min<std::size_t>(3000, input.size_bytes() - off));
    ASSERT_TRUE(writer->Write(chunk));
  }
  writer->WritesDone();
  ASSERT_TRUE(writer->Finish().ok());
  ASSERT_EQ(response.object().size_bytes(), input.size_bytes());

  v1::MorphologyRequest request = testing::DilateRequest(input, 5);
  request.mutable_input()->set_handle(response.object().handle());
  grpc::ClientContext ctx2;
  v1::MorphologyResponse result;
  ASSERT_TRUE(server.stub().Morphology(&ctx2, request, &result).ok());
  EXPECT_EQ(testing::FirstMismatch(FromProto(result.result().image()), ReferenceDilate(input, 5)),
            -1);
}

TEST(ImagingService, UploadThatEndsEarlyIsRejected) {
  testing::TestServer server;
  grpc::ClientContext ctx;
  v1::UploadResponse response;
  auto writer = server.stub().Upload(&ctx, &response);
  v1::UploadRequest first;
  first.mutable_image()->set_pixel_type(v1::PIXEL_TYPE_U8);
  first.mutable_image()->set_width(100);
  first.mutable_image()->set_height(100);
  first.mutable_image()->set_data(std::string(500, 'x'));
  ASSERT_TRUE(writer->Write(first));
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("500 of 10000"), std::string::npos)
      << status.error_message();
}

// One worker and one admission slot: a second call while one runs is overload.
ServerOptions OneSlotOptions() {
  ServerOptions options = testing::TestServerOptions();
  options.worker_threads = 1;
  options.max_inflight_requests = 1;
  return options;
}

TEST(ImagingService, OverloadIsAnsweredWithResourceExhausted) {
  testing::TestServer server(OneSlotOptions());
  // Slow on the CPU backend: a 61x61 disk over 300x300 pixels.
  const Image input = testing::RandomImage(PixelType::kU8, Extent{300, 300, 1}, 3);
  const v1::MorphologyRequest request = testing::DilateRequest(input, 61);
  std::vector<std::future<grpc::Status>> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      grpc::ClientContext ctx;
      v1::MorphologyResponse response;
      return server.stub().Morphology(&ctx, request, &response);
    }));
  }
  int ok = 0;
  int exhausted = 0;
  for (auto& f : calls) {
    const grpc::Status status = f.get();
    ok += status.ok();
    if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) continue;
    ++exhausted;
    // Worth a retry: the reason says so (and the retry hints follow from it).
    ASSERT_TRUE(ParseErrorDetails(status).has_value());
    EXPECT_EQ(ParseErrorDetails(status)->reason, "OVERLOADED");
    EXPECT_EQ(ParseErrorDetails(status)->field, "");
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(exhausted, 1);
  EXPECT_EQ(ok + exhausted, 6);
}

// Shedding load must cost little: a full server refuses before it parses or validates, so even
// a malformed request is told to retry, with the hint.
TEST(ImagingService, AFullServerRefusesBeforeReadingTheRequest) {
  testing::TestServer server(OneSlotOptions());
  const Image input = testing::RandomImage(PixelType::kU8, Extent{600, 600, 1}, 3);
  auto slow = std::async(std::launch::async, [&] {
    grpc::ClientContext ctx;
    v1::MorphologyResponse response;
    return server.stub()
        .Morphology(&ctx, testing::DilateRequest(input, 61), &response)
        .error_code();
  });
  v1::MorphologyRequest malformed = testing::DilateRequest(input, 3);
  malformed.mutable_input()->mutable_image()->set_data("short");
  int hinted = 0;
  while (hinted == 0 && slow.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    grpc::ClientContext ctx;
    v1::MorphologyResponse response;
    const grpc::Status status = server.stub().Morphology(&ctx, malformed, &response);
    if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      const auto& trailers = ctx.GetServerTrailingMetadata();
      hinted += trailers.count("cuimg-retry-after-ms") == 1;
    } else {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    }
  }
  EXPECT_EQ(slow.get(), grpc::StatusCode::OK);
  EXPECT_GE(hinted, 1);
}

TEST(ImagingService, HealthTurnsNotServingAtShutdownAndInFlightRequestsFinish) {
  ServerOptions options = testing::TestServerOptions();
  options.worker_threads = 1;
  testing::TestServer server(options);
  auto health = grpc::health::v1::Health::NewStub(server.channel());
  {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service("cuimg.v1.Imaging");
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_TRUE(health->Check(&ctx, request, &response).ok());
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  }
  const Image input = testing::RandomImage(PixelType::kU8, Extent{300, 200, 1}, 3);
  auto slow = std::async(std::launch::async, [&] {
    grpc::ClientContext ctx;
    v1::MorphologyResponse response;
    return server.stub()
        .Morphology(&ctx, testing::DilateRequest(input, 41), &response)
        .error_code();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.server().Shutdown(absl::Seconds(30));
  EXPECT_EQ(slow.get(), grpc::StatusCode::OK);
}

}  // namespace
}  // namespace cuimg
