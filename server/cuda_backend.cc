// The CUDA backend: one context per usable device, each with a stream pool and a caching device
// allocator; requests go to the least-loaded healthy device (device_slot.h). A sticky CUDA error
// takes the device out of rotation.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer_cache.h"
#include "cuimg/common/device_info.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/morphology.h"
#include "server/backend.h"
#include "server/device_slot.h"

namespace cuimg {
namespace {

// One GPU: its slot, streams (leased one per request) and buffer cache.
class DeviceContext {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceContext>> Create(const DeviceInfo& info, int id,
                                                               const ServerOptions& options) {
    auto ctx = std::unique_ptr<DeviceContext>(new DeviceContext(info, id, options));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(info.ordinal), "cudaSetDevice");
    for (int i = 0; i < options.worker_threads; ++i) {
      CUIMG_ASSIGN_OR_RETURN(CudaStream s, CudaStream::Create());
      ctx->free_.push_back(std::move(s));
    }
    ctx->streams_total_ = options.worker_threads;
    return ctx;
  }

  const DeviceInfo& info() const { return info_; }
  DeviceSlot& slot() { return slot_; }
  const DeviceSlot& slot() const { return slot_; }
  DeviceBufferCache& cache() { return cache_; }
  const DeviceBufferCache& cache() const { return cache_; }
  int streams_total() const { return streams_total_; }
  int streams_busy() const {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_total_ - static_cast<int>(free_.size());
  }

  // A stream for the duration of one request; blocks while all are leased.
  class StreamLease {
   public:
    StreamLease(DeviceContext* ctx, CudaStream stream) : ctx_(ctx), stream_(std::move(stream)) {}
    ~StreamLease() { ctx_->Return(std::move(stream_)); }
    StreamLease(const StreamLease&) = delete;
    StreamLease& operator=(const StreamLease&) = delete;
    cudaStream_t get() const { return stream_.get(); }

   private:
    DeviceContext* ctx_;
    CudaStream stream_;
  };

  std::unique_ptr<StreamLease> AcquireStream() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !free_.empty(); });
    CudaStream s = std::move(free_.back());
    free_.pop_back();
    return std::make_unique<StreamLease>(this, std::move(s));
  }

 private:
  DeviceContext(const DeviceInfo& info, int id, const ServerOptions& options)
      : info_(info),
        slot_(id, absl::StrCat("cuda", info.ordinal), options.fault),
        cache_(info.ordinal, options.device_cache_bytes) {}
  void Return(CudaStream s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(std::move(s));
    }
    cv_.notify_one();
  }

  DeviceInfo info_;
  DeviceSlot slot_;
  DeviceBufferCache cache_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CudaStream> free_;
  int streams_total_ = 0;
};

struct SyncOnExit {
  cudaStream_t stream;
  ~SyncOnExit() { (void)cudaStreamSynchronize(stream); }
};

// Records events around each stage of one request and reads them once the stream is done.
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

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(std::vector<std::unique_ptr<DeviceContext>> devices)
      : devices_(std::move(devices)) {
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
                          const std::vector<MorphologyStep>& steps, StageTimes* times) override {
    CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
    DeviceContext& dev = *devices_[use.slot().id()];
    times->device = dev.info().ordinal;
    const absl::Status status = RunMorphology(dev, in, out, steps, times);
    if (!status.ok()) CheckSticky(dev);
    return status;
  }

 private:
  absl::Status RunMorphology(DeviceContext& dev, const ImageView& in, const ImageView& out,
                             const std::vector<MorphologyStep>& steps, StageTimes* times) {
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(dev.info().ordinal), "cudaSetDevice");
    CUIMG_ASSIGN_OR_RETURN(MorphologyPlan plan, MorphologyPlan::Create(in.type, in.extent, steps));
    const std::size_t bytes = in.Bytes();
    CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease d_in, dev.cache().Acquire(bytes));
    CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease d_out, dev.cache().Acquire(bytes));
    CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease d_ws, dev.cache().Acquire(plan.WorkspaceBytes()));
    CUIMG_ASSIGN_OR_RETURN(StageTimer timer, StageTimer::Create());
    auto stream = dev.AcquireStream();
    const cudaStream_t s = stream->get();
    // Whatever happens below, the buffers go back to the cache only once the stream is idle.
    const SyncOnExit sync{s};
    CUIMG_RETURN_IF_ERROR(timer.Mark(0, s));
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(d_in.data(), in.data, bytes, cudaMemcpyHostToDevice, s), "H2D copy");
    CUIMG_RETURN_IF_ERROR(timer.Mark(1, s));
    CUIMG_RETURN_IF_ERROR(plan.Run(d_in.data(), d_out.data(), d_ws.data(), s));
    CUIMG_RETURN_IF_ERROR(timer.Mark(2, s));
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out.data, d_out.data(), bytes, cudaMemcpyDeviceToHost, s), "D2H copy");
    CUIMG_RETURN_IF_ERROR(timer.Mark(3, s));
    return timer.Fill(times);
  }

  // A sticky error poisons the context: the device leaves rotation until the process restarts.
  static void CheckSticky(DeviceContext& dev) {
    const cudaError_t e = cudaPeekAtLastError();
    if (IsStickyCudaError(e)) {
      dev.slot().MarkFailed(absl::StrCat("sticky CUDA error ", cudaGetErrorName(e)));
    }
  }

  std::vector<std::unique_ptr<DeviceContext>> devices_;
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
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(std::move(devices)));
}

}  // namespace cuimg
