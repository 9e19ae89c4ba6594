// The CUDA backend: one context per usable device, each with a stream pool and a caching device
// allocator; requests go to the least-loaded healthy device (device_slot.h). A sticky CUDA error
// takes the device out of rotation. JPEG inputs decode on the device with nvJPEG where it loads.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer_cache.h"
#include "cuimg/common/device_info.h"
#include "cuimg/common/pinned_staging_pool.h"
#include "cuimg/common/staged_copy.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/deform.h"
#include "cuimg/kernels/gradient.h"
#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/label.h"
#include "cuimg/kernels/morphology.h"
#include "cuimg/kernels/pyramid.h"
#include "server/backend/backend.h"
#include "server/backend/cuda_detect.h"
#include "server/backend/cuda_device.h"
#include "server/backend/cuda_frames.h"
#include "server/backend/detect_batcher.h"
#include "server/backend/device_slot.h"
#include "server/backend/pinned_message_pool.h"

namespace cuimg {
namespace {

using cuda_backend::CopyToHost;
using cuda_backend::CudaFrameDecoder;
using cuda_backend::CudaHostPin;
using cuda_backend::CudaImage;
using cuda_backend::CudaMesh;
using cuda_backend::DeviceCall;
using cuda_backend::DeviceContext;
using cuda_backend::SyncOnExit;

class CudaBackend final : public Backend, public DeviceJpegDecoder {
 public:
  // `nvjpeg` null: no GPU JPEG decoder, for the reason `jpeg_note` gives. `arrivals`: where
  // decodes announce themselves to the devices' batches (DeviceContext::Create).
  CudaBackend(std::unique_ptr<BatchArrivals> arrivals,
              std::vector<std::unique_ptr<DeviceContext>> devices,
              std::shared_ptr<PinnedMessagePool> messages,
              std::shared_ptr<const NvjpegLibrary> nvjpeg, std::string jpeg_note)
      : arrivals_(std::move(arrivals)),
        devices_(std::move(devices)),
        messages_(std::move(messages)),
        nvjpeg_(std::move(nvjpeg)),
        jpeg_note_(std::move(jpeg_note)) {
    // nvJPEG2000 for DICOM frames where it loads; frames decode on the host otherwise.
    absl::StatusOr<std::shared_ptr<const Nvjpeg2kLibrary>> lib = Nvjpeg2kLibrary::Load();
    std::vector<DeviceContext*> contexts;
    for (auto& d : devices_) contexts.push_back(d.get());
    absl::StatusOr<std::unique_ptr<CudaFrameDecoder>> frames =
        lib.ok() ? CudaFrameDecoder::Create(*lib, std::move(contexts)) : lib.status();
    if (frames.ok()) {
      frames_ = *std::move(frames);
    } else {
      frames_note_ = absl::StrCat(
          " frame_decoder=cpu frame_decoder_reason=\"",
          absl::StrReplaceAll(frames.status().message(), {{"\"", "'"}, {"\n", " "}}), "\"");
    }
    for (auto& d : devices_) slots_.push_back(&d->slot());
  }

  absl::string_view name() const override { return "cuda"; }

  std::string Describe() const override {
    std::vector<std::string> parts;
    for (const auto& d : devices_) {
      parts.push_back(absl::StrCat(d->info().ordinal, ":", d->info().name, " sm_",
                                   d->info().compute_major, d->info().compute_minor, " ",
                                   d->info().total_memory >> 20, "MiB"));
    }
    return absl::StrCat("backend=cuda ", CudaVersionString(), " devices=[",
                        absl::StrJoin(parts, ", "), "] ", Summary(),
                        frames_ != nullptr
                            ? absl::StrCat(" frame_decoder=\"", frames_->Summary(), "\"")
                            : frames_note_);
  }

  DeviceJpegDecoder* jpeg_decoder() override { return nvjpeg_ != nullptr ? this : nullptr; }
  DeviceFrameDecoder* frame_decoder() override { return frames_.get(); }

  // DeviceJpegDecoder: every device's handle uses the same backend (the devices are alike).
  bool hardware() const override { return devices_.front()->jpeg()->hardware(); }

  std::string Summary() const override {
    if (nvjpeg_ == nullptr) return jpeg_note_;
    return absl::StrCat("jpeg_decoder=gpu nvjpeg=", nvjpeg_->version(),
                        " nvjpeg_library=", nvjpeg_->path(), " nvjpeg_backend=\"",
                        devices_.front()->jpeg()->backend_name(), "\"");
  }

  absl::StatusOr<std::unique_ptr<const DeviceImage>> Decode(absl::Span<const std::uint8_t> jpeg,
                                                            const ImageView& shape) override {
    BatchOutcome batch;
    return DecodeBatched(jpeg, shape, nullptr, &batch);
  }

  BatchArrivals::Ticket Expect() override { return arrivals_->Expect(); }

  absl::StatusOr<std::unique_ptr<const DeviceImage>> DecodeBatched(
      absl::Span<const std::uint8_t> jpeg, const ImageView& shape, BatchArrivals::Ticket* ticket,
      BatchOutcome* batch) override {
    std::unique_ptr<const DeviceImage> image;
    *batch = BatchOutcome();
    StageTimes decode_times;  // the decode's own events; the caller times the stage
    const absl::Status status = OnDevice(Pick(), &decode_times, [&](DeviceCall& c) -> absl::Status {
      const NvjpegDevice& decoder = *c.dev.jpeg();
      // The image outlives this call (the work call uses it), so its buffer is not a call lease.
      CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease out, c.dev.cache().Acquire(shape.Bytes()));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_RETURN_IF_ERROR(
          decoder.Decode(*c.jpeg_state, jpeg, shape, out.data(), c.stream, ticket, batch));
      for (int mark = 1; mark < 4; ++mark) CUIMG_RETURN_IF_ERROR(c.timer.Mark(mark, c.stream));
      image = std::make_unique<CudaImage>(std::move(out), c.dev.slot().id());
      return absl::OkStatus();
    });
    // No longer on its way, whether the decode was queued or failed before.
    if (ticket != nullptr) ticket->Arrive();
    CUIMG_RETURN_IF_ERROR(status);
    return image;
  }

  std::vector<DeviceStatus> Devices() const override {
    std::vector<DeviceStatus> out;
    for (const auto& d : devices_) out.push_back(d->Status());
    return out;
  }

  absl::Status Morphology(const InputImage& in, const ImageView& out,
                          const std::vector<MorphologyStep>& steps, const ImageView* marker,
                          StageTimes* times, const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(MorphologyPlan plan, MorphologyPlan::Create(in.type, in.extent, steps));
    return OnDevice(PickFor(in), times, [&](DeviceCall& c) -> absl::Status {
      // Waiting for a stream may have taken the rest of the request's time.
      CUIMG_RETURN_IF_ERROR(cancel.Check());
      const std::size_t bytes = in.Bytes();
      // The kernel's output: the caller's mapped memory itself, else device memory copied out.
      void* d_out = plan.WritesOutputOnce() ? c.WritableInPlace(out.data, bytes, PixelSize(in.type))
                                            : nullptr;
      const bool in_place = d_out != nullptr;
      if (!in_place) {
        CUIMG_ASSIGN_OR_RETURN(d_out, c.Acquire(bytes));
      }
      CUIMG_ASSIGN_OR_RETURN(void* d_ws, c.Acquire(plan.WorkspaceBytes()));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_ASSIGN_OR_RETURN(const void* d_in, c.Input(in));
      const void* d_marker = nullptr;
      if (marker != nullptr) {
        CUIMG_ASSIGN_OR_RETURN(d_marker, c.Input(*marker));
      }
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
      CUIMG_RETURN_IF_ERROR(plan.Run(d_in, d_out, d_ws, c.stream, cancel, d_marker));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      if (!in_place) CUIMG_RETURN_IF_ERROR(c.CopyOut(out.data, d_out, bytes));
      return c.timer.Mark(3, c.stream);
    });
  }

  // Host inputs are copied to the device (c.Input) on the request's stream before the plan runs,
  // and results reach host memory only from the plan's kernels or the copy after them, on that
  // stream: whether a kernel writes `out` in place (mapped host memory) or a copy fills it, the
  // input's bytes there have all been read.
  bool MorphologyWritesOverInput() const override { return true; }

  absl::StatusOr<std::vector<RegionStats>> Label(const InputImage& in, const LabelSpec& spec,
                                                 const ImageView* intensity,
                                                 const ImageView& labels, StageTimes* times,
                                                 const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(
        LabelPlan plan,
        LabelPlan::Create(
            in.type, in.extent, spec,
            intensity != nullptr ? std::optional<PixelType>(intensity->type) : std::nullopt));
    std::vector<RegionStats> regions;
    CUIMG_RETURN_IF_ERROR(OnDevice(PickFor(in), times, [&](DeviceCall& c) -> absl::Status {
      CUIMG_RETURN_IF_ERROR(cancel.Check());  // a few passes over the image: checked before them
      const std::size_t label_bytes = static_cast<std::size_t>(in.extent.Pixels()) * 4;
      CUIMG_ASSIGN_OR_RETURN(void* d_labels, c.Acquire(label_bytes));
      CUIMG_ASSIGN_OR_RETURN(void* d_ws, c.Acquire(plan.WorkspaceBytes()));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_ASSIGN_OR_RETURN(const void* d_in, c.Input(in));
      const void* d_intensity = nullptr;
      if (intensity != nullptr) {
        CUIMG_ASSIGN_OR_RETURN(d_intensity, c.Input(*intensity));
      }
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
      CUIMG_RETURN_IF_ERROR(plan.Run(d_in, d_intensity, static_cast<std::uint32_t*>(d_labels), d_ws,
                                     c.stream, cancel));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      CUIMG_RETURN_IF_ERROR(c.CopyOut(labels.data, d_labels, label_bytes));
      // Synchronizes the stream: the labels' copy is complete too.
      CUIMG_ASSIGN_OR_RETURN(regions, plan.ReadRegions(d_ws, c.stream));
      return c.timer.Mark(3, c.stream);
    }));
    return regions;
  }

  absl::Status Gradient(const InputImage& in, const GradientSpec& spec, const GradientOutputs& out,
                        StageTimes* times, const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(GradientPlan plan, GradientPlan::Create(in.type, in.extent, spec));
    return OnDevice(PickFor(in), times, [&](DeviceCall& c) -> absl::Status {
      CUIMG_RETURN_IF_ERROR(cancel.Check());  // one launch: nothing to stop once it runs
      const std::size_t plane = static_cast<std::size_t>(in.extent.Pixels()) * sizeof(float);
      CUIMG_ASSIGN_OR_RETURN(void* d_gx, c.Acquire(plane));
      CUIMG_ASSIGN_OR_RETURN(void* d_gy, c.Acquire(plane));
      CUIMG_ASSIGN_OR_RETURN(void* d_mag, c.Acquire(out.magnitude ? plane : 0));
      CUIMG_ASSIGN_OR_RETURN(void* d_angle, c.Acquire(out.angle ? plane : 0));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_ASSIGN_OR_RETURN(const void* d_in, c.Input(in));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
      CUIMG_RETURN_IF_ERROR(plan.Run(d_in, static_cast<float*>(d_gx), static_cast<float*>(d_gy),
                                     static_cast<float*>(d_mag), static_cast<float*>(d_angle),
                                     c.stream));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      CUIMG_RETURN_IF_ERROR(c.CopyOut(out.gx, d_gx, plane));
      CUIMG_RETURN_IF_ERROR(c.CopyOut(out.gy, d_gy, plane));
      CUIMG_RETURN_IF_ERROR(c.CopyOut(out.magnitude, d_mag, plane));
      CUIMG_RETURN_IF_ERROR(c.CopyOut(out.angle, d_angle, plane));
      return c.timer.Mark(3, c.stream);
    });
  }

  absl::Status Pyramid(const InputImage& in, const PyramidSpec& spec,
                       const std::vector<PackedPiece>& out, StageTimes* times,
                       const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(PyramidPlan plan, PyramidPlan::Create(in.type, in.extent, spec));
    CUIMG_RETURN_IF_ERROR(CheckPackedPieces(out, plan.OutputBytes()));
    return OnDevice(PickFor(in), times, [&](DeviceCall& c) -> absl::Status {
      // Levels are linear passes over at most the input: checked once, before they launch.
      CUIMG_RETURN_IF_ERROR(cancel.Check());
      CUIMG_ASSIGN_OR_RETURN(void* d_out, c.Acquire(plan.OutputBytes()));
      CUIMG_ASSIGN_OR_RETURN(void* d_ws, c.Acquire(plan.WorkspaceBytes()));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_ASSIGN_OR_RETURN(const void* d_in, c.Input(in));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
      CUIMG_RETURN_IF_ERROR(plan.Run(d_in, d_out, d_ws, c.stream));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      for (const PackedPiece& piece : out) {
        CUIMG_RETURN_IF_ERROR(c.CopyOut(
            piece.data, static_cast<const std::uint8_t*>(d_out) + piece.offset, piece.bytes));
      }
      return c.timer.Mark(3, c.stream);
    });
  }

  absl::StatusOr<DetectResult> DetectPedestrians(const InputImage& in, const HogModel& model,
                                                 const DetectSpec& spec, StageTimes* times,
                                                 const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(DetectPlan plan,
                           DetectPlan::Create(in.extent, in.channels, model, spec));
    DetectResult result;
    result.geometry = plan.geometry();
    DetectItem batched;  // the frame's part of a batch, when the device batches frames
    CUIMG_RETURN_IF_ERROR(OnDevice(PickFor(in), times, [&](DeviceCall& c) -> absl::Status {
      CUIMG_RETURN_IF_ERROR(cancel.Check());  // every level runs in one pair of launches
      if (DetectBatcher* hog = c.dev.hog(); hog != nullptr) {
        CUIMG_RETURN_IF_ERROR(
            cuda_backend::DetectBatched(c, *hog, plan, in, model, spec, cancel, &batched));
        result.hits = *std::move(batched.hits);
        return absl::OkStatus();
      }
      return cuda_backend::DetectAlone(c, plan, in, model, &result.hits);
    }));
    // A batched frame's kernel time is its batch's launches and copies (on whichever stream).
    if (batched.frames > 0) {
      times->kernel_us = batched.kernel_us;
      times->detect_batch = batched.frames;
      times->detect_batch_first = batched.first;
      times->detect_batch_wait_us = batched.waited_us;
    }
    return result;
  }

  absl::StatusOr<std::shared_ptr<const BackendMesh>> UploadMesh(const MeshView& view,
                                                                StageTimes* times) override {
    std::shared_ptr<const BackendMesh> mesh;
    CUIMG_RETURN_IF_ERROR(OnDevice(Pick(), times, [&](DeviceCall& c) -> absl::Status {
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_ASSIGN_OR_RETURN(DeviceMesh uploaded, DeviceMesh::Upload(view, c.stream));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      mesh =
          std::make_shared<CudaMesh>(std::move(uploaded), c.dev.slot().id(), c.dev.info().ordinal);
      return c.timer.Mark(3, c.stream);
    }));
    return mesh;
  }

  absl::Status Deform(const BackendMesh& mesh, const Lattice& lattice, DeformOutputs outputs,
                      float* positions, float* normals, std::shared_ptr<const BackendMesh>* keep,
                      StageTimes* times, const CancelToken& cancel) override {
    const auto& cuda_mesh = static_cast<const CudaMesh&>(mesh);
    DeviceContext& home = *devices_[cuda_mesh.device()];
    // The kernel computes what is returned, plus positions when the result stays resident.
    const bool want_positions =
        (positions != nullptr && WantsPositions(outputs)) || keep != nullptr;
    const bool want_normals = normals != nullptr && WantsNormals(outputs);
    const DeformOutputs computed = want_positions && want_normals
                                       ? DeformOutputs::kPositionsAndNormals
                                   : want_normals ? DeformOutputs::kNormals
                                                  : DeformOutputs::kPositions;
    return OnDevice(DeviceUse::AcquireOn(&home.slot()), times, [&](DeviceCall& c) -> absl::Status {
      CUIMG_RETURN_IF_ERROR(cancel.Check());  // two launches: checked before them
      const DeviceMesh& m = cuda_mesh.mesh();
      const std::size_t bytes = m.vertex_count() * 3 * sizeof(float);
      CUIMG_ASSIGN_OR_RETURN(void* d_pos, c.Acquire(want_positions ? bytes : 0));
      CUIMG_ASSIGN_OR_RETURN(void* d_norm, c.Acquire(want_normals ? bytes : 0));
      CUIMG_ASSIGN_OR_RETURN(void* d_ws, c.Acquire(DeformWorkspaceBytes(m, computed)));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));  // the lattice travels in the launch
      CUIMG_RETURN_IF_ERROR(cuimg::Deform(m, lattice, static_cast<float*>(d_pos),
                                          static_cast<float*>(d_norm), d_ws, c.stream));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      if (positions != nullptr && WantsPositions(outputs)) {
        CUIMG_RETURN_IF_ERROR(c.CopyOut(positions, d_pos, bytes));
      }
      if (want_normals) CUIMG_RETURN_IF_ERROR(c.CopyOut(normals, d_norm, bytes));
      if (keep != nullptr) {
        CUIMG_ASSIGN_OR_RETURN(DeviceMesh deformed,
                               m.WithPositions(static_cast<const float*>(d_pos), c.stream));
        *keep = std::make_shared<CudaMesh>(std::move(deformed), cuda_mesh.device(),
                                           cuda_mesh.ordinal());
      }
      return c.timer.Mark(3, c.stream);
    });
  }

  absl::StatusOr<Mesh> DownloadMesh(const BackendMesh& mesh) override {
    const auto& cuda_mesh = static_cast<const CudaMesh&>(mesh);
    Mesh out;
    out.positions.resize(cuda_mesh.vertex_count() * 3);
    out.triangles.resize(cuda_mesh.triangle_count() * 3);
    StageTimes times;
    DeviceContext& home = *devices_[cuda_mesh.device()];
    CUIMG_RETURN_IF_ERROR(
        OnDevice(DeviceUse::AcquireOn(&home.slot()), &times, [&](DeviceCall& c) -> absl::Status {
          CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
          CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
          CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
          CUIMG_RETURN_IF_ERROR(c.CopyOut(out.positions.data(), cuda_mesh.mesh().positions(),
                                          out.positions.size() * 4));
          CUIMG_RETURN_IF_ERROR(c.CopyOut(out.triangles.data(), cuda_mesh.mesh().triangles(),
                                          out.triangles.size() * 4));
          return c.timer.Mark(3, c.stream);
        }));
    return out;
  }

  absl::StatusOr<std::unique_ptr<HostMemoryPin>> PinHostMemory(void* data,
                                                               std::size_t bytes) override {
    // Portable registration covers every device from whichever is current.
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(devices_.front()->info().ordinal), "cudaSetDevice");
    CUIMG_ASSIGN_OR_RETURN(HostRegistration registration, HostRegistration::Register(data, bytes));
    return std::unique_ptr<HostMemoryPin>(std::make_unique<CudaHostPin>(std::move(registration)));
  }

  std::unique_ptr<HostBuffer> AllocateHostBuffer(std::size_t bytes) override {
    if (std::unique_ptr<HostBuffer> pinned = messages_->Allocate(bytes)) return pinned;
    return HeapHostBuffer(bytes);
  }

  HostBufferPoolStats HostBufferPool() const override { return messages_->stats(); }

 private:
  absl::StatusOr<DeviceUse> Pick() { return DeviceUse::Acquire(slots_); }
  // The device holding `in` when a backend call decoded it there, else the least loaded.
  absl::StatusOr<DeviceUse> PickFor(const InputImage& in) {
    if (in.device == nullptr) return Pick();
    return DeviceUse::AcquireOn(&devices_[in.device->device()]->slot());
  }

  // Runs `body` for one request on the device `use` holds: sets it current, leases a stream and a
  // stage timer, and waits for the stream before returning (so buffers leased inside `body` go
  // back to the cache only once idle). Fills times from the four marks body records.
  template <typename Body>
  absl::Status OnDevice(absl::StatusOr<DeviceUse> use, StageTimes* times, const Body& body) {
    if (!use.ok()) return use.status();
    DeviceContext& dev = *devices_[use->slot().id()];
    times->device = use->slot().id();  // the slot, as on the CPU backend (backend.h)
    absl::Status status = [&]() -> absl::Status {
      CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(dev.info().ordinal), "cudaSetDevice");
      // Destroyed in reverse: the stream is synchronized, then returned (with its timer), then
      // the buffers and staging chunks.
      std::vector<DeviceBufferCache::Lease> leases;
      std::vector<PinnedStagingPool::Lease> staging;
      auto stream = dev.AcquireStream();
      const SyncOnExit sync{stream->get()};
      DeviceCall call{dev, stream->get(), stream->timer(), leases, staging, stream->jpeg_state()};
      CUIMG_RETURN_IF_ERROR(body(call));
      return stream->timer().Fill(times);
    }();
    if (!status.ok()) CheckSticky(dev);
    return status;
  }

  // A sticky error poisons the context: the device leaves rotation until the process restarts.
  static void CheckSticky(DeviceContext& dev) {
    const cudaError_t e = cudaPeekAtLastError();
    if (IsStickyCudaError(e)) {
      dev.slot().MarkFailed(absl::StrCat("sticky CUDA error ", cudaGetErrorName(e)));
    }
  }

  // Declared before the devices, whose batches read it, so that it outlives them.
  std::unique_ptr<BatchArrivals> arrivals_;
  std::vector<std::unique_ptr<DeviceContext>> devices_;
  // Page-locked memory for message pixels (AllocateHostBuffer), portable across devices.
  std::shared_ptr<PinnedMessagePool> messages_;
  std::vector<DeviceSlot*> slots_;
  std::shared_ptr<const NvjpegLibrary> nvjpeg_;
  std::string jpeg_note_;
  // After devices_: destroyed before the devices whose contexts it uses. Null without nvJPEG2000.
  std::unique_ptr<CudaFrameDecoder> frames_;
  std::string frames_note_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const ServerOptions& options) {
  // Declared before the devices, whose batches read it, so that it outlives them.
  auto arrivals = std::make_unique<BatchArrivals>();
  CUIMG_ASSIGN_OR_RETURN(cuda_backend::CudaDevices devices,
                         cuda_backend::CreateCudaDevices(options, arrivals.get()));
  std::shared_ptr<PinnedMessagePool> messages =
      PinnedMessagePool::Create(options.pinned_message_bytes, options.pinned_message_min_bytes,
                                options.pinned_message_max_bytes);
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(
      std::move(arrivals), std::move(devices.contexts), std::move(messages),
      std::move(devices.nvjpeg), std::move(devices.jpeg_note)));
}

}  // namespace cuimg
