// PNG and JPEG decoding/encoding for cuimg images (libpng, TurboJPEG). Used by the server to decode
// `encoded` inputs and by the client to read and write files.
#ifndef CUIMG_CODEC_IMAGE_CODEC_H_
#define CUIMG_CODEC_IMAGE_CODEC_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/codec/decode_threads.h"
#include "cuimg/common/image.h"

namespace cuimg {

enum class ImageFormat { kUnknown, kPng, kJpeg };

// Identifies PNG/JPEG by their signatures.
ImageFormat SniffImageFormat(absl::Span<const std::uint8_t> bytes);

// Limits checked against the file's header before any pixel memory is allocated.
struct DecodeLimits {
  std::int64_t max_pixels = std::int64_t{1} << 30;
  std::int64_t max_side = 65536;
};

// What DecodeImage would produce (type, size, channels), read from the file's header alone: no
// pixel memory is allocated and no image data is decompressed. INVALID_ARGUMENT for an unknown or
// corrupt header.
absl::StatusOr<ImageView> ProbeImage(absl::Span<const std::uint8_t> bytes);

// Decodes PNG or JPEG bytes into an image: U8 (or U16 for 16-bit PNG), 1 channel for gray
// (alpha dropped) or 3 channels in BGR order for colour (alpha dropped; CMYK and YCCK JPEGs
// converted as imread converts them, Adobe's inverted CMYK included), as OpenCV's imread.
// INVALID_ARGUMENT for corrupt or unsupported data, including what the libraries would only warn
// about (a truncated JPEG, corrupt entropy data): nothing is filled in; RESOURCE_EXHAUSTED when
// over `limits`.
// With `threads`, a large single-scan JPEG decodes in strips on the idle ones; the pixels are
// the same as a serial decode's.
absl::StatusOr<Image> DecodeImage(absl::Span<const std::uint8_t> bytes,
                                  const DecodeLimits& limits = {},
                                  DecodeThreads* threads = nullptr);

// Encodes a 2D U8 or U16 image with 1 channel (gray), 3 (BGR) or 4 (BGRA) as PNG.
absl::StatusOr<std::vector<std::uint8_t>> EncodePng(const ImageView& image);

// Encodes a 2D U8 image with 1 channel (gray) or 3 (BGR) as baseline JPEG, quality in [1, 100].
absl::StatusOr<std::vector<std::uint8_t>> EncodeJpeg(const ImageView& image, int quality = 95);

}  // namespace cuimg

#endif  // CUIMG_CODEC_IMAGE_CODEC_H_
