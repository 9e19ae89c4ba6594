// The pieces of the CUDA backend (cuda_backend.cc) below the Backend interface: one GPU's context
// (streams, buffer cache, staging pool), the stage timer of a request, and DeviceCall, what a
// request's body gets on its device, and the devices' creation (cuda_devices.cc). Internal to the
// CUDA backend (cuda_backend.cc, cuda_devices.cc and cuda_frames.cc).
#ifndef CUIMG_SERVER_BACKEND_CUDA_DEVICE_H_
#define CUIMG_SERVER_BACKEND_CUDA_DEVICE_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer_cache.h"
#include "cuimg/common/device_info.h"
#include "cuimg/common/pinned_staging_pool.h"
#include "cuimg/common/staged_copy.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/deform.h"
#include "server/backend/backend.h"
#include "server/backend/detect_batcher.h"
#include "server/backend/device_slot.h"
#include "server/backend/nvjpeg_decoder.h"
#include "server/server_options.h"

namespace cuimg::cuda_backend {

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
inline unsigned SchedulingFlag(CudaSync sync) {
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
  // With `nvjpeg` (may be null) the device gets its nvJPEG handle, its hardware decodes batched
  // as options.batch_max_size, batch_lanes and batch_max_delay_us say, waiting for decodes
  // announced to `arrivals` (may be null; must outlive the device).
  static absl::StatusOr<std::unique_ptr<DeviceContext>> Create(
      const DeviceInfo& info, int id, const ServerOptions& options,
      std::shared_ptr<const NvjpegLibrary> nvjpeg, const BatchArrivals* arrivals = nullptr) {
    auto ctx = std::unique_ptr<DeviceContext>(new DeviceContext(info, id, options));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(info.ordinal), "cudaSetDevice");
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDeviceFlags(SchedulingFlag(options.cuda_sync)),
                               "cudaSetDeviceFlags");
    if (nvjpeg != nullptr) {
      CUIMG_ASSIGN_OR_RETURN(
          ctx->jpeg_,
          NvjpegDevice::Create(
              std::move(nvjpeg),
              NvjpegDevice::Batching{options.batch_max_size,
                                     std::chrono::microseconds(options.batch_max_delay_us),
                                     arrivals, options.batch_lanes}));
    }
    // Frames that reach the device together share HOG launches (--detect_batch_max_size above 1).
    if (options.detect_batch_max_size > 1) {
      DetectBatcher::Options batching;
      batching.max_batch = options.detect_batch_max_size;
      batching.lanes = options.detect_batch_lanes;
      batching.max_delay = std::chrono::microseconds(options.batch_max_delay_us);
      ctx->hog_ = std::make_unique<DetectBatcher>(batching, CudaDetectGroupRunner(&ctx->cache_));
    }
    for (int i = 0; i < options.worker_threads; ++i) {
      StreamSlot slot;
      CUIMG_ASSIGN_OR_RETURN(slot.stream, CudaStream::Create());
      CUIMG_ASSIGN_OR_RETURN(slot.timer, StageTimer::Create());
      // Here rather than on the stream's first JPEG, so that health answers when decodes are
      // ready: a fresh server's first 32 decodes waited up to 1.8-2.1 s (H200) while nvJPEG set
      // up the states they made.
      if (ctx->jpeg_ != nullptr) {
        CUIMG_ASSIGN_OR_RETURN(slot.jpeg_state, ctx->jpeg_->CreateState());
      }
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
  // Null without nvJPEG.
  const NvjpegDevice* jpeg() const { return jpeg_.get(); }
  // Null when frames are not batched (--detect_batch_max_size 1).
  DetectBatcher* hog() { return hog_.get(); }
  int streams_total() const { return streams_total_; }
  // Health, counters and memory, for Backend::Devices(); sets this device current to read its
  // memory (a failed read leaves has_memory false).
  DeviceStatus Status() const {
    DeviceStatus s;
    s.id = slot().id();
    s.label = slot().label();
    s.healthy = slot().Healthy();
    s.reason = slot().UnhealthyReason();
    s.requests = slot().requests();
    s.inflight = slot().inflight();
    s.streams_busy = streams_busy();
    s.streams_total = streams_total();
    const DeviceBufferCache::Stats c = cache().stats();
    s.memory_cached = c.idle_bytes;
    s.cache_hits = c.hits;
    s.cache_misses = c.misses;
    s.cache_evictions = c.evictions;
    const PinnedStagingPool::Stats p = staging().stats();
    s.staging_used = p.in_use_bytes;
    s.staging_cached = p.idle_bytes;
    s.staging_hits = p.hits;
    s.staging_misses = p.misses;
    s.staging_refusals = p.refusals;
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (cudaSetDevice(info().ordinal) == cudaSuccess &&
        cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      s.has_memory = true;
      s.memory_total = total_bytes;
      s.memory_used = total_bytes - free_bytes;
    } else {
      (void)cudaGetLastError();
    }
    return s;
  }
  int streams_busy() const {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_total_ - static_cast<int>(free_.size());
  }

  // A stream, its stage timer, and its nvJPEG state (with nvJPEG; made with the stream).
  struct StreamSlot {
    CudaStream stream;
    StageTimer timer;
    std::unique_ptr<NvjpegDevice::State> jpeg_state;
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
    std::unique_ptr<NvjpegDevice::State>& jpeg_state() { return slot_.jpeg_state; }

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
  // Before free_: the streams' nvJPEG states are destroyed before the handle.
  std::unique_ptr<NvjpegDevice> jpeg_;
  // After cache_: its buffers go back to the cache.
  std::unique_ptr<DetectBatcher> hog_;
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
// A JPEG decoded by nvJPEG into a buffer of one device's cache.
class CudaImage final : public DeviceImage {
 public:
  CudaImage(DeviceBufferCache::Lease buffer, int slot) : buffer_(std::move(buffer)), slot_(slot) {}
  int device() const override { return slot_; }
  const void* data() const { return buffer_.data(); }

 private:
  DeviceBufferCache::Lease buffer_;
  int slot_;
};

struct DeviceCall {
  DeviceContext& dev;
  cudaStream_t stream;
  StageTimer& timer;
  std::vector<DeviceBufferCache::Lease>& leases;
  std::vector<PinnedStagingPool::Lease>& staging;
  std::unique_ptr<NvjpegDevice::State>& jpeg_state;

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

  // The input's pixels on this device: an image decoded here as it is (the caller picked its
  // device: CudaBackend::PickFor), else host pixels copied into a buffer.
  absl::StatusOr<const void*> Input(const InputImage& in) {
    if (in.device != nullptr) return static_cast<const CudaImage*>(in.device)->data();
    CUIMG_ASSIGN_OR_RETURN(void* d_in, Acquire(in.Bytes()));
    CUIMG_RETURN_IF_ERROR(CopyIn(d_in, in.data, in.Bytes()));
    return static_cast<const void*>(d_in);
  }
  // Request bytes to the device, staged through the device's pinned pool (staged_copy.h).
  absl::Status CopyIn(void* d_dst, const void* src, std::size_t bytes) {
    return CopyToDeviceStaged(dev.staging(), d_dst, src, bytes, stream, &staging);
  }
  // Results to host memory (nothing for a null `dst`). One completion rule: `dst` holds the
  // result once `stream` is synchronized (OnDevice does so before it returns), never before.
  // Small results go through pinned staging and are in fact filled on return, large ones by one
  // asynchronous copy; callers must not read `dst` early in either case.
  absl::Status CopyOut(void* dst, const void* d_src, std::size_t bytes) {
    if (dst == nullptr || bytes == 0) return absl::OkStatus();
    if (bytes > kStageOutUpTo) {
      CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, d_src, bytes, cudaMemcpyDeviceToHost, stream),
                                 "D2H copy");
      return absl::OkStatus();
    }
    return CopyToHostStaged(dev.staging(), dst, d_src, bytes, stream, &staging);
  }
};

// The devices the CUDA backend runs on, each with its context, and its JPEG decoder.
struct CudaDevices {
  std::vector<std::unique_ptr<DeviceContext>> contexts;
  // Null: JPEGs decode on the CPU, for the reason `jpeg_note` gives (logfmt fields).
  std::shared_ptr<const NvjpegLibrary> nvjpeg;
  std::string jpeg_note;
};

// Every usable CUDA device (sm_90 or newer) with its context, and nvJPEG unless
// options.jpeg_decoder is kCpu. UNAVAILABLE without a usable device, or with kGpu when nvJPEG
// does not load; DeviceContext::Create's error when a device's context cannot be made. Under
// kAuto, nvJPEG failing to load or refusing a device leaves every device decoding JPEGs on the
// CPU (one rule for all). `arrivals`: where decodes announce themselves to the devices' batches
// (DeviceContext::Create; may be null, must outlive the devices).
absl::StatusOr<CudaDevices> CreateCudaDevices(const ServerOptions& options,
                                              const BatchArrivals* arrivals);

// One asynchronous copy of a result to host memory (nothing for a null `dst`), filled once
// `stream` is synchronized.
inline absl::Status CopyToHost(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == nullptr) return absl::OkStatus();
  CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream),
                             "D2H copy");
  return absl::OkStatus();
}

}  // namespace cuimg::cuda_backend

#endif  // CUIMG_SERVER_BACKEND_CUDA_DEVICE_H_
