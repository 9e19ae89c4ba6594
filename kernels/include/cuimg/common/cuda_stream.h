// Owners of CUDA streams and events. Move-only; destructors release quietly. Functions that only
// use a stream take cudaStream_t.
#ifndef CUIMG_COMMON_CUDA_STREAM_H_
#define CUIMG_COMMON_CUDA_STREAM_H_

#include <cuda_runtime_api.h>

#include <utility>

#include "absl/status/statusor.h"

namespace cuimg {

class CudaStream {
 public:
  CudaStream() = default;
  // A non-blocking stream on the current device (it does not synchronize with stream 0).
  static absl::StatusOr<CudaStream> Create();

  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept {
    if (this != &other) {
      Reset();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() { Reset(); }

  cudaStream_t get() const { return stream_; }
  // Blocks until all work queued on the stream has finished.
  absl::Status Synchronize() const;

 private:
  explicit CudaStream(cudaStream_t stream) : stream_(stream) {}
  void Reset();
  cudaStream_t stream_ = nullptr;
};

class CudaEvent {
 public:
  CudaEvent() = default;
  // An event that records timing.
  static absl::StatusOr<CudaEvent> Create();
  // An event only waited on (no timing), which records and synchronizes faster.
  static absl::StatusOr<CudaEvent> CreateForSync();

  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& other) noexcept {
    if (this != &other) {
      Reset();
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() { Reset(); }

  cudaEvent_t get() const { return event_; }
  absl::Status Record(cudaStream_t stream) const;
  absl::Status Synchronize() const;
  // Milliseconds between two recorded, completed events.
  static absl::StatusOr<float> ElapsedMs(const CudaEvent& start, const CudaEvent& stop);

 private:
  explicit CudaEvent(cudaEvent_t event) : event_(event) {}
  void Reset();
  cudaEvent_t event_ = nullptr;
};

}  // namespace cuimg

#endif  // CUIMG_COMMON_CUDA_STREAM_H_
