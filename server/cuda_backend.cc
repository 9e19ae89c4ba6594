// The CUDA backend: one context per usable device, each with a pool of streams; requests go to the
// device with the fewest requests in flight.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/device_info.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/morphology.h"
#include "server/backend.h"

namespace cuimg {
namespace {

// One GPU: its streams (leased one per request) and a count of requests in flight.
class DeviceContext {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceContext>> Create(const DeviceInfo& info,
                                                               int streams) {
    auto ctx = std::unique_ptr<DeviceContext>(new DeviceContext(info));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(info.ordinal), "cudaSetDevice");
    for (int i = 0; i < streams; ++i) {
      CUIMG_ASSIGN_OR_RETURN(CudaStream s, CudaStream::Create());
      ctx->free_.push_back(std::move(s));
    }
    return ctx;
  }

  const DeviceInfo& info() const { return info_; }
  int inflight() const { return inflight_.load(); }

  // A stream for the duration of one request; blocks while all are leased.
  class Lease {
   public:
    Lease(DeviceContext* ctx, CudaStream stream) : ctx_(ctx), stream_(std::move(stream)) {}
    ~Lease() { ctx_->Return(std::move(stream_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    cudaStream_t stream() const { return stream_.get(); }

   private:
    DeviceContext* ctx_;
    CudaStream stream_;
  };

  std::unique_ptr<Lease> Acquire() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !free_.empty(); });
    CudaStream s = std::move(free_.back());
    free_.pop_back();
    return std::make_unique<Lease>(this, std::move(s));
  }

  std::atomic<int>& inflight_counter() { return inflight_; }

 private:
  explicit DeviceContext(DeviceInfo info) : info_(std::move(info)) {}
  void Return(CudaStream s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(std::move(s));
    }
    cv_.notify_one();
  }

  DeviceInfo info_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CudaStream> free_;
  std::atomic<int> inflight_{0};
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
      : devices_(std::move(devices)) {}

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

  absl::Status Morphology(const ImageView& in, const ImageView& out,
                          const std::vector<MorphologyStep>& steps, StageTimes* times) override {
    DeviceContext& dev = PickDevice();
    InflightGuard guard(dev.inflight_counter());
    CUIMG_CUDA_RETURN_IF_ERROR(cudaSetDevice(dev.info().ordinal), "cudaSetDevice");
    CUIMG_ASSIGN_OR_RETURN(MorphologyPlan plan, MorphologyPlan::Create(in.type, in.extent, steps));
    const std::size_t bytes = in.Bytes();
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_in, DeviceBuffer::Allocate(bytes));
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_out, DeviceBuffer::Allocate(bytes));
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
    CUIMG_ASSIGN_OR_RETURN(StageTimer timer, StageTimer::Create());
    auto lease = dev.Acquire();
    const cudaStream_t stream = lease->stream();
    CUIMG_RETURN_IF_ERROR(timer.Mark(0, stream));
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(d_in.data(), in.data, bytes, cudaMemcpyHostToDevice, stream), "H2D copy");
    CUIMG_RETURN_IF_ERROR(timer.Mark(1, stream));
    CUIMG_RETURN_IF_ERROR(plan.Run(d_in.data(), d_out.data(), d_ws.data(), stream));
    CUIMG_RETURN_IF_ERROR(timer.Mark(2, stream));
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out.data, d_out.data(), bytes, cudaMemcpyDeviceToHost, stream), "D2H copy");
    CUIMG_RETURN_IF_ERROR(timer.Mark(3, stream));
    CUIMG_RETURN_IF_ERROR(timer.Fill(times));
    times->device = dev.info().ordinal;
    return absl::OkStatus();
  }

 private:
  struct InflightGuard {
    explicit InflightGuard(std::atomic<int>& c) : counter(c) { counter.fetch_add(1); }
    ~InflightGuard() { counter.fetch_sub(1); }
    std::atomic<int>& counter;
  };

  DeviceContext& PickDevice() {
    DeviceContext* best = devices_.front().get();
    for (const auto& d : devices_) {
      if (d->inflight() < best->inflight()) best = d.get();
    }
    return *best;
  }

  std::vector<std::unique_ptr<DeviceContext>> devices_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateCudaBackend(const ServerOptions& options) {
  const std::vector<DeviceInfo> infos = ListCudaDevices();
  if (infos.empty()) {
    return absl::UnavailableError(
        absl::StrCat("no usable CUDA device (need sm_90 or newer; ", CudaVersionString(), ")"));
  }
  std::vector<std::unique_ptr<DeviceContext>> devices;
  for (const DeviceInfo& info : infos) {
    CUIMG_ASSIGN_OR_RETURN(auto ctx, DeviceContext::Create(info, options.worker_threads));
    devices.push_back(std::move(ctx));
  }
  return std::unique_ptr<Backend>(std::make_unique<CudaBackend>(std::move(devices)));
}

}  // namespace cuimg
