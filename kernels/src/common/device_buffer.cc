#include "cuimg/common/device_buffer.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_status.h"

namespace cuimg {

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(std::size_t bytes) {
  if (bytes == 0) return DeviceBuffer();
  void* data = nullptr;
  const cudaError_t error = cudaMalloc(&data, bytes);
  if (error != cudaSuccess) {
    return CudaStatus(error, absl::StrCat("cudaMalloc(", bytes, " bytes)").c_str(), __FILE__,
                      __LINE__);
  }
  return DeviceBuffer(data, bytes);
}

void DeviceBuffer::Reset() {
  // A failing cudaFree (e.g. after a sticky error) cannot be acted on here; the device is
  // reported unhealthy by the call that hit the error.
  if (data_ != nullptr) (void)cudaFree(data_);
  data_ = nullptr;
  size_ = 0;
}

absl::StatusOr<PinnedBuffer> PinnedBuffer::Allocate(std::size_t bytes) {
  if (bytes == 0) return PinnedBuffer();
  void* data = nullptr;
  const cudaError_t error = cudaMallocHost(&data, bytes);
  if (error != cudaSuccess) {
    return CudaStatus(error, absl::StrCat("cudaMallocHost(", bytes, " bytes)").c_str(), __FILE__,
                      __LINE__);
  }
  return PinnedBuffer(data, bytes);
}

void PinnedBuffer::Reset() {
  if (data_ != nullptr) (void)cudaFreeHost(data_);
  data_ = nullptr;
  size_ = 0;
}

absl::StatusOr<HostRegistration> HostRegistration::Register(void* data, std::size_t bytes) {
  const cudaError_t error =
      cudaHostRegister(data, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (error != cudaSuccess) {
    return CudaStatus(error, absl::StrCat("cudaHostRegister(", bytes, " bytes)").c_str(), __FILE__,
                      __LINE__);
  }
  return HostRegistration(data);
}

void HostRegistration::Reset() {
  if (data_ != nullptr) (void)cudaHostUnregister(data_);
  data_ = nullptr;
}

}  // namespace cuimg
