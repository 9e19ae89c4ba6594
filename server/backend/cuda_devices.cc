// The CUDA backend's devices and JPEG decoder (cuda_device.h's CreateCudaDevices): which devices,
// whether nvJPEG loads, and the rule when it refuses a device.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/device_info.h"
#include "cuimg/common/status_macros.h"
#include "server/backend/cuda_device.h"
#include "server/backend/nvjpeg_library.h"

namespace cuimg::cuda_backend {

absl::StatusOr<CudaDevices> CreateCudaDevices(const ServerOptions& options) {
  const std::vector<DeviceInfo> infos = ListCudaDevices();
  if (infos.empty()) {
    return absl::UnavailableError(
        absl::StrCat("no usable CUDA device (need sm_90 or newer; ", CudaVersionString(), ")"));
  }
  // nvJPEG unless --jpeg_decoder=cpu; with =gpu its absence stops the server.
  std::shared_ptr<const NvjpegLibrary> nvjpeg;
  // Our own text, but dlerror's may hold anything: quoted for logfmt without inner quotes.
  auto cpu_note = [](absl::string_view why) {
    return absl::StrCat("jpeg_decoder=cpu jpeg_decoder_reason=\"",
                        absl::StrReplaceAll(why, {{"\"", "'"}, {"\n", " "}}), "\"");
  };
  std::string jpeg_note = cpu_note("--jpeg_decoder=cpu");
  if (options.jpeg_decoder != JpegDecoderChoice::kCpu) {
    absl::StatusOr<std::shared_ptr<const NvjpegLibrary>> loaded = NvjpegLibrary::Load();
    if (loaded.ok()) {
      nvjpeg = *std::move(loaded);
    } else if (options.jpeg_decoder == JpegDecoderChoice::kGpu) {
      return absl::UnavailableError(
          absl::StrCat("--jpeg_decoder=gpu: ", loaded.status().message()));
    } else {
      jpeg_note = cpu_note(loaded.status().message());
    }
  }
  auto create_devices = [&](const std::shared_ptr<const NvjpegLibrary>& lib)
      -> absl::StatusOr<std::vector<std::unique_ptr<DeviceContext>>> {
    std::vector<std::unique_ptr<DeviceContext>> devices;
    for (std::size_t i = 0; i < infos.size(); ++i) {
      CUIMG_ASSIGN_OR_RETURN(auto ctx,
                             DeviceContext::Create(infos[i], static_cast<int>(i), options, lib));
      devices.push_back(std::move(ctx));
    }
    return devices;
  };
  absl::StatusOr<std::vector<std::unique_ptr<DeviceContext>>> devices = create_devices(nvjpeg);
  if (!devices.ok() && nvjpeg != nullptr && options.jpeg_decoder == JpegDecoderChoice::kAuto) {
    // nvJPEG refused a device: every device decodes on the CPU then (one rule for all).
    jpeg_note = cpu_note(devices.status().message());
    nvjpeg = nullptr;
    devices = create_devices(nullptr);
  }
  if (!devices.ok()) return devices.status();
  return CudaDevices{*std::move(devices), std::move(nvjpeg), std::move(jpeg_note)};
}

}  // namespace cuimg::cuda_backend
