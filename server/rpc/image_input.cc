#include "server/rpc/image_input.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/codec/jpeg_header.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/observability/log.h"
#include "server/rpc/frame_input.h"

namespace cuimg {

absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> FindRegion(
    const SharedMemoryRegistry* shared_memory, CallScope& call, absl::string_view handle,
    absl::string_view field) {
  if (shared_memory == nullptr) {
    return MakeError(absl::StatusCode::kFailedPrecondition, ErrorReason::kSharedMemoryUnavailable,
                     field, "this server does not offer shared memory (--shared_memory)");
  }
  absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> region =
      shared_memory->Get(call.identity(), handle);
  if (!region.ok()) return AtField(region.status(), field);
  call.UseRegion(*region, std::string(field));
  return region;
}

std::unique_ptr<const DeviceImage> DecodeOnDevice(absl::Span<const std::uint8_t> bytes,
                                                  const DecodeLimits& limits,
                                                  DeviceJpegDecoder& decoder, StageTimes* times,
                                                  ImageView* shape) {
  if (SniffImageFormat(bytes) != ImageFormat::kJpeg) return nullptr;  // PNG: the CPU's
  absl::StatusOr<JpegHeader> header = ReadJpegHeader(bytes);
  if (!header.ok()) {
    times->decode_fallback = "header";
    return nullptr;
  }
  if (!JpegGpuRefusal(*header, decoder.hardware()).empty()) {
    times->decode_fallback = "unsupported";
    return nullptr;
  }
  // The output is sized from TurboJPEG's reading of the header, as the CPU decode's is; the GPU
  // decoder checks that nvJPEG reads the same. Over the limits: the CPU path words the refusal.
  absl::StatusOr<ImageView> probe = ProbeImage(bytes);
  if (!probe.ok() || probe->extent.width != header->width ||
      probe->extent.height != header->height || probe->channels != header->components ||
      probe->extent.width > limits.max_side || probe->extent.height > limits.max_side ||
      probe->extent.Pixels() > limits.max_pixels) {
    times->decode_fallback = "header";
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<const DeviceImage>> image = decoder.Decode(bytes, *probe);
  if (!image.ok()) {
    LogEvent(LogLevel::kDebug, "jpeg_gpu_fallback", {{"message", image.status().ToString()}});
    times->decode_fallback = "nvjpeg";
    return nullptr;
  }
  times->decode_device = (*image)->device();
  *shape = *probe;
  return *std::move(image);
}

namespace {

// A kFrames input: on the GPU frame decoder when there is one, else (or when its device fails)
// on the host.
absl::StatusOr<ResolvedImage> ResolveFrames(const ImageInput& input, CallScope& call,
                                            const ImageDecoders& decoders) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_us = [&start] {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
        .count();
  };
  ResolvedImage out;
  out.spacing = input.spacing;
  if (decoders.frames != nullptr) {
    auto on_host = [&](int index, absl::Span<std::uint8_t> stored) {
      return DecodeStoredFrame(input, index, decoders.sandbox, stored);
    };
    absl::StatusOr<std::unique_ptr<const DeviceImage>> image =
        decoders.frames->DecodeFrames(*input.frames, absl::StrCat(input.field, ".frames"), on_host,
                                      decoders.threads, call.cancel());
    if (image.ok()) {
      call.times().decode_device = (*image)->device();
      call.times().decode_us = elapsed_us();
      out.view = ImageView{input.type, input.extent, 1, nullptr};
      out.on_device = *std::move(image);
      return out;
    }
    // A frame's own fault, or the call's end, is the answer; a device's sends the frames to the
    // host.
    if (!ErrorFieldOf(image.status()).empty() || absl::IsCancelled(image.status()) ||
        absl::IsDeadlineExceeded(image.status())) {
      return image.status();
    }
    LogEvent(LogLevel::kDebug, "frames_gpu_fallback", {{"message", image.status().ToString()}});
    call.times().decode_fallback = "nvjpeg2000";
  }
  out.decoded = std::make_unique<Image>(input.type, input.extent, 1, Image::kUninitialized);
  out.view = out.decoded->view();
  CUIMG_RETURN_IF_ERROR(
      DecodeFramesOnHost(input, decoders.sandbox, decoders.threads, call.cancel(), out.view));
  call.times().decode_us = elapsed_us();
  return out;
}

}  // namespace

absl::StatusOr<ResolvedImage> ResolveImage(const ImageInput& input, CallScope& call,
                                           ResidentStore& store,
                                           const SharedMemoryRegistry* shared_memory,
                                           const RequestLimits& limits,
                                           const ImageDecoders& decoders) {
  const std::string& identity = call.identity();
  ResolvedImage out;
  switch (input.kind) {
    case ImageInput::Kind::kInline:
      out.view = ImageView{input.type, input.extent, input.channels,
                           const_cast<char*>(input.bytes.data())};
      out.spacing = input.spacing;
      return out;
    case ImageInput::Kind::kHandle: {
      absl::StatusOr<std::shared_ptr<const StoredImage>> stored = store.Get(identity, input.handle);
      if (!stored.ok()) return AtField(stored.status(), input.field);
      out.resident = *std::move(stored);
      out.view = out.resident->image.view();
      out.spacing = out.resident->spacing;
      return out;
    }
    case ImageInput::Kind::kSharedMemory: {
      CUIMG_ASSIGN_OR_RETURN(out.region, FindRegion(shared_memory, call, input.handle,
                                                    absl::StrCat(input.field, ".region")));
      out.view = ImageView{input.type, input.extent, input.channels, nullptr};
      CUIMG_ASSIGN_OR_RETURN(
          std::uint8_t * data,
          out.region->Span(input.offset, out.view.Bytes(), absl::StrCat(input.field, ".offset")));
      out.view.data = data;
      out.spacing = input.spacing;
      return out;
    }
    case ImageInput::Kind::kFrames:
      return ResolveFrames(input, call, decoders);
    case ImageInput::Kind::kEncoded:
      break;
  }
  const auto start = std::chrono::steady_clock::now();
  const DecodeLimits decode_limits = DecodeLimitsFor(limits);
  const auto* data = reinterpret_cast<const std::uint8_t*>(input.bytes.data());
  const absl::Span<const std::uint8_t> bytes = absl::MakeConstSpan(data, input.bytes.size());
  auto elapsed_us = [&start] {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
        .count();
  };
  if (decoders.device != nullptr) {
    out.on_device =
        DecodeOnDevice(bytes, decode_limits, *decoders.device, &call.times(), &out.view);
    if (out.on_device != nullptr) {
      out.view.data = nullptr;
      call.times().decode_us = elapsed_us();
      return out;
    }
  }
  absl::StatusOr<Image> decoded = DecodeImage(bytes, decode_limits, decoders.threads);
  if (!decoded.ok()) {
    // A file over the limits is the caller's input, like any other bad field; what the decoder
    // did not classify is taken for a corrupt file.
    return WithCode(
        AtField(WithDefaultReason(decoded.status(), ErrorReason::kCorruptEncodedData), input.field),
        absl::StatusCode::kInvalidArgument);
  }
  out.decoded = std::make_unique<Image>(*std::move(decoded));
  out.view = out.decoded->view();
  call.times().decode_us = elapsed_us();
  return out;
}

}  // namespace cuimg
