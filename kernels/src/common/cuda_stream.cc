#include "cuimg/common/cuda_stream.h"

#include "cuimg/common/cuda_status.h"

namespace cuimg {

absl::StatusOr<CudaStream> CudaStream::Create() {
  cudaStream_t stream = nullptr;
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                             "cudaStreamCreateWithFlags");
  return CudaStream(stream);
}

absl::Status CudaStream::Synchronize() const {
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  return absl::OkStatus();
}

void CudaStream::Reset() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

absl::StatusOr<CudaEvent> CudaEvent::Create() {
  cudaEvent_t event = nullptr;
  CUIMG_CUDA_RETURN_IF_ERROR(cudaEventCreate(&event), "cudaEventCreate");
  return CudaEvent(event);
}

absl::StatusOr<CudaEvent> CudaEvent::CreateForSync() {
  cudaEvent_t event = nullptr;
  CUIMG_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                             "cudaEventCreateWithFlags");
  return CudaEvent(event);
}

absl::Status CudaEvent::Record(cudaStream_t stream) const {
  CUIMG_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, stream), "cudaEventRecord");
  return absl::OkStatus();
}

absl::Status CudaEvent::Synchronize() const {
  CUIMG_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_), "cudaEventSynchronize");
  return absl::OkStatus();
}

absl::StatusOr<float> CudaEvent::ElapsedMs(const CudaEvent& start, const CudaEvent& stop) {
  float ms = 0.0f;
  CUIMG_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.event_, stop.event_),
                             "cudaEventElapsedTime");
  return ms;
}

void CudaEvent::Reset() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);
  event_ = nullptr;
}

}  // namespace cuimg
