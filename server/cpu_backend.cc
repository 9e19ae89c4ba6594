// The CPU backend: runs the CPU references. For development, CI and GPU-less nodes. It presents
// `cpu_devices` scheduling units so that multi-device behaviour (health, rotation) is testable
// without GPUs.
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/reference/morphology_reference.h"
#include "server/backend.h"
#include "server/device_slot.h"

namespace cuimg {
namespace {

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
    return absl::StrCat("backend=cpu cores=", std::thread::hardware_concurrency(),
                        " devices=", slots_.size(), " threads_per_request=",
                        threads_ == 0 ? std::string("all") : absl::StrCat(threads_));
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

  absl::Status Morphology(const ImageView& in, const ImageView& out,
                          const std::vector<MorphologyStep>& steps, StageTimes* times) override {
    CUIMG_ASSIGN_OR_RETURN(DeviceUse use, DeviceUse::Acquire(slots_));
    times->device = use.slot().id();
    const auto start = std::chrono::steady_clock::now();
    Image input(in.type, in.extent, in.channels);
    std::memcpy(input.bytes(), in.data, in.Bytes());
    CUIMG_ASSIGN_OR_RETURN(Image result, MorphologyReference(input, steps, threads_));
    std::memcpy(out.data, result.bytes(), result.size_bytes());
    times->kernel_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    return absl::OkStatus();
  }

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
