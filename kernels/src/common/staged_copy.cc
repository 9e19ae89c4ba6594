#include "cuimg/common/staged_copy.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

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

// `count` sync events of the current device, borrowed from a per-thread cache and given back when
// the object goes: creating and destroying them per copy cost more than a small copy's DMA.
// (An event given back while its last record is pending is simply recorded again later.)
class SyncEvents {
 public:
  static absl::StatusOr<SyncEvents> Borrow(std::size_t count) {
    SyncEvents e;
    CUIMG_CUDA_RETURN_IF_ERROR(cudaGetDevice(&e.device_), "cudaGetDevice");
    std::vector<CudaEvent>& cached = Cache(e.device_);
    while (e.events_.size() < count) {
      if (!cached.empty()) {
        e.events_.push_back(std::move(cached.back()));
        cached.pop_back();
        continue;
      }
      CUIMG_ASSIGN_OR_RETURN(CudaEvent created, CudaEvent::CreateForSync());
      e.events_.push_back(std::move(created));
    }
    return e;
  }
  SyncEvents(SyncEvents&&) = default;
  SyncEvents& operator=(SyncEvents&&) = delete;
  ~SyncEvents() {
    if (events_.empty()) return;
    std::vector<CudaEvent>& cached = Cache(device_);
    for (CudaEvent& e : events_) cached.push_back(std::move(e));
  }
  bool empty() const { return events_.empty(); }
  CudaEvent& operator[](std::size_t i) { return events_[i]; }

 private:
  SyncEvents() = default;
  static std::vector<CudaEvent>& Cache(int device) {
    thread_local std::vector<std::vector<CudaEvent>> by_device;
    if (device >= static_cast<int>(by_device.size())) by_device.resize(device + 1);
    return by_device[device];
  }

  int device_ = 0;
  std::vector<CudaEvent> events_;
};

// CUDA's attributes of `host` when it is page-locked host memory, else nullopt.
std::optional<cudaPointerAttributes> PageLockedAttributes(const void* host) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    (void)cudaGetLastError();  // not a pointer CUDA knows: pageable
    return std::nullopt;
  }
  if (attributes.type != cudaMemoryTypeHost) return std::nullopt;
  return attributes;
}

}  // namespace

bool IsPageLocked(const void* host) { return PageLockedAttributes(host).has_value(); }

void* MappedDevicePointer(const void* host) {
  const std::optional<cudaPointerAttributes> attributes = PageLockedAttributes(host);
  return attributes ? attributes->devicePointer : nullptr;
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
  CUIMG_ASSIGN_OR_RETURN(SyncEvents done,
                         SyncEvents::Borrow(total_chunks > chunks.size() ? chunks.size() : 0));
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
    CUIMG_ASSIGN_OR_RETURN(SyncEvents done, SyncEvents::Borrow(chunks.size()));
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
