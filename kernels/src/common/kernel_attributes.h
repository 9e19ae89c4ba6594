// Kernel attributes set once per (kernel, device) rather than before every launch: each
// cudaFuncSetAttribute costs about a microsecond of host time, which small images feel.
#ifndef CUIMG_KERNELS_SRC_COMMON_KERNEL_ATTRIBUTES_H_
#define CUIMG_KERNELS_SRC_COMMON_KERNEL_ATTRIBUTES_H_

#include <cstddef>

#include "absl/status/status.h"

namespace cuimg {

// Makes `kernel` (a __global__ function's address) launchable with `smem_bytes` of dynamic shared
// memory on the current device, and with `max_shared_carveout` prefers all of unified L1/shared
// memory as shared memory. Thread-safe; after the first call for a (kernel, device) it only takes
// a lock and a lookup, unless a larger size is asked for. Errors name the kernel.
absl::Status EnsureKernelSharedMemory(const void* kernel, std::size_t smem_bytes,
                                      const char* kernel_name, bool max_shared_carveout = false);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_SRC_COMMON_KERNEL_ATTRIBUTES_H_
