#include "cuimg/common/staged_copy.h"

#include <algorithm>
#include <cstring>

#include "absl/status/statusor.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

// Leases up to `wanted` chunks into `keep` and returns their memory; fewer (possibly none) when
// the pool's budget is spent. Other failures (cudaHostAlloc's) are returned.
absl::StatusOr<std::vector<void*>> LeaseChunks(PinnedStagingPool& pool, std::size_t wanted,
                                              std::vector<PinnedStagingPool::Lease>* keep) {
  std::vector<void*> chunks;
  while (chunks.size() < wanted) {
    absl::StatusOr<PinnedStagingPool::Lease> lease = pool.Acquire();
    if (!lease.ok()) {
      if (lease.status().code() == absl::StatusCode::kResourceExhausted) break;
      return lease.status();
    }
    chunks.push_back(lease->data());
    keep->push_back(*std::move(lease));
  }
  return chunks;
}

std::size_t ChunksFor(const PinnedStagingPool& pool, std::size_t bytes) {
  const std::size_t count = (bytes + pool.chunk_bytes() - 1) / pool.chunk_bytes();
  return std::min<std::size_t>(count, kStagingDepth);
}

absl::StatusOr<std::vector<CudaEvent>> SyncEvents(std::size_t count) {
  std::vector<CudaEvent> events;
  for (std::size_t i = 0; i < count; ++i) {
    CUIMG_ASSIGN_OR_RETURN(CudaEvent e, CudaEvent::CreateForSync());
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace

bool IsPageLocked(const void* host) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    (void)cudaGetLastError();  // not a pointer CUDA knows: pageable
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

absl::Status CopyToDeviceStaged(PinnedStagingPool& pool, void* d_dst, const void* src,
                                std::size_t bytes, cudaStream_t stream,
                                std::vector<PinnedStagingPool::Lease>* keep) {
  if (bytes == 0) return absl::OkStatus();
  std::vector<void*> chunks;
  if (!IsPageLocked(src)) {
    CUIMG_ASSIGN_OR_RETURN(chunks, LeaseChunks(pool, ChunksFor(pool, bytes), keep));
  }
  if (chunks.empty()) {
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_dst, src, bytes, cudaMemcpyHostToDevice, stream),
                               "H2D copy");
    return absl::OkStatus();
  }
  const std::size_t chunk_bytes = pool.chunk_bytes();
  const std::size_t total_chunks = (bytes + chunk_bytes - 1) / chunk_bytes;
  // A chunk is refilled only once its previous DMA is done; a copy that fits the ring needs none.
  std::vector<CudaEvent> done;
  if (total_chunks > chunks.size()) {
    CUIMG_ASSIGN_OR_RETURN(done, SyncEvents(chunks.size()));
  }
  const auto* from = static_cast<const unsigned char*>(src);
  auto* to = static_cast<unsigned char*>(d_dst);
  for (std::size_t i = 0; i < total_chunks; ++i) {
    const std::size_t slot = i % chunks.size();
    const std::size_t offset = i * chunk_bytes;
    const std::size_t length = std::min(chunk_bytes, bytes - offset);
    if (i >= chunks.size()) CUIMG_RETURN_IF_ERROR(done[slot].Synchronize());
    std::memcpy(chunks[slot], from + offset, length);
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(to + offset, chunks[slot], length, cudaMemcpyHostToDevice, stream),
        "H2D staged copy");
    if (!done.empty()) CUIMG_RETURN_IF_ERROR(done[slot].Record(stream));
  }
  return absl::OkStatus();
}

absl::Status CopyToHostStaged(PinnedStagingPool& pool, void* dst, const void* d_src,
                              std::size_t bytes, cudaStream_t stream,
                              std::vector<PinnedStagingPool::Lease>* keep) {
  if (bytes == 0) return absl::OkStatus();
  // A staged copy that returns OK has waited for every chunk's DMA, so its chunks go straight back
  // to the pool; only a failed one leaves them to the caller (a DMA may still be running).
  std::vector<PinnedStagingPool::Lease> leased;
  std::vector<void*> chunks;
  if (!IsPageLocked(dst)) {
    CUIMG_ASSIGN_OR_RETURN(chunks, LeaseChunks(pool, ChunksFor(pool, bytes), &leased));
  }
  if (chunks.empty()) {
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, d_src, bytes, cudaMemcpyDeviceToHost, stream),
                               "D2H copy");
    return absl::OkStatus();
  }
  const absl::Status status = [&]() -> absl::Status {
    const std::size_t chunk_bytes = pool.chunk_bytes();
    const std::size_t total_chunks = (bytes + chunk_bytes - 1) / chunk_bytes;
    CUIMG_ASSIGN_OR_RETURN(std::vector<CudaEvent> done, SyncEvents(chunks.size()));
    const auto* from = static_cast<const unsigned char*>(d_src);
    auto* to = static_cast<unsigned char*>(dst);
    // Chunk i is emptied by the CPU once its DMA is done, just before its slot takes chunk
    // i + depth, or at the end.
    auto empty = [&](std::size_t i) -> absl::Status {
      const std::size_t slot = i % chunks.size();
      const std::size_t offset = i * chunk_bytes;
      CUIMG_RETURN_IF_ERROR(done[slot].Synchronize());
      std::memcpy(to + offset, chunks[slot], std::min(chunk_bytes, bytes - offset));
      return absl::OkStatus();
    };
    for (std::size_t i = 0; i < total_chunks; ++i) {
      const std::size_t slot = i % chunks.size();
      const std::size_t offset = i * chunk_bytes;
      if (i >= chunks.size()) CUIMG_RETURN_IF_ERROR(empty(i - chunks.size()));
      CUIMG_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(chunks[slot], from + offset, std::min(chunk_bytes, bytes - offset),
                          cudaMemcpyDeviceToHost, stream),
          "D2H staged copy");
      CUIMG_RETURN_IF_ERROR(done[slot].Record(stream));
    }
    const std::size_t first_pending = total_chunks - std::min(total_chunks, chunks.size());
    for (std::size_t i = first_pending; i < total_chunks; ++i) CUIMG_RETURN_IF_ERROR(empty(i));
    return absl::OkStatus();
  }();
  if (!status.ok()) {
    for (PinnedStagingPool::Lease& lease : leased) keep->push_back(std::move(lease));
  }
  return status;
}

}  // namespace cuimg
