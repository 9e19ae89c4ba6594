#include "kernel_attributes.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <utility>

#include "cuimg/common/cuda_status.h"

namespace cuimg {

absl::Status EnsureKernelSharedMemory(const void* kernel, std::size_t smem_bytes,
                                      const char* kernel_name, bool max_shared_carveout) {
  int device = 0;
  CUIMG_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device), "cudaGetDevice");
  static std::mutex mu;
  // (kernel, device) -> the dynamic shared memory size already allowed.
  static auto* configured = new std::map<std::pair<const void*, int>, std::size_t>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = configured->find({kernel, device});
  if (it != configured->end() && it->second >= smem_bytes) return absl::OkStatus();
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(smem_bytes)),
      kernel_name);
  if (max_shared_carveout) {
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared),
        kernel_name);
  }
  (*configured)[{kernel, device}] = smem_bytes;
  return absl::OkStatus();
}

DeviceLimits CurrentDeviceLimits() {
  constexpr DeviceLimits kHopper{132, 227 * 1024};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();  // no device or driver: not sticky, clear it
    return kHopper;
  }
  static std::mutex mu;
  static auto* known = new std::map<int, DeviceLimits>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = known->find(device);
  if (it != known->end()) return it->second;
  int sms = 0;
  int smem = 0;
  int reserved = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device) !=
          cudaSuccess) {
    (void)cudaGetLastError();
    return kHopper;
  }
  const DeviceLimits limits{sms, static_cast<std::size_t>(smem - reserved)};
  (*known)[device] = limits;
  return limits;
}

}  // namespace cuimg
