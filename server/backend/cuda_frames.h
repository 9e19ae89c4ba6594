// The CUDA backend's DICOM frames (DeviceFrameDecoder, device_jpeg.h): nvJPEG2000 on each GPU
// (nvjpeg2k_frames.h) decodes a volume's JPEG 2000 and HTJ2K frames into device memory, the host
// decodes the frames it does not take, the rescale runs on the device (kernels: stored_values.h),
// and the result is a device image the work call reads without a copy. Internal to the CUDA
// backend.
#ifndef CUIMG_SERVER_BACKEND_CUDA_FRAMES_H_
#define CUIMG_SERVER_BACKEND_CUDA_FRAMES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/cuda_device.h"
#include "server/backend/device_jpeg.h"
#include "server/backend/nvjpeg2k_frames.h"
#include "server/backend/nvjpeg2k_library.h"

namespace cuimg::cuda_backend {

class CudaFrameDecoder final : public DeviceFrameDecoder {
 public:
  // One nvJPEG2000 device per GPU of `devices` (which outlive the decoder; slot id i is
  // devices[i]). UNAVAILABLE when one cannot be made.
  static absl::StatusOr<std::unique_ptr<CudaFrameDecoder>> Create(
      std::shared_ptr<const Nvjpeg2kLibrary> lib, std::vector<DeviceContext*> devices);

  std::string Summary() const override;
  absl::StatusOr<std::unique_ptr<const DeviceImage>> DecodeFrames(
      const FrameVolume& volume, absl::string_view frames_field, const HostFrameDecode& on_host,
      DecodeThreads* threads, const CancelToken& cancel) override;
  absl::StatusOr<std::vector<std::vector<std::uint8_t>>> EncodeHtj2kLossless(
      const ImageView& image, DecodeThreads* threads) override;

 private:
  CudaFrameDecoder() = default;
  // The decode on `dev` once its slot is held; the result's buffer comes from its cache.
  absl::StatusOr<std::unique_ptr<const DeviceImage>> DecodeOn(
      DeviceContext& dev, const Nvjpeg2kDevice& nvjpeg2k, const FrameVolume& volume,
      absl::string_view frames_field, const HostFrameDecode& on_host, DecodeThreads* threads,
      const CancelToken& cancel);

  std::shared_ptr<const Nvjpeg2kLibrary> lib_;
  std::vector<DeviceContext*> devices_;
  std::vector<DeviceSlot*> slots_;
  std::vector<std::unique_ptr<Nvjpeg2kDevice>> nvjpeg2k_;  // one per device
};

}  // namespace cuimg::cuda_backend

#endif  // CUIMG_SERVER_BACKEND_CUDA_FRAMES_H_
