// One GPU's nvJPEG2000: a volume's JPEG 2000 and HTJ2K frames decoded straight into its device
// buffer, and slices encoded as HTJ2K lossless frames. nvJPEG2000 0.11 has no batched decode, so
// frames run through pipelines (a decode state, a parsed-stream handle and a CUDA stream each):
// each host thread keeps several in flight (parsing the next frame on the CPU while the earlier
// ones decode on the GPU), and several threads share the device. Values equal the CPU decoders'
// (the stored-value rule, codec/dicom_frame.h, applied on the device where the codestream's own
// sample type is not the frame's).
#ifndef CUIMG_SERVER_NVJPEG2K_FRAMES_H_
#define CUIMG_SERVER_NVJPEG2K_FRAMES_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/codec/decode_threads.h"
#include "cuimg/codec/dicom_frame.h"
#include "cuimg/common/image.h"
#include "server/backend/nvjpeg2k_library.h"

namespace cuimg {

class Nvjpeg2kDevice {
 public:
  // For the current device; each decoding thread keeps `decodes_per_thread` (>= 1) frames in
  // flight. UNAVAILABLE when nvJPEG2000 cannot create its handles.
  static absl::StatusOr<std::unique_ptr<Nvjpeg2kDevice>> Create(
      std::shared_ptr<const Nvjpeg2kLibrary> lib, int decodes_per_thread = kDecodesPerThread);
  // Four: on an H200 (frame_decode_bench --sweep) 1 to 16 in flight decode 300 frames in the
  // same wall time (the GPU is the limit: J2K ~420 ms, HTJ2K ~30 ms), and four use half the CPU
  // time of two, which the server's other requests then have.
  static constexpr int kDecodesPerThread = 4;
  ~Nvjpeg2kDevice();
  Nvjpeg2kDevice(const Nvjpeg2kDevice&) = delete;
  Nvjpeg2kDevice& operator=(const Nvjpeg2kDevice&) = delete;

  // "" when nvJPEG2000 may take `frame`, else why not (the CPU decodes it then): a syntax other
  // than JPEG 2000 or HTJ2K, a codestream whose headers do not parse or whose size, components or
  // precision (at most 16 bits) disagree with `description` (ReadJ2kSiz, CheckJ2kSiz: the device
  // buffer is sized from the description), or a JP2 file. Reads only the headers.
  static std::string Refusal(FrameSyntax syntax, const FrameDescription& description,
                             absl::Span<const std::uint8_t> frame);

  // Decodes frames[i] (of `syntax` and `description`) into d_volume + i * DecodedFrameBytes(
  // description) on this device, using the idle threads of `threads` (may be null: the caller's
  // thread alone). outcomes[i] is OK, or why the frame was not decoded here (Refusal's reason,
  // or nvJPEG2000 refused the codestream or reported it corrupt): nothing useful is written for
  // it then, and the caller decodes it on the CPU, whose decoders are the authority on what is
  // corrupt. Returns an error only for a fault of the device (a CUDA error), after which the
  // context may be unusable. Synchronous: every decode has completed when it returns.
  // Thread-safe.
  absl::Status DecodeFrames(FrameSyntax syntax,
                            absl::Span<const absl::Span<const std::uint8_t>> frames,
                            const FrameDescription& description, void* d_volume,
                            absl::Span<absl::Status> outcomes, DecodeThreads* threads) const;

  // Encodes each slice of `shape` (U8, U16 or I16, one channel, depth slices; `d_volume` holds
  // them densely packed on this device) as an HTJ2K lossless codestream, with the parameters of
  // EncodeLosslessFrame (frame_encode.h): reversible 5/3, up to 5 levels, 64x64 blocks, RPCL, 8 or
  // 16 bits, signed for I16. INVALID_ARGUMENT for another shape; INTERNAL when nvJPEG2000 fails.
  // Synchronous; uses the idle threads of `threads` (may be null). Thread-safe.
  absl::StatusOr<std::vector<std::vector<std::uint8_t>>> EncodeHtj2kLossless(
      const void* d_volume, const ImageView& shape, DecodeThreads* threads) const;

  int device() const { return device_; }

 private:
  struct Pipeline;
  struct Encoder;
  Nvjpeg2kDevice() = default;
  absl::StatusOr<std::unique_ptr<Pipeline>> AcquirePipeline() const;
  void ReleasePipeline(std::unique_ptr<Pipeline> pipeline) const;
  absl::StatusOr<std::unique_ptr<Encoder>> AcquireEncoder() const;
  void ReleaseEncoder(std::unique_ptr<Encoder> encoder) const;
  // Queues one frame's decode on `p` (whose last decode has completed). OK, a refusal (the frame
  // goes to the CPU) in *outcome, or a device fault returned.
  absl::Status DecodeOne(Pipeline& p, absl::Span<const std::uint8_t> frame,
                         const FrameDescription& d, void* d_out, absl::Status* outcome) const;

  std::shared_ptr<const Nvjpeg2kLibrary> lib_;
  int device_ = 0;
  int decodes_per_thread_ = kDecodesPerThread;
  void* handle_ = nullptr;   // nvjpeg2kHandle_t
  void* encoder_ = nullptr;  // nvjpeg2kEncoder_t
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Pipeline>> pipelines_;  // idle ones
  mutable std::vector<std::unique_ptr<Encoder>> encoders_;    // idle ones
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_NVJPEG2K_FRAMES_H_
