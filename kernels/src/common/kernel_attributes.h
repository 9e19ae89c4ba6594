// Kernel attributes set once per (kernel, device) rather than before every launch: each
// cudaFuncSetAttribute costs about a microsecond of host time, which small images feel.
#ifndef CUIMG_KERNELS_SRC_COMMON_KERNEL_ATTRIBUTES_H_
#define CUIMG_KERNELS_SRC_COMMON_KERNEL_ATTRIBUTES_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace cuimg {

// Makes `kernel` (a __global__ function's address) launchable with `smem_bytes` of dynamic shared
// memory on the current device, and with `max_shared_carveout` prefers all of unified L1/shared
// memory as shared memory. Thread-safe; after the first call for a (kernel, device) it only takes
// a lock and a lookup, unless a larger size is asked for. Errors name the kernel.
absl::Status EnsureKernelSharedMemory(const void* kernel, std::size_t smem_bytes,
                                      const char* kernel_name, bool max_shared_carveout = false);

// CUDA's grid limits, the same on every device cuimg runs on: blocks along x, and along y or z.
inline constexpr std::int64_t kMaxGridX = 0x7fffffff;
inline constexpr std::int64_t kMaxGridYZ = 65535;
// Whether a grid of x * y * z blocks is within those limits.
constexpr bool FitsGrid(std::int64_t x, std::int64_t y, std::int64_t z) {
  return x <= kMaxGridX && y <= kMaxGridYZ && z <= kMaxGridYZ;
}

// What a planner needs to know of the device it plans for. The one place the device is asked:
// planners and launchers take its multiprocessors from here.
struct DeviceLimits {
  int multiprocessors = 0;
  // Shared memory an SM holds less one block's reservation (228 - 1 KiB on Hopper): bytes.
  std::size_t shared_memory_per_sm = 0;
};

// The current device's limits, queried once per device. Where there is no device (plans made on
// a host without a GPU: tests that describe plans, host emulation) the H100/H200's: 132 SMs and
// 227 KiB. Thread-safe.
DeviceLimits CurrentDeviceLimits();

}  // namespace cuimg

#endif  // CUIMG_KERNELS_SRC_COMMON_KERNEL_ATTRIBUTES_H_
