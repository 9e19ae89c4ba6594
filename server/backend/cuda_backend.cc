// The CUDA backend: one context per usable device, each with a stream pool and a caching device
// allocator; requests go to the least-loaded healthy device (device_slot.h). A sticky CUDA error
// takes the device out of rotation.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
#include "cuimg/kernels/morphology.h"
#include "cuimg/kernels/pyramid.h"
#include "server/backend/backend.h"
#include "server/backend/device_slot.h"
#include "server/backend/pinned_message_pool.h"

namespace cuimg {
namespace {

// Records events around each stage of one request and reads them once the stream is done. One
// per stream, created with it: four event creations and destructions per request cost more than
// the small requests' kernels.
class StageTimer {
 public:
  static absl::StatusOr<StageTimer> Create() {
    StageTimer t;
    for (CudaEvent& e : t.events_) {
      CUIMG_ASSIGN_OR_RETURN(e, CudaEvent::Create());
    }
    return t;
  }
  absl::Status Mark(int i, cudaStream_t stream) { return events_[i].Record(stream); }
  absl::Status Fill(StageTimes* times) const {
    CUIMG_RETURN_IF_ERROR(events_[3].Synchronize());
    CUIMG_ASSIGN_OR_RETURN(float h2d, CudaEvent::ElapsedMs(events_[0], events_[1]));
    CUIMG_ASSIGN_OR_RETURN(float kernel, CudaEvent::ElapsedMs(events_[1], events_[2]));
    CUIMG_ASSIGN_OR_RETURN(float d2h, CudaEvent::ElapsedMs(events_[2], events_[3]));
    times->h2d_us = h2d * 1e3;
    times->kernel_us = kernel * 1e3;
    times->d2h_us = d2h * 1e3;
    return absl::OkStatus();
  }

 private:
  CudaEvent events_[4];
};

// cudaSetDeviceFlags' scheduling flag for `sync` (server_options.h).
unsigned SchedulingFlag(CudaSync sync) {
  switch (sync) {
    case CudaSync::kAuto:
      return cudaDeviceScheduleAuto;
    case CudaSync::kSpin:
      return cudaDeviceScheduleSpin;
    case CudaSync::kYield:
      return cudaDeviceScheduleYield;
    case CudaSync::kBlock:
      return cudaDeviceScheduleBlockingSync;
  }
  return cudaDeviceScheduleAuto;
}

// One GPU: its slot, streams (leased one per request), buffer cache and pinned staging pool.
class DeviceContext {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceContext>> Create(const DeviceInfo& info, int id,
                                                               const ServerOptions& options) {
    auto ctx = std::unique_ptr<DeviceContext>(new DeviceContext(info, id, options));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(info.ordinal), "cudaSetDevice");
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDeviceFlags(SchedulingFlag(options.cuda_sync)),
                               "cudaSetDeviceFlags");
    for (int i = 0; i < options.worker_threads; ++i) {
      StreamSlot slot;
      CUIMG_ASSIGN_OR_RETURN(slot.stream, CudaStream::Create());
      CUIMG_ASSIGN_OR_RETURN(slot.timer, StageTimer::Create());
      ctx->free_.push_back(std::move(slot));
    }
    ctx->streams_total_ = options.worker_threads;
    return ctx;
  }

  const DeviceInfo& info() const { return info_; }
  DeviceSlot& slot() { return slot_; }
  const DeviceSlot& slot() const { return slot_; }
  DeviceBufferCache& cache() { return cache_; }
  const DeviceBufferCache& cache() const { return cache_; }
  PinnedStagingPool& staging() { return staging_; }
  const PinnedStagingPool& staging() const { return staging_; }
  int streams_total() const { return streams_total_; }
  int streams_busy() const {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_total_ - static_cast<int>(free_.size());
  }

  // A stream and its stage timer.
  struct StreamSlot {
    CudaStream stream;
    StageTimer timer;
  };

  // A stream (with its timer) for the duration of one request; blocks while all are leased.
  class StreamLease {
   public:
    StreamLease(DeviceContext* ctx, StreamSlot slot) : ctx_(ctx), slot_(std::move(slot)) {}
    ~StreamLease() { ctx_->Return(std::move(slot_)); }
    StreamLease(const StreamLease&) = delete;
    StreamLease& operator=(const StreamLease&) = delete;
    cudaStream_t get() const { return slot_.stream.get(); }
    StageTimer& timer() { return slot_.timer; }

   private:
    DeviceContext* ctx_;
    StreamSlot slot_;
  };

  std::unique_ptr<StreamLease> AcquireStream() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !free_.empty(); });
    StreamSlot s = std::move(free_.back());
    free_.pop_back();
    return std::make_unique<StreamLease>(this, std::move(s));
  }

 private:
  DeviceContext(const DeviceInfo& info, int id, const ServerOptions& options)
      : info_(info),
        slot_(id, absl::StrCat("cuda", info.ordinal), options.fault),
        cache_(info.ordinal, options.device_cache_bytes, options.device_memory_limit_bytes),
        staging_(options.pinned_staging_bytes, options.pinned_staging_chunk_bytes) {}
  void Return(StreamSlot s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(std::move(s));
    }
    cv_.notify_one();
  }

  DeviceInfo info_;
  DeviceSlot slot_;
  DeviceBufferCache cache_;
  PinnedStagingPool staging_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<StreamSlot> free_;
  int streams_total_ = 0;
};

class CudaHostPin final : public HostMemoryPin {
 public:
  explicit CudaHostPin(HostRegistration registration) : registration_(std::move(registration)) {}

 private:
  HostRegistration registration_;
};

struct SyncOnExit {
  cudaStream_t stream;
  ~SyncOnExit() { (void)cudaStreamSynchronize(stream); }
};

// A mesh in one device's memory.
class CudaMesh final : public BackendMesh {
 public:
  CudaMesh(DeviceMesh mesh, int slot, int ordinal)
      : mesh_(std::move(mesh)), slot_(slot), ordinal_(ordinal) {}
  std::size_t vertex_count() const override { return mesh_.vertex_count(); }
  std::size_t triangle_count() const override { return mesh_.triangle_count(); }
  std::size_t bytes() const override { return mesh_.DeviceBytes(); }
  int device() const override { return slot_; }
  int ordinal() const { return ordinal_; }
  const DeviceMesh& mesh() const { return mesh_; }

 private:
  DeviceMesh mesh_;
  int slot_;
  int ordinal_;
};

// The stream, stage timer and buffers of one request on one device (see CudaBackend::OnDevice).
// Buffers and staging chunks stay leased until the request's stream is idle.
struct DeviceCall {
  DeviceContext& dev;
  cudaStream_t stream;
  StageTimer& timer;
  std::vector<DeviceBufferCache::Lease>& leases;
  std::vector<PinnedStagingPool::Lease>& staging;

  // Device memory of at least `bytes` (null for 0) from the device's buffer cache.
  absl::StatusOr<void*> Acquire(std::size_t bytes) {
    CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease lease, dev.cache().Acquire(bytes));
    leases.push_back(std::move(lease));
    return leases.back().data();
  }
  // Results are staged only up to kStageOutUpTo bytes: staging_bench on the H200 (run 20) found
  // staged results 1.26x faster for a 300 KB frame but 0.47x for the 157 MB volume (the CPU
  // empties the chunks at ~7 GB/s where the driver's pageable path reaches 15 GB/s). Inputs are
  // always staged: a 300 KB input alone is 0.91x, but under 64 calls in flight staged inputs
  // gave 0.80-0.85x the echo server's calls/s against 0.69-0.71x unstaged (runs 20 and 22; a
  // pageable copy serializes in the driver across threads).
  static constexpr std::size_t kStageOutUpTo = std::size_t{1} << 20;

  // Up to this size, a result bound for mapped host memory (a registered shared-memory region)
  // is written there by the kernel itself when the plan allows it: the PCIe writes overlap the
  // kernel instead of following it as a copy (BENCHMARKS.md, issue 7). Reading inputs in place
  // measured slower (run 41: the kernels wait on PCIe reads), so inputs are always copied.
  static constexpr std::size_t kWriteInPlaceUpTo = std::size_t{1} << 20;

  // The device address at which a kernel writes `host` directly (see kWriteInPlaceUpTo), or null
  // when the result goes through device memory and a copy. Regions take results at any offset;
  // a kernel's store to an address not aligned to its pixel would be a sticky device error.
  static void* WritableInPlace(void* host, std::size_t bytes, std::size_t pixel_bytes) {
    if (host == nullptr || bytes > kWriteInPlaceUpTo ||
        reinterpret_cast<std::uintptr_t>(host) % pixel_bytes != 0) {
      return nullptr;
    }
    return MappedDevicePointer(host);
  }

  // Request bytes to the device, staged through the device's pinned pool (staged_copy.h).
  absl::Status CopyIn(void* d_dst, const void* src, std::size_t bytes) {
    return CopyToDeviceStaged(dev.staging(), d_dst, src, bytes, stream, &staging);
  }
  // Results to host memory (nothing for a null `dst`): small ones staged (returning once `dst`
  // is filled), large ones by one asynchronous copy (filled once `stream` is synchronized).
  absl::Status CopyOut(void* dst, const void* d_src, std::size_t bytes) {
    if (dst == nullptr || bytes == 0) return absl::OkStatus();
    if (bytes > kStageOutUpTo) {
      CUIMG_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(dst, d_src, bytes, cudaMemcpyDeviceToHost, stream), "D2H copy");
      return absl::OkStatus();
    }
    return CopyToHostStaged(dev.staging(), dst, d_src, bytes, stream, &staging);
  }
};

absl::Status CopyToHost(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == nullptr) return absl::OkStatus();
  CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream),
                             "D2H copy");
  return absl::OkStatus();
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::vector<std::unique_ptr<DeviceContext>> devices,
              std::shared_ptr<PinnedMessagePool> messages)
      : devices_(std::move(devices)), messages_(std::move(messages)) {
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
                        absl::StrJoin(parts, ", "), "]");
  }

  std::vector<DeviceStatus> Devices() const override {
    std::vector<DeviceStatus> out;
    for (const auto& d : devices_) {
      DeviceStatus s;
      s.id = d->slot().id();
      s.label = d->slot().label();
      s.healthy = d->slot().Healthy();
      s.reason = d->slot().UnhealthyReason();
      s.requests = d->slot().requests();
      s.inflight = d->slot().inflight();
      s.streams_busy = d->streams_busy();
      s.streams_total = d->streams_total();
      const DeviceBufferCache::Stats c = d->cache().stats();
      s.memory_cached = c.idle_bytes;
      s.cache_hits = c.hits;
      s.cache_misses = c.misses;
      s.cache_evictions = c.evictions;
      const PinnedStagingPool::Stats p = d->staging().stats();
      s.staging_used = p.in_use_bytes;
      s.staging_cached = p.idle_bytes;
      s.staging_hits = p.hits;
      s.staging_misses = p.misses;
      s.staging_refusals = p.refusals;
      std::size_t free_bytes = 0;
      std::size_t total_bytes = 0;
      if (cudaSetDevice(d->info().ordinal) == cudaSuccess &&
          cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        s.has_memory = true;
        s.memory_total = total_bytes;
        s.memory_used = total_bytes - free_bytes;
      } else {
        (void)cudaGetLastError();
      }
      out.push_back(std::move(s));
    }
    return out;
  }

  absl::Status Morphology(const ImageView& in, const ImageView& out,
                          const std::vector<MorphologyStep>& steps, StageTimes* times,
                          const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(MorphologyPlan plan, MorphologyPlan::Create(in.type, in.extent, steps));
    return OnDevice(Pick(), times, [&](DeviceCall& c) -> absl::Status {
      // Waiting for a stream may have taken the rest of the request's time.
      CUIMG_RETURN_IF_ERROR(cancel.Check());
      const std::size_t bytes = in.Bytes();
      // The kernel's output: the caller's mapped memory itself, else device memory copied out.
      void* d_out = plan.WritesOutputOnce()
                        ? c.WritableInPlace(out.data, bytes, PixelSize(in.type))
                        : nullptr;
      const bool in_place = d_out != nullptr;
      CUIMG_ASSIGN_OR_RETURN(void* d_in, c.Acquire(bytes));
      if (!in_place) {
        CUIMG_ASSIGN_OR_RETURN(d_out, c.Acquire(bytes));
      }
      CUIMG_ASSIGN_OR_RETURN(void* d_ws, c.Acquire(plan.WorkspaceBytes()));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_RETURN_IF_ERROR(c.CopyIn(d_in, in.data, bytes));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
      CUIMG_RETURN_IF_ERROR(plan.Run(d_in, d_out, d_ws, c.stream, cancel));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      if (!in_place) CUIMG_RETURN_IF_ERROR(c.CopyOut(out.data, d_out, bytes));
      return c.timer.Mark(3, c.stream);
    });
  }

  absl::Status Gradient(const ImageView& in, const GradientSpec& spec, const GradientOutputs& out,
                        StageTimes* times, const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(GradientPlan plan, GradientPlan::Create(in.type, in.extent, spec));
    return OnDevice(Pick(), times, [&](DeviceCall& c) -> absl::Status {
      CUIMG_RETURN_IF_ERROR(cancel.Check());  // one launch: nothing to stop once it runs
      const std::size_t plane = static_cast<std::size_t>(in.extent.Pixels()) * sizeof(float);
      CUIMG_ASSIGN_OR_RETURN(void* d_in, c.Acquire(in.Bytes()));
      CUIMG_ASSIGN_OR_RETURN(void* d_gx, c.Acquire(plane));
      CUIMG_ASSIGN_OR_RETURN(void* d_gy, c.Acquire(plane));
      CUIMG_ASSIGN_OR_RETURN(void* d_mag, c.Acquire(out.magnitude ? plane : 0));
      CUIMG_ASSIGN_OR_RETURN(void* d_angle, c.Acquire(out.angle ? plane : 0));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_RETURN_IF_ERROR(c.CopyIn(d_in, in.data, in.Bytes()));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
      CUIMG_RETURN_IF_ERROR(plan.Run(d_in, static_cast<float*>(d_gx),
                                     static_cast<float*>(d_gy),
                                     static_cast<float*>(d_mag),
                                     static_cast<float*>(d_angle), c.stream));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      CUIMG_RETURN_IF_ERROR(c.CopyOut(out.gx, d_gx, plane));
      CUIMG_RETURN_IF_ERROR(c.CopyOut(out.gy, d_gy, plane));
      CUIMG_RETURN_IF_ERROR(c.CopyOut(out.magnitude, d_mag, plane));
      CUIMG_RETURN_IF_ERROR(c.CopyOut(out.angle, d_angle, plane));
      return c.timer.Mark(3, c.stream);
    });
  }

  absl::Status Pyramid(const ImageView& in, const PyramidSpec& spec,
                       const std::vector<PackedPiece>& out, StageTimes* times,
                       const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(PyramidPlan plan, PyramidPlan::Create(in.type, in.extent, spec));
    CUIMG_RETURN_IF_ERROR(CheckPackedPieces(out, plan.OutputBytes()));
    return OnDevice(Pick(), times, [&](DeviceCall& c) -> absl::Status {
      // Levels are linear passes over at most the input: checked once, before they launch.
      CUIMG_RETURN_IF_ERROR(cancel.Check());
      CUIMG_ASSIGN_OR_RETURN(void* d_in, c.Acquire(in.Bytes()));
      CUIMG_ASSIGN_OR_RETURN(void* d_out, c.Acquire(plan.OutputBytes()));
      CUIMG_ASSIGN_OR_RETURN(void* d_ws, c.Acquire(plan.WorkspaceBytes()));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_RETURN_IF_ERROR(c.CopyIn(d_in, in.data, in.Bytes()));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
      CUIMG_RETURN_IF_ERROR(plan.Run(d_in, d_out, d_ws, c.stream));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      for (const PackedPiece& piece : out) {
        CUIMG_RETURN_IF_ERROR(
            c.CopyOut(piece.data, static_cast<const std::uint8_t*>(d_out) + piece.offset,
                      piece.bytes));
      }
      return c.timer.Mark(3, c.stream);
    });
  }

  absl::StatusOr<DetectResult> DetectPedestrians(const ImageView& in, const HogModel& model,
                                                 const DetectSpec& spec, StageTimes* times,
                                                 const CancelToken& cancel) override {
    CUIMG_ASSIGN_OR_RETURN(DetectPlan plan,
                           DetectPlan::Create(in.extent, in.channels, model, spec));
    DetectResult result;
    result.geometry = plan.geometry();
    CUIMG_RETURN_IF_ERROR(OnDevice(Pick(), times, [&](DeviceCall& c) -> absl::Status {
      CUIMG_RETURN_IF_ERROR(cancel.Check());  // every level runs in one pair of launches
      const std::size_t weight_bytes = model.weights.size() * sizeof(float);
      CUIMG_ASSIGN_OR_RETURN(void* d_in, c.Acquire(in.Bytes()));
      CUIMG_ASSIGN_OR_RETURN(void* d_weights, c.Acquire(weight_bytes));
      CUIMG_ASSIGN_OR_RETURN(void* d_ws, c.Acquire(plan.WorkspaceBytes()));
      CUIMG_ASSIGN_OR_RETURN(void* d_hits, c.Acquire(plan.HitsBytes()));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
      CUIMG_RETURN_IF_ERROR(c.CopyIn(d_in, in.data, in.Bytes()));
      CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_weights, model.weights.data(), weight_bytes,
                                                 cudaMemcpyHostToDevice, c.stream),
                                 "H2D weights");
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
      CUIMG_RETURN_IF_ERROR(plan.Run(d_in, static_cast<const float*>(d_weights), d_ws, d_hits,
                                     c.stream));
      CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
      // The count and the first hits come back in one copy (a frame rarely has more); the rest,
      // if any, in a second one once the count is known.
      constexpr std::size_t kFirstHits = 4096;
      const std::size_t first =
          std::min<std::size_t>(kFirstHits, static_cast<std::size_t>(plan.geometry().windows));
      std::vector<std::uint8_t> hits(DetectPlan::HitsPrefixBytes(first));
      CUIMG_RETURN_IF_ERROR(CopyToHost(hits.data(), d_hits, hits.size(), c.stream));
      CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(c.stream), "hit count");
      // Run() zeroes the count first, so it never exceeds the windows; clamp all the same.
      const std::uint32_t count = static_cast<std::uint32_t>(std::min<std::int64_t>(
          DetectPlan::HitCount(hits.data()), plan.geometry().windows));
      if (count > first) {
        const std::size_t head = hits.size();
        hits.resize(DetectPlan::HitsPrefixBytes(count));
        CUIMG_RETURN_IF_ERROR(CopyToHost(hits.data() + head,
                                         static_cast<const std::uint8_t*>(d_hits) + head,
                                         hits.size() - head, c.stream));
        CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(c.stream), "hits");
      }
      result.hits = DetectPlan::DecodeHits(hits.data(), count);
      return c.timer.Mark(3, c.stream);
    }));
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
      mesh = std::make_shared<CudaMesh>(std::move(uploaded), c.dev.slot().id(),
                                        c.dev.info().ordinal);
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
    const bool want_positions = (positions != nullptr && WantsPositions(outputs)) || keep != nullptr;
    const bool want_normals = normals != nullptr && WantsNormals(outputs);
    const DeformOutputs computed = want_positions && want_normals ? DeformOutputs::kPositionsAndNormals
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
                                          static_cast<float*>(d_norm), d_ws,
                                          c.stream));
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
    CUIMG_RETURN_IF_ERROR(OnDevice(DeviceUse::AcquireOn(&home.slot()), &times,
                                   [&](DeviceCall& c) -> absl::Status {
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

  // Runs `body` for one request on the device `use` holds: sets it current, leases a stream and a
  // stage timer, and waits for the stream before returning (so buffers leased inside `body` go
  // back to the cache only once idle). Fills times from the four marks body records.
  template <typename Body>
  absl::Status OnDevice(absl::StatusOr<DeviceUse> use, StageTimes* times, const Body& body) {
    if (!use.ok()) return use.status();
    DeviceContext& dev = *devices_[use->slot().id()];
    times->device = dev.info().ordinal;
    absl::Status status = [&]() -> absl::Status {
      CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(dev.info().ordinal), "cudaSetDevice");
      // Destroyed in reverse: the stream is synchronized, then returned (with its timer), then
      // the buffers and staging chunks.
      std::vector<DeviceBufferCache::Lease> leases;
      std::vector<PinnedStagingPool::Lease> staging;
      auto stream = dev.AcquireStream();
      const SyncOnExit sync{stream->get()};
      DeviceCall call{dev, stream->get(), stream->timer(), leases, staging};
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

  std::vector<std::unique_ptr<DeviceContext>> devices_;
  // Page-locked memory for message pixels (AllocateHostBuffer), portable across devices.
  std::shared_ptr<PinnedMessagePool> messages_;
  std::vector<DeviceSlot*> slots_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const ServerOptions& options) {
  const std::vector<DeviceInfo> infos = ListCudaDevices();
  if (infos.empty()) {
    return absl::UnavailableError(
        absl::StrCat("no usable CUDA device (need sm_90 or newer; ", CudaVersionString(), ")"));
  }
  std::vector<std::unique_ptr<DeviceContext>> devices;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    CUIMG_ASSIGN_OR_RETURN(auto ctx,
                           DeviceContext::Create(infos[i], static_cast<int>(i), options));
    devices.push_back(std::move(ctx));
  }
  std::shared_ptr<PinnedMessagePool> messages = PinnedMessagePool::Create(
      options.pinned_message_bytes, options.pinned_message_min_bytes,
      options.pinned_message_max_bytes);
  return std::unique_ptr<Backend>(
      std::make_unique<CudaBackend>(std::move(devices), std::move(messages)));
}

}  // namespace cuimg
