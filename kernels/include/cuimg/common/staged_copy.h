// Copies between host memory and one device that stage pageable host memory through a
// PinnedStagingPool in chunks, so that the CPU's copy of one chunk overlaps the DMA of another
// (a DMA from pageable memory is bounced through the driver's own buffer one piece at a time).
// Host memory that is already page-locked (cudaHostAlloc, cudaHostRegister) is copied directly.
#ifndef CUIMG_COMMON_STAGED_COPY_H_
#define CUIMG_COMMON_STAGED_COPY_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "cuimg/common/pinned_staging_pool.h"

namespace cuimg {

// Chunks one staged copy cycles through: while the DMA engine works on one, the CPU fills (or
// empties) the next.
inline constexpr int kStagingDepth = 3;

// True when `host` lies in page-locked memory the device can DMA from directly.
bool IsPageLocked(const void* host);

// The address at which kernels on the current device reach `host`: page-locked host memory mapped
// into the device (cudaHostRegisterMapped, cudaHostAlloc), else null.
void* MappedDevicePointer(const void* host);

// Copies `bytes` from host `src` to device `d_dst` on `stream`.
// - Page-locked `src`: one cudaMemcpyAsync, asynchronous.
// - Pageable `src`: through up to kStagingDepth chunks of `pool`, each filled by the CPU and then
//   DMAed; returns when the last chunk's DMA is queued. Where the pool has no chunk to give, the
//   copy goes from pageable memory as it would without staging.
// The chunks used are appended to `keep`; the caller must hold them, and keep `src` valid, until
// `stream` is synchronized. The calling thread's current device must be `d_dst`'s. `bytes` 0 does
// nothing.
absl::Status CopyToDeviceStaged(PinnedStagingPool& pool, void* d_dst, const void* src,
                                std::size_t bytes, cudaStream_t stream,
                                std::vector<PinnedStagingPool::Lease>* keep);

// Copies `bytes` from device `d_src` to host `dst` after the work queued on `stream`.
// - Page-locked `dst`: one cudaMemcpyAsync, asynchronous: `dst` is complete once `stream` is.
// - Pageable `dst`: chunks are DMAed into `pool`'s memory and copied out by the CPU while the next
//   chunk's DMA runs; returns once `dst` is complete (it waits for the work before it on
//   `stream`), and its chunks are back in the pool. Without a chunk from the pool, one
//   cudaMemcpyAsync from pageable memory.
// On an error, the chunks in use are appended to `keep`, to be held until `stream` is
// synchronized. `bytes` 0 does nothing.
absl::Status CopyToHostStaged(PinnedStagingPool& pool, void* dst, const void* d_src,
                              std::size_t bytes, cudaStream_t stream,
                              std::vector<PinnedStagingPool::Lease>* keep);

}  // namespace cuimg

#endif  // CUIMG_COMMON_STAGED_COPY_H_
