#include "cuimg/common/device_info.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"

namespace cuimg {

std::vector<DeviceInfo> ListCudaDevices() {
  std::vector<DeviceInfo> devices;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // No driver or no device: the CPU backend serves instead.
    return devices;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    // Kernels are built for sm_90 (+ PTX); older devices cannot run them.
    if (prop.major < 9) continue;
    devices.push_back(DeviceInfo{i, prop.name, prop.major, prop.minor, prop.multiProcessorCount,
                                 prop.totalGlobalMem});
  }
  return devices;
}

std::string CudaVersionString() {
  int runtime = 0;
  int driver = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  if (cudaDriverGetVersion(&driver) != cudaSuccess) (void)cudaGetLastError();
  auto fmt = [](int v) { return absl::StrCat(v / 1000, ".", (v % 1000) / 10); };
  return absl::StrCat("CUDA runtime ", fmt(runtime), ", driver API ",
                      driver == 0 ? std::string("none") : fmt(driver));
}

}  // namespace cuimg
