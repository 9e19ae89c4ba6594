// JPEG-LS frames (lossless and near-lossless) through CharLS 2.4's C API, which reports every
// fault as an error code (no exceptions cross it).
#include <charls/charls.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frame_internal.h"

namespace cuimg {
namespace {

struct DecoderDeleter {
  void operator()(charls_jpegls_decoder* d) const { charls_jpegls_decoder_destroy(d); }
};

absl::Status CharlsError(absl::string_view step, charls_jpegls_errc e) {
  return absl::InvalidArgumentError(
      absl::StrCat("CharLS ", step, ": ", charls_get_error_message(e)));
}

}  // namespace

absl::Status DecodeJpegLsFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                               absl::Span<std::uint8_t> out) {
  std::unique_ptr<charls_jpegls_decoder, DecoderDeleter> decoder(charls_jpegls_decoder_create());
  if (decoder == nullptr) return absl::ResourceExhaustedError("no memory for a CharLS decoder");
  charls_jpegls_errc e =
      charls_jpegls_decoder_set_source_buffer(decoder.get(), frame.data(), frame.size());
  if (e != charls::jpegls_errc::success) return CharlsError("source", e);
  if ((e = charls_jpegls_decoder_read_header(decoder.get())) != charls::jpegls_errc::success) {
    return CharlsError("header", e);
  }
  charls_frame_info info{};
  if ((e = charls_jpegls_decoder_get_frame_info(decoder.get(), &info)) !=
      charls::jpegls_errc::success) {
    return CharlsError("frame info", e);
  }
  if (info.width != static_cast<std::uint32_t>(d.columns) ||
      info.height != static_cast<std::uint32_t>(d.rows)) {
    return absl::InvalidArgumentError(absl::StrCat("the JPEG-LS image is ", info.width, "x",
                                                   info.height,
                                                   " pixels, the frame's "
                                                   "description ",
                                                   d.columns, "x", d.rows));
  }
  if (info.component_count != d.samples_per_pixel) {
    return absl::InvalidArgumentError(absl::StrCat("the JPEG-LS image has ", info.component_count,
                                                   " components for ", d.samples_per_pixel,
                                                   " samples per pixel"));
  }
  if (info.bits_per_sample > d.bits_allocated) {
    return absl::InvalidArgumentError(absl::StrCat("JPEG-LS samples of ", info.bits_per_sample,
                                                   " bits for ", d.bits_allocated,
                                                   " bits allocated"));
  }
  const std::size_t count = static_cast<std::size_t>(d.rows) * d.columns;
  // CharLS writes samples of up to 8 bits as bytes, wider ones as host-order 16-bit words.
  const bool wide = info.bits_per_sample > 8;
  std::vector<std::uint16_t> words(wide ? count : 0);
  std::vector<std::uint8_t> bytes(wide ? 0 : count);
  void* destination = wide ? static_cast<void*>(words.data()) : bytes.data();
  const std::size_t size = wide ? count * 2 : count;
  if ((e = charls_jpegls_decoder_decode_to_buffer(decoder.get(), destination, size, 0)) !=
      charls::jpegls_errc::success) {
    return CharlsError("decode", e);
  }
  const StoredBits b = StoredBitsOf(d);
  if (wide) {
    StoreSamples(b, words.data(), count, 0, out);
  } else {
    StoreSamples(b, bytes.data(), count, 0, out);
  }
  return absl::OkStatus();
}

}  // namespace cuimg
