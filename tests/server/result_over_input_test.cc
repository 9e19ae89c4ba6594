// A unary Morphology's result written into its request's own pixel buffer, as the CUDA backend
// allows (Backend::MorphologyWritesOverInput), here on a CPU backend that reads its input first:
// the call then holds one buffer of the volume's size, not two, and returns the same result. Only
// inline inputs are written over; the other outputs keep their own memory.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuimg/reference/morphology_reference.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

// The CPU backend, but taking `out` == `in` (it copies the input before writing), and counting
// the host buffers it hands out and the calls whose output was their input.
class OverwritingBackend final : public Backend {
 public:
  explicit OverwritingBackend(const ServerOptions& options) : cpu_(CreateCpuBackend(options)) {}

  int buffers() const { return buffers_.load(); }
  int written_over() const { return written_over_.load(); }

  bool MorphologyWritesOverInput() const override { return true; }
  absl::Status Morphology(const InputImage& in, const ImageView& out,
                          const std::vector<MorphologyStep>& steps, const ImageView* marker,
                          StageTimes* times, const CancelToken& cancel) override {
    if (out.data != in.data) return cpu_->Morphology(in, out, steps, marker, times, cancel);
    ++written_over_;
    Image copy(in.type, in.extent, in.channels);
    std::memcpy(copy.bytes(), in.data, in.Bytes());
    return cpu_->Morphology(copy.view(), out, steps, marker, times, cancel);
  }
  std::unique_ptr<HostBuffer> AllocateHostBuffer(std::size_t bytes) override {
    ++buffers_;
    return cpu_->AllocateHostBuffer(bytes);
  }

  absl::string_view name() const override { return cpu_->name(); }
  std::string Describe() const override { return cpu_->Describe(); }
  std::vector<DeviceStatus> Devices() const override { return cpu_->Devices(); }
  absl::StatusOr<std::vector<RegionStats>> Label(const InputImage& in, const LabelSpec& spec,
                                                 const ImageView* intensity,
                                                 const ImageView& labels, StageTimes* times,
                                                 const CancelToken& cancel) override {
    return cpu_->Label(in, spec, intensity, labels, times, cancel);
  }
  absl::Status Gradient(const InputImage& in, const GradientSpec& spec, const GradientOutputs& out,
                        StageTimes* times, const CancelToken& cancel) override {
    return cpu_->Gradient(in, spec, out, times, cancel);
  }
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
  std::unique_ptr<Backend> cpu_;
  std::atomic<int> buffers_{0};
  std::atomic<int> written_over_{0};
};

std::string ReferenceBytes(const Image& image) {
  auto se =
      StructuringElement::Create(ElementSpec{ElementShape::kEllipse, 5, 5, 0, -1, -1, -1, {}});
  const Image out =
      *MorphologyReference(image, {{MorphOp::kDilate, *se, 1, BorderMode::kNeutral, 0}});
  return std::string(reinterpret_cast<const char*>(out.bytes()), out.size_bytes());
}

struct Served {
  ServerOptions options = testing::TestServerOptions();
  OverwritingBackend* backend = nullptr;
  std::unique_ptr<testing::TestServer> server;
  Served() {
    auto owned = std::make_unique<OverwritingBackend>(options);
    backend = owned.get();
    server = std::make_unique<testing::TestServer>(options, std::move(owned));
  }
};

TEST(ResultOverInput, AnInlineVolumesResultTakesTheRequestsBuffer) {
  Served s;
  const Image input = testing::RandomImage(PixelType::kI16, Extent{61, 47, 9}, 34);
  grpc::ClientContext ctx;
  v1::MorphologyResponse response;
  ASSERT_TRUE(s.server->stub().Morphology(&ctx, testing::DilateRequest(input, 5), &response).ok());
  EXPECT_TRUE(response.result().image().data() == ReferenceBytes(input));
  EXPECT_EQ(s.backend->written_over(), 1);
  EXPECT_EQ(s.backend->buffers(), 1);  // the request's pixels only
}

// Calls at once each get their own input back as their result's basis: no call sees another's.
TEST(ResultOverInput, ConcurrentCallsEachGetTheirOwnResult) {
  Served s;
  constexpr int kCalls = 6;
  std::vector<Image> inputs;
  for (int i = 0; i < kCalls; ++i) {
    inputs.push_back(testing::RandomImage(PixelType::kU8, Extent{40 + i, 33, 3}, 100 + i));
  }
  std::vector<std::thread> threads;
  std::vector<std::string> results(kCalls);
  std::vector<bool> ok(kCalls, false);
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&, i] {
      grpc::ClientContext ctx;
      v1::MorphologyResponse response;
      ok[i] =
          s.server->stub().Morphology(&ctx, testing::DilateRequest(inputs[i], 5), &response).ok();
      results[i] = response.result().image().data();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(ok[i]) << i;
    EXPECT_TRUE(results[i] == ReferenceBytes(inputs[i])) << i;
  }
  EXPECT_EQ(s.backend->written_over(), kCalls);
}

// A result kept resident has memory of its own: the request's buffer is not written.
TEST(ResultOverInput, AResidentResultIsNotWrittenOverItsInput) {
  Served s;
  const Image input = testing::RandomImage(PixelType::kU16, Extent{29, 31, 2}, 35);
  v1::MorphologyRequest request = testing::DilateRequest(input, 5);
  request.mutable_output()->set_keep_resident(true);
  grpc::ClientContext ctx;
  v1::MorphologyResponse response;
  ASSERT_TRUE(s.server->stub().Morphology(&ctx, request, &response).ok());
  EXPECT_TRUE(response.result().image().data() == ReferenceBytes(input));
  EXPECT_FALSE(response.result().handle().empty());
  EXPECT_EQ(s.backend->written_over(), 0);
}

}  // namespace
}  // namespace cuimg
