// A streamed volume whose chain has a global step: the steps before it run slab by slab, the rest
// once on the whole gathered volume, and the result streams back equal to the unary call's. The
// backend here stands in for the global steps with one whose every output voxel depends on every
// input voxel (so a stage that saw only part of the volume could not match), so that the
// stream's own bookkeeping is checked whatever the kernels of the segmentation steps do.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuimg/common/status_macros.h"
#include "tests/server/test_server.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

// The CPU backend, except that a chain's global steps (IsGlobalStep) each add the sum of all the
// image's voxels (mod 256) to every voxel of a u8 image.
class WholeVolumeBackend final : public Backend {
 public:
  explicit WholeVolumeBackend(const ServerOptions& options) : cpu_(CreateCpuBackend(options)) {}

  int global_calls() const { return global_calls_.load(); }

  absl::Status Morphology(const InputImage& in, const ImageView& out,
                          const std::vector<MorphologyStep>& steps, const ImageView* marker,
                          StageTimes* times, const CancelToken& cancel) override {
    std::vector<MorphologyStep> local;
    Image current(in.type, in.extent, 1);
    std::memcpy(current.bytes(), in.data, in.Bytes());
    auto flush = [&]() -> absl::Status {
      if (local.empty()) return absl::OkStatus();
      Image next(in.type, in.extent, 1);
      CUIMG_RETURN_IF_ERROR(
          cpu_->Morphology(current.view(), next.view(), local, marker, times, cancel));
      current = std::move(next);
      local.clear();
      return absl::OkStatus();
    };
    for (const MorphologyStep& step : steps) {
      if (!IsGlobalStep(step)) {
        local.push_back(step);
        continue;
      }
      CUIMG_RETURN_IF_ERROR(flush());
      ++global_calls_;
      std::uint8_t sum = 0;
      for (std::size_t i = 0; i < current.size_bytes(); ++i) sum += current.bytes()[i];
      for (std::size_t i = 0; i < current.size_bytes(); ++i) current.bytes()[i] += sum;
    }
    CUIMG_RETURN_IF_ERROR(flush());
    std::memcpy(out.data, current.bytes(), current.size_bytes());
    return absl::OkStatus();
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
  std::unique_ptr<HostBuffer> AllocateHostBuffer(std::size_t bytes) override {
    return cpu_->AllocateHostBuffer(bytes);
  }
  HostBufferPoolStats HostBufferPool() const override { return cpu_->HostBufferPool(); }

 private:
  std::unique_ptr<Backend> cpu_;
  std::atomic<int> global_calls_{0};
};

v1::MorphologyStep Dilate3D() {
  v1::MorphologyStep s;
  s.set_op(v1::MORPHOLOGY_OP_DILATE);
  s.mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
  s.mutable_element()->set_width(3);
  s.mutable_element()->set_height(3);
  s.mutable_element()->set_depth(5);  // reach 2 per pass
  return s;
}

v1::MorphologyStep Op(v1::MorphologyOp op) {
  v1::MorphologyStep s;
  s.set_op(op);
  return s;
}

// The result slabs of `chain` on `volume` streamed in slabs of `slab_slices`, in z order.
std::string Streamed(v1::Imaging::Stub& stub, const Image& volume,
                     const v1::MorphologyRequest& chain, int slab_slices, int* replies) {
  grpc::ClientContext ctx;
  auto stream = stub.ProcessVolumeStream(&ctx);
  v1::VolumeStreamRequest message;
  SetImageHeader(volume.view(), message.mutable_header()->mutable_volume());
  *message.mutable_header()->mutable_morphology() = chain;
  EXPECT_TRUE(stream->Write(message));
  const std::size_t slice = static_cast<std::size_t>(volume.extent().SlicePixels());
  const std::int64_t depth = volume.extent().depth;
  for (std::int64_t z = 0; z < depth; z += slab_slices) {
    message.set_slab(reinterpret_cast<const char*>(volume.bytes()) + z * slice,
                     std::min<std::int64_t>(slab_slices, depth - z) * slice);
    EXPECT_TRUE(stream->Write(message));
  }
  stream->WritesDone();
  std::string out;
  v1::VolumeStreamResponse reply;
  *replies = 0;
  while (stream->Read(&reply)) {
    EXPECT_EQ(reply.z_begin() * slice, out.size());
    out += reply.data();
    ++*replies;
  }
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  return out;
}

v1::MorphologyStep Dilate2D() {
  v1::MorphologyStep s = Dilate3D();
  s.mutable_element()->set_depth(0);
  return s;
}

// The stream of `chains` on `volume` in slabs of each of `slabs` equals the unary call, the
// global steps run once on the whole volume, and the result comes back in `messages` messages.
void ExpectStreamsEqualUnary(const Image& volume,
                             const std::vector<std::vector<v1::MorphologyStep>>& chains,
                             const std::vector<int>& slabs, int messages) {
  const ServerOptions options = testing::TestServerOptions();
  auto backend = std::make_unique<WholeVolumeBackend>(options);
  WholeVolumeBackend* global = backend.get();
  testing::TestServer server(options, std::move(backend));
  for (std::size_t i = 0; i < chains.size(); ++i) {
    v1::MorphologyRequest chain;
    int global_steps = 0;
    for (const v1::MorphologyStep& s : chains[i]) {
      *chain.add_steps() = s;
      global_steps += s.op() >= v1::MORPHOLOGY_OP_FILL_HOLES;
    }
    const std::string unary = testing::UnaryMorphology(server.stub(), volume, chain);
    ASSERT_EQ(unary.size(), volume.size_bytes()) << "chain " << i;
    for (int slab_slices : slabs) {
      const int before = global->global_calls();
      int replies = 0;
      EXPECT_EQ(Streamed(server.stub(), volume, chain, slab_slices, &replies), unary)
          << "chain " << i << " slabs of " << slab_slices;
      // The global steps ran once each, on the whole volume, whatever the slabs.
      EXPECT_EQ(global->global_calls() - before, global_steps) << "chain " << i;
      EXPECT_EQ(replies, messages) << "chain " << i;
    }
  }
}

TEST(VolumeStreamGlobal, TheStepsBeforeTheGlobalOneRunPerSlabWithTheirHalo) {
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{40, 36, 24}, 3);
  ExpectStreamsEqualUnary(
      volume,
      {{Op(v1::MORPHOLOGY_OP_FILL_HOLES)},
       {Dilate3D(), Op(v1::MORPHOLOGY_OP_KEEP_LARGEST), Dilate3D()},
       {Dilate3D(), Dilate3D(), Op(v1::MORPHOLOGY_OP_HMAX), Op(v1::MORPHOLOGY_OP_FILL_HOLES)}},
      {1, 5, 24}, 1);
}

TEST(VolumeStreamGlobal, TheWholeResultStreamsBackInSeveralMessages) {
  // 1 MiB slices: 4 to a 4 MiB message, so 10 slices come back in 3.
  const Image volume = testing::RandomImage(PixelType::kU8, Extent{1024, 1024, 10}, 4);
  ExpectStreamsEqualUnary(volume, {{Dilate2D(), Op(v1::MORPHOLOGY_OP_REMOVE_SMALL)}}, {3}, 3);
}

}  // namespace
}  // namespace cuimg
