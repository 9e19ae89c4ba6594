// The CPU backend: runs the CPU references. For development, CI and GPU-less nodes. It presents
// `cpu_devices` scheduling units so that multi-device behaviour (health, rotation) is testable
// without GPUs.
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/reference/deform_reference.h"
#include "cuimg/reference/gradient_reference.h"
#include "cuimg/reference/hog_reference.h"
#include "cuimg/reference/label_reference.h"
#include "cuimg/reference/morphology_reference.h"
#include "cuimg/reference/pyramid_reference.h"
#include "server/backend/backend.h"
#include "server/backend/device_slot.h"

namespace cuimg {
namespace {

double MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

Image CopyOf(const ImageView& view) {
  Image image(view.type, view.extent, view.channels);
  std::memcpy(image.bytes(), view.data, view.Bytes());
  return image;
}

// A mesh in host memory with its vertex->face adjacency.
class CpuMesh final : public BackendMesh {
 public:
  CpuMesh(Mesh mesh, VertexFaceAdjacency adjacency)
      : mesh_(std::move(mesh)), adjacency_(std::move(adjacency)) {}
  std::size_t vertex_count() const override { return mesh_.vertex_count(); }
  std::size_t triangle_count() const override { return mesh_.triangle_count(); }
  std::size_t bytes() const override {
    return (mesh_.positions.size() + mesh_.triangles.size() + adjacency_.offsets.size() +
            adjacency_.faces.size()) *
           4;
  }
  int device() const override { return -1; }
  const Mesh& mesh() const { return mesh_; }
  const VertexFaceAdjacency& adjacency() const { return adjacency_; }

 private:
  Mesh mesh_;
  VertexFaceAdjacency adjacency_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const ServerOptions& options) : threads_(options.cpu_threads_per_request) {
    for (int i = 0; i < std::max(1, options.cpu_devices); ++i) {
      owned_.push_back(std::make_unique<DeviceSlot>(i, absl::StrCat("cpu", i), options.fault));
      slots_.push_back(owned_.back().get());
    }
  }

  absl::string_view name() const override { return "cpu"; }

  std::string Describe() const override {
    return absl::StrCat(
        "backend=cpu cores=", std::thread::hardware_concurrency(), " devices=", slots_.size(),
        " threads_per_request=", threads_ == 0 ? std::string("all") : absl::StrCat(threads_),
        " jpeg_decoder=cpu");
  }

  std::vector<DeviceStatus> Devices() const override {
    std::vector<DeviceStatus> out;
    for (const DeviceSlot* s : slots_) {
      DeviceStatus d;
      d.id = s->id();
      d.label = s->label();
      d.healthy = s->Healthy();
      d.reason = s->UnhealthyReason();
      d.requests = s->requests();
      d.inflight = s->inflight();
      out.push_back(std::move(d));
    }
    return out;
  }

  absl::Status Morphology(const InputImage& in, const ImageView& out,
                          const std::vector<MorphologyStep>& steps, const ImageView* marker,
                          StageTimes* times, const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
    times->device = use.slot().id();
    const auto start = std::chrono::steady_clock::now();
    // Read where the input lies and written where the caller wants it: a 157 MB volume would
    // otherwise be held three more times (a copy of the input, the result, and its copy).
    CUIMG_RETURN_IF_ERROR(MorphologyReferenceInto(in, out, steps, threads_, cancel, marker));
    times->kernel_us = MicrosSince(start);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<RegionStats>> Label(const InputImage& in, const LabelSpec& spec,
                                                 const ImageView* intensity,
                                                 const ImageView& labels, StageTimes* times,
                                                 const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
    times->device = use.slot().id();
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<RegionStats>> regions =
        LabelReferenceInto(in, spec, labels, intensity, cancel);
    times->kernel_us = MicrosSince(start);
    return regions;
  }

  absl::Status Gradient(const InputImage& in, const GradientSpec& spec, const GradientOutputs& out,
                        StageTimes* times, const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
    times->device = use.slot().id();
    const auto start = std::chrono::steady_clock::now();
    CUIMG_ASSIGN_OR_RETURN(GradientImages g, GradientReference(CopyOf(in), spec, threads_, cancel));
    const std::pair<float*, const Image*> copies[] = {
        {out.gx, &g.gx}, {out.gy, &g.gy}, {out.magnitude, &g.magnitude}, {out.angle, &g.angle}};
    for (const auto& [dst, src] : copies) {
      if (dst != nullptr) std::memcpy(dst, src->bytes(), src->size_bytes());
    }
    times->kernel_us = MicrosSince(start);
    return absl::OkStatus();
  }

  absl::Status Pyramid(const InputImage& in, const PyramidSpec& spec,
                       const std::vector<PackedPiece>& out, StageTimes* times,
                       const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
    times->device = use.slot().id();
    const auto start = std::chrono::steady_clock::now();
    CUIMG_ASSIGN_OR_RETURN(std::vector<PyramidLevel> levels,
                           PlanPyramidLevels(in.type, in.extent, spec));
    CUIMG_RETURN_IF_ERROR(CheckPackedPieces(out, PyramidOutputBytes(levels)));
    std::vector<void*> destinations;
    for (const PyramidLevel& level : levels) {
      CUIMG_ASSIGN_OR_RETURN(void* d, PackedDestination(out, level.offset_bytes, level.bytes));
      destinations.push_back(d);
    }
    CUIMG_ASSIGN_OR_RETURN(std::vector<Image> images,
                           PyramidReference(CopyOf(in), spec, threads_, cancel));
    for (std::size_t i = 0; i < levels.size(); ++i) {
      std::memcpy(destinations[i], images[i].bytes(), levels[i].bytes);
    }
    times->kernel_us = MicrosSince(start);
    return absl::OkStatus();
  }

  absl::StatusOr<DetectResult> DetectPedestrians(const InputImage& in, const HogModel& model,
                                                 const DetectSpec& spec, StageTimes* times,
                                                 const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
    times->device = use.slot().id();
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<DetectResult> result = DetectReference(in, model, spec, threads_, cancel);
    times->kernel_us = MicrosSince(start);
    return result;
  }

  absl::StatusOr<std::shared_ptr<const BackendMesh>> UploadMesh(const MeshView& view,
                                                                StageTimes* times) override {
    const auto start = std::chrono::steady_clock::now();
    Mesh mesh;
    mesh.positions.assign(view.positions, view.positions + view.vertex_count * 3);
    mesh.triangles.assign(view.triangles, view.triangles + view.triangle_count * 3);
    CUIMG_ASSIGN_OR_RETURN(VertexFaceAdjacency adjacency, BuildVertexFaceAdjacency(mesh.view()));
    times->h2d_us += MicrosSince(start);
    return std::shared_ptr<const BackendMesh>(
        std::make_shared<CpuMesh>(std::move(mesh), std::move(adjacency)));
  }

  absl::Status Deform(const BackendMesh& mesh, const Lattice& lattice, DeformOutputs outputs,
                      float* positions, float* normals, std::shared_ptr<const BackendMesh>* keep,
                      StageTimes* times, const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
    times->device = use.slot().id();
    const auto start = std::chrono::steady_clock::now();
    const auto& cpu = static_cast<const CpuMesh&>(mesh);
    CUIMG_ASSIGN_OR_RETURN(DeformedMeshF64 d, DeformReferenceF64(cpu.mesh().view(), cpu.adjacency(),
                                                                 lattice, threads_, cancel));
    const std::size_t n = cpu.vertex_count() * 3;
    std::vector<float> deformed(d.positions.begin(), d.positions.end());
    if (positions != nullptr && WantsPositions(outputs)) {
      std::copy(deformed.begin(), deformed.end(), positions);
    }
    if (normals != nullptr && WantsNormals(outputs)) {
      for (std::size_t i = 0; i < n; ++i) normals[i] = static_cast<float>(d.normals[i]);
    }
    if (keep != nullptr) {
      Mesh kept{std::move(deformed), cpu.mesh().triangles};
      *keep = std::make_shared<CpuMesh>(std::move(kept), cpu.adjacency());
    }
    times->kernel_us = MicrosSince(start);
    return absl::OkStatus();
  }

  absl::StatusOr<Mesh> DownloadMesh(const BackendMesh& mesh) override {
    return static_cast<const CpuMesh&>(mesh).mesh();
  }

  // The CPU reads host memory as it is.
  absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinHostMemory(void*, std::size_t) override {
    return nullptr;
  }

  std::unique_ptr<HostBuffer> AllocateHostBuffer(std::size_t bytes) override {
    return HeapHostBuffer(bytes);
  }
  HostBufferPoolStats HostBufferPool() const override { return {}; }

 private:
  const int threads_;
  std::vector<std::unique_ptr<DeviceSlot>> owned_;
  std::vector<DeviceSlot*> slots_;
};

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend(const ServerOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace cuimg
