// Per-format entry points behind DecodeImage.
#ifndef CUIMG_CODEC_SRC_CODEC_INTERNAL_H_
#define CUIMG_CODEC_SRC_CODEC_INTERNAL_H_

#include "cuimg/codec/decode_threads.h"
#include "cuimg/codec/image_codec.h"

namespace cuimg {

absl::StatusOr<Image> DecodePng(absl::Span<const std::uint8_t> bytes, const DecodeLimits& limits);
absl::StatusOr<Image> DecodeJpeg(absl::Span<const std::uint8_t> bytes, const DecodeLimits& limits,
                                 DecodeThreads* threads);
// Decodes into `image` (allocated to the file's size and channels) in strips on `threads`; false
// when the file does not qualify or any strip meets an error or warning (the caller then decodes
// serially, which refuses it).
bool DecodeJpegInStrips(absl::Span<const std::uint8_t> bytes, DecodeThreads& threads, Image& image);
absl::StatusOr<ImageView> ProbePng(absl::Span<const std::uint8_t> bytes);
absl::StatusOr<ImageView> ProbeJpeg(absl::Span<const std::uint8_t> bytes);

}  // namespace cuimg

#endif  // CUIMG_CODEC_SRC_CODEC_INTERNAL_H_
