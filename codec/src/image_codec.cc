#include "cuimg/codec/image_codec.h"

#include "codec_internal.h"
#include "cuimg/common/error.h"

namespace cuimg {

ImageFormat SniffImageFormat(absl::Span<const std::uint8_t> bytes) {
  static constexpr std::uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && std::equal(kPng, kPng + 8, bytes.begin())) return ImageFormat::kPng;
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) {
    return ImageFormat::kJpeg;
  }
  return ImageFormat::kUnknown;
}

absl::StatusOr<ImageView> ProbeImage(absl::Span<const std::uint8_t> bytes) {
  switch (SniffImageFormat(bytes)) {
    case ImageFormat::kPng:
      return ProbePng(bytes);
    case ImageFormat::kJpeg:
      return ProbeJpeg(bytes);
    case ImageFormat::kUnknown:
      break;
  }
  return InvalidFieldError(ErrorReason::kUnsupportedEncoding, "",
                           "not a PNG or JPEG file (unknown signature)");
}

absl::StatusOr<Image> DecodeImage(absl::Span<const std::uint8_t> bytes, const DecodeLimits& limits,
                                  DecodeThreads* threads) {
  switch (SniffImageFormat(bytes)) {
    case ImageFormat::kPng:
      return DecodePng(bytes, limits);
    case ImageFormat::kJpeg:
      return DecodeJpeg(bytes, limits, threads);
    case ImageFormat::kUnknown:
      break;
  }
  return InvalidFieldError(ErrorReason::kUnsupportedEncoding, "",
                           "not a PNG or JPEG file (unknown signature)");
}

}  // namespace cuimg
