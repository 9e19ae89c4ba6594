// Pixels decoded straight into a backend's device memory (a JPEG decoded by nvJPEG), and the
// decoder interface the request path sees. The service never sees CUDA: a work call receives the
// DeviceImage back (InputImage) and runs on its device without copying the input in.
#ifndef CUIMG_SERVER_DEVICE_JPEG_H_
#define CUIMG_SERVER_DEVICE_JPEG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/codec/decode_threads.h"
#include "cuimg/codec/frame_volume.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "server/backend/leader_batch.h"

namespace cuimg {

// An image in one device's memory, owned by the backend that made it (a JPEG decoded by nvJPEG:
// U8; DICOM frames: their image's type), the shape it was decoded to, rows tightly packed.
// Immutable once created; destroying it returns the memory.
class DeviceImage {
 public:
  virtual ~DeviceImage() = default;
  // The device slot holding it (DeviceStatus::id).
  virtual int device() const = 0;
};

// A work call's input: host pixels (`data` set, `device` null), or pixels a backend already
// holds (`device` set, `data` null: only the shape fields are read). Converts from a plain
// ImageView, so host inputs are passed as before.
struct InputImage : ImageView {
  InputImage(const ImageView& view) : ImageView(view) {}  // NOLINT: implicit by design
  InputImage(const ImageView& shape, const DeviceImage* on_device)
      : ImageView(shape), device(on_device) {
    data = nullptr;
  }
  const DeviceImage* device = nullptr;
};

// A backend's GPU JPEG decoder (nvJPEG). Thread-safe.
class DeviceJpegDecoder {
 public:
  virtual ~DeviceJpegDecoder() = default;
  // True when the decoder is nvJPEG's hardware backend (JpegGpuRefusal's `hardware`).
  virtual bool hardware() const = 0;
  // For the start-up line: "jpeg_decoder=gpu nvjpeg=13.0.4 (path) backend=hardware".
  virtual std::string Summary() const = 0;
  // Decodes `jpeg`, whose header ProbeImage read as `shape` (U8, 1 or 3 channels) and
  // JpegGpuRefusal accepted, into the memory of the least-loaded device. Any error means the CPU
  // decoder takes the file (which refuses corrupt ones); the message says why, for the log and
  // the fallback counter. Never leaves the device unusable for other requests: a sticky CUDA
  // error takes the device out of rotation as any work call's would.
  virtual absl::StatusOr<std::unique_ptr<const DeviceImage>> Decode(
      absl::Span<const std::uint8_t> jpeg, const ImageView& shape) = 0;

  // Where the decoder batches decodes (the hardware engines: leader_batch.h), a caller announces
  // its decode as soon as it knows one is coming (before reading the file's header), so that a
  // batch forming meanwhile may wait for it; the ticket goes to DecodeBatched. Decoders that do
  // not batch count nothing.
  virtual BatchArrivals::Ticket Expect() { return {}; }
  // Decode for a caller holding `ticket` (from Expect: it arrives once the decode is queued, or
  // when this returns), filling `batch` (not null) with the batch that decoded it (size 0 when
  // none did).
  virtual absl::StatusOr<std::unique_ptr<const DeviceImage>> DecodeBatched(
      absl::Span<const std::uint8_t> jpeg, const ImageView& shape, BatchArrivals::Ticket* ticket,
      BatchOutcome* batch) {
    ticket->Arrive();
    *batch = BatchOutcome();
    return Decode(jpeg, shape);
  }
};

// A backend's GPU decoder of DICOM frames (nvJPEG2000) and encoder of results as HTJ2K frames.
// Thread-safe.
class DeviceFrameDecoder {
 public:
  // Decodes one frame's stored values on the host (the frame's index, a buffer of
  // DecodedFrameBytes): the frames the GPU does not take go through it.
  using HostFrameDecode = std::function<absl::Status(int index, absl::Span<std::uint8_t> stored)>;

  virtual ~DeviceFrameDecoder() = default;
  // For the start-up line and GetServerInfo: "nvjpeg2000 0.11.0".
  virtual std::string Summary() const = 0;
  // Decodes `volume` (FrameVolume's rule: the image of FrameVolumeType, one slice per frame)
  // into the memory of the least-loaded device: the JPEG 2000 and HTJ2K frames nvJPEG2000 takes
  // there, every other frame through `on_host` and a copy, then the rescale on the device; the
  // same values as the host path. Errors naming a frame (`frames_field` + "[i]") are the input's:
  // one `on_host` returned, or an I16 value out of range; any other error is the device's (the
  // caller decodes on the host instead). Uses the idle threads of `threads` (may be null); stops
  // early once `cancel` does. Never leaves the device unusable for other requests.
  virtual absl::StatusOr<std::unique_ptr<const DeviceImage>> DecodeFrames(
      const FrameVolume& volume, absl::string_view frames_field, const HostFrameDecode& on_host,
      DecodeThreads* threads, const CancelToken& cancel) = 0;
  // Encodes each slice of `image` (host memory; U8, U16 or I16, one channel) as an HTJ2K
  // lossless codestream on the least-loaded device (frame_encode.h's parameters). Any error
  // means the caller encodes on the host instead.
  virtual absl::StatusOr<std::vector<std::vector<std::uint8_t>>> EncodeHtj2kLossless(
      const ImageView& image, DecodeThreads* threads) = 0;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_DEVICE_JPEG_H_
