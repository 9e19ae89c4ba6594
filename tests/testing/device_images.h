// Images to and from the device for GPU tests.
#ifndef CUIMG_TESTS_TESTING_DEVICE_IMAGES_H_
#define CUIMG_TESTS_TESTING_DEVICE_IMAGES_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/image.h"

namespace cuimg::testing {

// A device copy of `image`, complete when this returns.
inline absl::StatusOr<DeviceBuffer> UploadImage(const Image& image) {
  absl::StatusOr<DeviceBuffer> d = DeviceBuffer::Allocate(image.size_bytes());
  if (!d.ok()) return d.status();
  if (cudaMemcpy(d->data(), image.bytes(), image.size_bytes(), cudaMemcpyHostToDevice) !=
      cudaSuccess) {
    return absl::InternalError("upload");
  }
  // cudaMemcpy/cudaMemset run on the legacy default stream and may return before they finish;
  // the plans run on non-blocking streams, which do not wait for it: finish them first.
  if (cudaDeviceSynchronize() != cudaSuccess) return absl::InternalError("upload");
  return d;
}

// `d` (image->size_bytes() of device memory) into `image`.
inline absl::Status DownloadImage(const DeviceBuffer& d, Image* image) {
  return cudaMemcpy(image->bytes(), d.data(), image->size_bytes(), cudaMemcpyDeviceToHost) ==
                 cudaSuccess
             ? absl::OkStatus()
             : absl::InternalError("download");
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_DEVICE_IMAGES_H_
