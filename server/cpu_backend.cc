// The CPU backend: runs the CPU references. For development, CI and GPU-less nodes.
#include <chrono>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/reference/morphology_reference.h"
#include "server/backend.h"

namespace cuimg {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {}

  absl::string_view name() const override { return "cpu"; }

  std::string Describe() const override {
    return absl::StrCat("backend=cpu cores=", std::thread::hardware_concurrency(),
                        " threads_per_request=", threads_ == 0 ? std::string("all")
                                                               : absl::StrCat(threads_));
  }

  absl::Status Morphology(const ImageView& in, const ImageView& out,
                          const std::vector<MorphologyStep>& steps, StageTimes* times) override {
    const auto start = std::chrono::steady_clock::now();
    Image input(in.type, in.extent, in.channels);
    std::memcpy(input.bytes(), in.data, in.Bytes());
    CUIMG_ASSIGN_OR_RETURN(Image result, MorphologyReference(input, steps, threads_));
    std::memcpy(out.data, result.bytes(), result.size_bytes());
    times->kernel_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    times->device = -1;
    return absl::OkStatus();
  }

 private:
  int threads_;
};

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace cuimg
