// Batches in process (types.proto): what reaches the backend. Same-shape 2D entries of a
// Morphology or Gradient batch run as one volume, read where they arrived (one buffer for every
// entry's pixels, no gathering copy); other entries run alone; a volume the backend refuses runs
// again image by image, so each entry still gets its own outcome. Results equal the reference's.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuimg/common/status_macros.h"
#include "cuimg/reference/gradient_reference.h"
#include "cuimg/reference/morphology_reference.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

// The CPU backend, recording the extent of each Morphology and Gradient input and the host
// buffers it hands out; `refuse_volumes` makes it refuse every volume (depth > 1) as a GPU out of
// memory would.
class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(const ServerOptions& options) : cpu_(CreateCpuBackend(options)) {}

  std::vector<Extent> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  int buffers() const { return buffers_.load(); }
  void refuse_volumes() { refuse_volumes_ = true; }

  absl::Status Morphology(const InputImage& in, const ImageView& out,
                          const std::vector<MorphologyStep>& steps, const ImageView* marker,
                          StageTimes* times, const CancelToken& cancel) override {
    CUIMG_RETURN_IF_ERROR(Record(in.extent));
    return cpu_->Morphology(in, out, steps, marker, times, cancel);
  }
  absl::StatusOr<std::vector<RegionStats>> Label(const InputImage& in, const LabelSpec& spec,
                                                 const ImageView* intensity,
                                                 const ImageView& labels, StageTimes* times,
                                                 const CancelToken& cancel) override {
    return cpu_->Label(in, spec, intensity, labels, times, cancel);
  }
  absl::Status Gradient(const InputImage& in, const GradientSpec& spec, const GradientOutputs& out,
                        StageTimes* times, const CancelToken& cancel) override {
    CUIMG_RETURN_IF_ERROR(Record(in.extent));
    return cpu_->Gradient(in, spec, out, times, cancel);
  }
  std::unique_ptr<HostBuffer> AllocateHostBuffer(std::size_t bytes) override {
    ++buffers_;
    return cpu_->AllocateHostBuffer(bytes);
  }

  absl::string_view name() const override { return cpu_->name(); }
  std::string Describe() const override { return cpu_->Describe(); }
  std::vector<DeviceStatus> Devices() const override { return cpu_->Devices(); }
  absl::Status Pyramid(const InputImage& in, const PyramidSpec& spec,
                       const std::vector<PackedPiece>& out, StageTimes* times,
                       const CancelToken& cancel) override {
    return cpu_->Pyramid(in, spec, out, times, cancel);
  }
  absl::StatusOr<DetectResult> DetectPedestrians(const InputImage& in, const HogModel& model,
                                                 const DetectSpec& spec, StageTimes* times,
                                                 const CancelToken& cancel) override {
    return cpu_->DetectPedestrians(in, model, spec, times, cancel);
  }
  absl::StatusOr<std::shared_ptr<const BackendMesh>> UploadMesh(const MeshView& mesh,
                                                                StageTimes* times) override {
    return cpu_->UploadMesh(mesh, times);
  }
  absl::Status Deform(const BackendMesh& mesh, const Lattice& lattice, DeformOutputs outputs,
                      float* positions, float* normals, std::shared_ptr<const BackendMesh>* keep,
                      StageTimes* times, const CancelToken& cancel) override {
    return cpu_->Deform(mesh, lattice, outputs, positions, normals, keep, times, cancel);
  }
  absl::StatusOr<Mesh> DownloadMesh(const BackendMesh& mesh) override {
    return cpu_->DownloadMesh(mesh);
  }
  absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinHostMemory(void* data,
                                                               std::size_t bytes) override {
    return cpu_->PinHostMemory(data, bytes);
  }
  HostBufferPoolStats HostBufferPool() const override { return cpu_->HostBufferPool(); }

 private:
  absl::Status Record(const Extent& extent) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(extent);
    if (refuse_volumes_ && extent.depth > 1) {
      return absl::ResourceExhaustedError("device memory: the volume does not fit");
    }
    return absl::OkStatus();
  }

  std::unique_ptr<Backend> cpu_;
  mutable std::mutex mu_;
  std::vector<Extent> calls_;
  std::atomic<int> buffers_{0};
  std::atomic<bool> refuse_volumes_{false};
};

struct Fixture {
  Fixture() {
    auto backend = std::make_unique<RecordingBackend>(testing::TestServerOptions());
    recording = backend.get();
    server =
        std::make_unique<testing::TestServer>(testing::TestServerOptions(), std::move(backend));
  }
  RecordingBackend* recording;
  std::unique_ptr<testing::TestServer> server;
};

void AddInline(const Image& image, google::protobuf::RepeatedPtrField<v1::ImageSource>* inputs) {
  v1::Image* in = inputs->Add()->mutable_image();
  SetImageHeader(image.view(), in);
  in->set_data(reinterpret_cast<const char*>(image.bytes()), image.size_bytes());
}

Image FromProto(const v1::Image& p) {
  Image out(*PixelTypeFromProto(p.pixel_type(), "x"),
            Extent{p.width(), p.height(), p.depth() == 0 ? 1 : p.depth()}, 1);
  EXPECT_EQ(p.data().size(), out.size_bytes());
  std::memcpy(out.bytes(), p.data().data(), std::min(out.size_bytes(), p.data().size()));
  return out;
}

std::vector<MorphologyStep> Dilate5x3() {
  auto se = StructuringElement::Create(ElementSpec{ElementShape::kRect, 5, 3, 0, -1, -1, -1, {}});
  return {{MorphOp::kDilate, *se, 1, BorderMode::kNeutral, 0}};
}

v1::MorphologyRequest DilateBatch(const std::vector<Image>& images) {
  v1::MorphologyRequest r;
  for (const Image& image : images) AddInline(image, r.mutable_inputs());
  v1::MorphologyStep* step = r.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_DILATE);
  step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
  step->mutable_element()->set_width(5);
  step->mutable_element()->set_height(3);
  return r;
}

// Six 16x12 tiles, then a 20x12 image: two backend calls, the tiles' as one volume read from the
// request's own buffer (buffers: the request's pixels, the volume's results, the single's
// result; none gathered).
TEST(BatchService, SameShapeMorphologyEntriesRunAsOneVolumeWithoutAGatherCopy) {
  Fixture f;
  std::vector<Image> images;
  for (int i = 0; i < 7; ++i) {
    const Extent e = i == 6 ? Extent{20, 12, 1} : Extent{16, 12, 1};
    images.push_back(testing::RandomImage(PixelType::kU8, e, 100 + i));
  }
  grpc::ClientContext ctx;
  v1::MorphologyResponse response;
  ASSERT_TRUE(f.server->stub().Morphology(&ctx, DilateBatch(images), &response).ok());

  const std::vector<Extent> calls = f.recording->calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].depth, 6);
  EXPECT_EQ(calls[0].width, 16);
  EXPECT_EQ(calls[1].width, 20);
  EXPECT_EQ(calls[1].depth, 1);
  EXPECT_EQ(f.recording->buffers(), 3);
  ASSERT_EQ(response.results_size(), 7);
  for (int i = 0; i < 7; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(response.results(i).status().code(), 0) << response.results(i).status().message();
    const Image expected = *MorphologyReference(images[static_cast<std::size_t>(i)], Dilate5x3());
    EXPECT_EQ(testing::FirstMismatch(FromProto(response.results(i).response().result().image()),
                                     expected),
              -1);
  }
}

// A volume the backend refuses: its entries run again one by one, and each succeeds alone.
TEST(BatchService, AVolumeTheBackendRefusesRunsAgainImageByImage) {
  Fixture f;
  f.recording->refuse_volumes();
  std::vector<Image> images;
  for (int i = 0; i < 4; ++i) {
    images.push_back(testing::RandomImage(PixelType::kI16, Extent{9, 7, 1}, 200 + i));
  }
  grpc::ClientContext ctx;
  v1::MorphologyResponse response;
  ASSERT_TRUE(f.server->stub().Morphology(&ctx, DilateBatch(images), &response).ok());
  const std::vector<Extent> calls = f.recording->calls();
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[0].depth, 4);
  ASSERT_EQ(response.results_size(), 4);
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(response.results(i).status().code(), 0) << response.results(i).status().message();
    const Image expected = *MorphologyReference(images[static_cast<std::size_t>(i)], Dilate5x3());
    EXPECT_EQ(testing::FirstMismatch(FromProto(response.results(i).response().result().image()),
                                     expected),
              -1);
  }
}

// Gradient works slice by slice: three same-shape entries are one volume, each entry's planes
// (gx, gy, magnitude) the reference's for its image alone.
TEST(BatchService, SameShapeGradientEntriesRunAsOneVolume) {
  Fixture f;
  v1::GradientRequest request;
  request.set_magnitude(true);
  std::vector<Image> images;
  for (int i = 0; i < 3; ++i) {
    images.push_back(testing::RandomImage(PixelType::kU16, Extent{33, 17, 1}, 300 + i));
    AddInline(images.back(), request.mutable_inputs());
  }
  grpc::ClientContext ctx;
  v1::GradientResponse response;
  ASSERT_TRUE(f.server->stub().Gradient(&ctx, request, &response).ok());
  const std::vector<Extent> calls = f.recording->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].depth, 3);
  GradientSpec spec;
  spec.magnitude = true;
  ASSERT_EQ(response.results_size(), 3);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(response.results(i).status().code(), 0) << response.results(i).status().message();
    absl::StatusOr<GradientImages> expected =
        GradientReference(images[static_cast<std::size_t>(i)], spec, 1, NeverCancelled());
    ASSERT_TRUE(expected.ok()) << expected.status();
    const v1::GradientResponse& got = response.results(i).response();
    EXPECT_EQ(testing::FirstMismatch(FromProto(got.gx().image()), expected->gx), -1);
    EXPECT_EQ(testing::FirstMismatch(FromProto(got.gy().image()), expected->gy), -1);
    EXPECT_EQ(testing::FirstMismatch(FromProto(got.magnitude().image()), expected->magnitude), -1);
    EXPECT_EQ(got.smoothing_taps_size(), 7);
  }
}

}  // namespace
}  // namespace cuimg
