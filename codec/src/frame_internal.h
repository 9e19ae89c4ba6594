// What DecodeFrame's per-library decoders share: the stored-value rule applied to the integers a
// library produces, and their entry points. Each returns an error whose message says what is
// wrong; DecodeFrame turns it into CORRUPT_ENCODED_DATA naming the frame.
#ifndef CUIMG_CODEC_SRC_FRAME_INTERNAL_H_
#define CUIMG_CODEC_SRC_FRAME_INTERNAL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/codec/dicom_frame.h"
#include "cuimg/codec/j2k_header.h"

namespace cuimg {

// The stored-value rule (dicom_frame.h) as two constants: value = ((v & mask) ^ sign) - sign,
// where sign is the top stored bit for a signed description and 0 for an unsigned one. Masking
// keeps the low BitsStored bits; the xor and subtraction sign-extend them.
struct StoredBits {
  std::uint32_t mask = 0;
  std::int32_t sign = 0;
  PixelType type = PixelType::kU8;
};

inline StoredBits StoredBitsOf(const FrameDescription& d) {
  StoredBits b;
  b.mask = d.bits_stored >= 32 ? 0xffffffffu : ((1u << d.bits_stored) - 1);
  b.sign = d.is_signed ? static_cast<std::int32_t>(1u << (d.bits_stored - 1)) : 0;
  b.type = DecodedPixelType(d);
  return b;
}

template <typename Out, typename In>
void StoreAs(const StoredBits& b, const In* in, std::size_t count, Out* out) {
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t v = static_cast<std::uint32_t>(static_cast<std::int64_t>(in[i])) & b.mask;
    out[i] = static_cast<Out>(static_cast<std::int32_t>(v ^ static_cast<std::uint32_t>(b.sign)) -
                              b.sign);
  }
}

// Stores `count` integers from `in` at sample `first` of `out` (a decoded frame of b.type).
template <typename In>
void StoreSamples(const StoredBits& b, const In* in, std::size_t count, std::size_t first,
                  absl::Span<std::uint8_t> out) {
  switch (b.type) {
    case PixelType::kU8:
      StoreAs(b, in, count, out.data() + first);
      return;
    case PixelType::kU16:
      StoreAs(b, in, count, reinterpret_cast<std::uint16_t*>(out.data()) + first);
      return;
    case PixelType::kI16:
      StoreAs(b, in, count, reinterpret_cast<std::int16_t*>(out.data()) + first);
      return;
    default:
      return;  // F32 and U32 are never a decoded type
  }
}

// EncodeLosslessFrame's two encoders; `image` is already checked.
absl::StatusOr<std::vector<std::uint8_t>> EncodeJ2kLossless(const ImageView& image);
absl::StatusOr<std::vector<std::uint8_t>> EncodeHtj2kLossless(const ImageView& image);

absl::Status DecodeNativeFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                               absl::Span<std::uint8_t> out);
absl::Status DecodeRleFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                            absl::Span<std::uint8_t> out);
absl::Status DecodeJpegFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                             absl::Span<std::uint8_t> out);
absl::Status DecodeJpegLsFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                               absl::Span<std::uint8_t> out);
// JPEG 2000 and HTJ2K (OpenJPEG 2.5 decodes both).
absl::Status DecodeJ2kFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                            absl::Span<std::uint8_t> out);

}  // namespace cuimg

#endif  // CUIMG_CODEC_SRC_FRAME_INTERNAL_H_
