// One GPU's nvJPEG decoder: the library handle (RAII), made with the hardware JPEG engines'
// backend where nvjpegCreateEx accepts it (A100, H100, H200), else GPU-assisted Huffman; and the
// per-stream decode state that nvJPEG requires for decodes running at once.
#ifndef CUIMG_SERVER_NVJPEG_DECODER_H_
#define CUIMG_SERVER_NVJPEG_DECODER_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/common/image.h"
#include "server/backend/nvjpeg_library.h"

namespace cuimg {

class NvjpegDevice {
 public:
  // Decode state for one stream at a time (nvJPEG's JpegState and JpegStream, owned).
  class State {
   public:
    ~State();
    State(const State&) = delete;
    State& operator=(const State&) = delete;

   private:
    friend class NvjpegDevice;
    State() = default;
    std::shared_ptr<const NvjpegLibrary> lib_;
    void* state_ = nullptr;    // nvjpegJpegState_t
    void* stream_ = nullptr;   // nvjpegJpegStream_t
    int batched_format_ = -1;  // the output format the batched decoder was initialized for
  };

  // For the current device. UNAVAILABLE when nvjpegCreateEx refuses every backend.
  static absl::StatusOr<std::unique_ptr<NvjpegDevice>> Create(
      std::shared_ptr<const NvjpegLibrary> lib);
  ~NvjpegDevice();
  NvjpegDevice(const NvjpegDevice&) = delete;
  NvjpegDevice& operator=(const NvjpegDevice&) = delete;

  // True with the hardware backend (single-scan baseline files only: JpegGpuRefusal's rule).
  bool hardware() const { return hardware_; }
  // "hardware" or "gpu_hybrid" / "default".
  const std::string& backend_name() const { return backend_name_; }

  // A state for one stream, with the device current.
  absl::StatusOr<std::unique_ptr<State>> CreateState() const;

  // Decodes `jpeg` into `d_out` on `stream`: `shape` (ProbeImage's) is the output, U8, 1 channel
  // (gray: luma) or 3 (BGR interleaved), rows tightly packed; returns once `stream` is idle.
  // FAILED_PRECONDITION when nvJPEG reads another size or component count than `shape` (nothing
  // is written then) or its hardware backend does not take the file; INVALID_ARGUMENT when nvJPEG
  // finds the stream corrupt; a CUDA error's status for the stream. `state` is reset after a
  // failure, so it stays usable.
  absl::Status Decode(State& state, absl::Span<const std::uint8_t> jpeg, const ImageView& shape,
                      void* d_out, cudaStream_t stream) const;

 private:
  NvjpegDevice() = default;
  std::shared_ptr<const NvjpegLibrary> lib_;
  void* handle_ = nullptr;  // nvjpegHandle_t
  bool hardware_ = false;
  std::string backend_name_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_NVJPEG_DECODER_H_
