// Resolves a validated ImageInput to pixels: inline bytes (no copy), a resident object, or a
// PNG/JPEG decoded under the request limits (a JPEG straight into device memory where the backend
// has a GPU decoder that takes it).
#ifndef CUIMG_SERVER_IMAGE_INPUT_H_
#define CUIMG_SERVER_IMAGE_INPUT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/codec/frame_sandbox.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/image.h"
#include "server/backend/backend.h"
#include "server/backend/device_jpeg.h"
#include "server/rpc/call_scope.h"
#include "server/state/resident_store.h"
#include "server/state/shared_memory_registry.h"
#include "server/validation/encoded_input.h"
#include "server/validation/request_validation.h"

namespace cuimg {

struct ResolvedImage {
  // Read-only view of the pixels; valid while this object and the request live.
  ImageView view;
  v1::Spacing spacing;
  // Owners, when the pixels are not the request's own bytes.
  std::shared_ptr<const StoredImage> resident;
  std::unique_ptr<Image> decoded;
  // The shared-memory region the pixels lie in, held while the request uses them.
  std::shared_ptr<const SharedMemoryRegion> region;
  // A JPEG decoded on a device: `view` is its shape, with null data (never read on the host).
  std::unique_ptr<const DeviceImage> on_device;

  // What a backend work call takes: the device image when there is one, else `view`.
  InputImage input() const {
    return on_device != nullptr ? InputImage(view, on_device.get()) : InputImage(view);
  }
};

// Where encoded inputs decode: `threads` (may be null) lend idle threads to CPU JPEG and DICOM
// frame decoding; `device` (may be null: none, or the CPU backend) is the backend's GPU JPEG
// decoder, `frames` its GPU frame decoder; `sandbox` (may be null: such frames are refused) runs
// the frame decoders that may abort (FrameNeedsSandbox).
struct ImageDecoders {
  DecodeThreads* threads = nullptr;
  DeviceJpegDecoder* device = nullptr;
  DeviceFrameDecoder* frames = nullptr;
  FrameSandbox* sandbox = nullptr;
};

// INVALID_ARGUMENT naming `field` and the limit when an encoded image's header (ProbeImage)
// claims more pixels than the server decodes.
absl::Status CheckEncodedShape(const ImageView& shape, absl::string_view field,
                               const RequestLimits& limits);

// For `call`'s identity; fills its decode_us, decode_device and decode_fallback for encoded
// inputs. DICOM frames decode on the backend's GPU frame decoder when it has one (frames it does
// not take, and every frame when the device fails, on the host: frame_input.h), errors naming
// the frame. A JPEG goes to `decoders.device` when the marker walk (jpeg_header.h) finds it sound
// and JpegGpuRefusal lets it; anything else, and any GPU decode failure, decodes on the CPU,
// which refuses corrupt files with INVALID_ARGUMENT naming the field. `shared_memory` is null
// when the server offers none (a shared-memory input is then FAILED_PRECONDITION). Pass
// ResolvedImage::input() to the backend: a device-decoded image has no host pixels.
absl::StatusOr<ResolvedImage> ResolveImage(const ImageInput& input, CallScope& call,
                                           ResidentStore& store,
                                           const SharedMemoryRegistry* shared_memory,
                                           const RequestLimits& limits,
                                           const ImageDecoders& decoders);

// The GPU leg of ResolveImage for one encoded file: the device image, or null with
// times->decode_fallback set when the CPU decoder must take it (not a JPEG for the GPU, over
// `limits`, or the GPU decode failed).
std::unique_ptr<const DeviceImage> DecodeOnDevice(absl::Span<const std::uint8_t> bytes,
                                                  const DecodeLimits& limits,
                                                  DeviceJpegDecoder& decoder, StageTimes* times,
                                                  ImageView* shape);

// The region a request names (`field`: "input.shared_memory.region", ...) for `call`'s identity,
// held by the caller and by `call` (whose CheckSharedMemory then covers it): FAILED_PRECONDITION
// when `shared_memory` is null, NOT_FOUND when unknown or another identity's.
absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> FindRegion(
    const SharedMemoryRegistry* shared_memory, CallScope& call, absl::string_view handle,
    absl::string_view field);

}  // namespace cuimg

#endif  // CUIMG_SERVER_IMAGE_INPUT_H_
