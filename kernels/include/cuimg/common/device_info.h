// What the process can see of CUDA devices, without failing where there is no GPU or driver.
#ifndef CUIMG_COMMON_DEVICE_INFO_H_
#define CUIMG_COMMON_DEVICE_INFO_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cuimg {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  std::size_t total_memory = 0;
};

// The usable CUDA devices: empty (not an error) when there is no GPU, no driver, or the driver is
// too old for this build. Each has compute capability >= the build's lowest architecture.
std::vector<DeviceInfo> ListCudaDevices();

// A one-line description of the CUDA runtime and driver versions (for logs and BENCHMARKS.md).
std::string CudaVersionString();

}  // namespace cuimg

#endif  // CUIMG_COMMON_DEVICE_INFO_H_
