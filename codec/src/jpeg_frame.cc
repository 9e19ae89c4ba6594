// JPEG frames (baseline, extended, lossless) through DCMTK's IJG codecs, the 8-, 12- or 16-bit
// build picked by the frame's precision as DCMTK's own decoder picks it. libjpeg only warns about
// some damage (corrupt entropy data, bytes before a marker) and fills in the rest; such frames are
// refused here, as cuimg refuses such JPEG inputs.
#include <dcmtk/config/osconfig.h>
#include <dcmtk/dcmjpeg/djcparam.h>
#include <dcmtk/dcmjpeg/djdijg12.h>
#include <dcmtk/dcmjpeg/djdijg16.h>
#include <dcmtk/dcmjpeg/djdijg8.h>
#include <dcmtk/dcmjpeg/djutils.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/jpeg_header.h"
#include "frame_internal.h"

namespace cuimg {
namespace {

// DCMTK's decoder with its warnings recorded instead of logged.
template <typename Base>
class StrictDecoder : public Base {
 public:
  explicit StrictDecoder(const DJCodecParameter& parameters) : Base(parameters, OFFalse) {}
  void emitMessage(int msg_level) const override {
    if (msg_level < 0) warned_ = true;
  }
  bool warned() const { return warned_; }

 private:
  mutable bool warned_ = false;
};

template <typename Base>
absl::Status Decode(absl::Span<const std::uint8_t> frame, std::vector<std::uint8_t>& raw) {
  // Frames are grayscale: no colour conversion, no UIDs, no planar choice apply.
  const DJCodecParameter parameters(ECC_monochrome, EDC_never, EUC_never, EPC_default);
  StrictDecoder<Base> decoder(parameters);
  if (OFCondition c = decoder.init(); c.bad()) {
    return absl::InternalError(absl::StrCat("IJG decoder: ", c.text()));
  }
  // DCMTK's source manager only reads the buffer (its signature predates const).
  OFCondition c =
      decoder.decode(const_cast<Uint8*>(frame.data()), static_cast<Uint32>(frame.size()),
                     raw.data(), static_cast<Uint32>(raw.size()), OFFalse);
  if (c == EJ_Suspension) return absl::InvalidArgumentError("the JPEG data ends early");
  if (c.bad()) return absl::InvalidArgumentError(c.text());
  if (decoder.warned()) {
    return absl::InvalidArgumentError(
        "libjpeg found corrupt data (a warning it would decode past)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DecodeJpegFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                             absl::Span<std::uint8_t> out) {
  absl::StatusOr<JpegHeader> header = ReadJpegHeader(frame);
  if (!header.ok()) return header.status();
  if (header->width != d.columns || header->height != d.rows) {
    return absl::InvalidArgumentError(absl::StrCat("the JPEG is ", header->width, "x",
                                                   header->height,
                                                   " pixels, the frame's "
                                                   "description ",
                                                   d.columns, "x", d.rows));
  }
  if (header->components != d.samples_per_pixel) {
    return absl::InvalidArgumentError(absl::StrCat("the JPEG has ", header->components,
                                                   " components for ", d.samples_per_pixel,
                                                   " samples per pixel"));
  }
  if (header->precision < 2 || header->precision > d.bits_allocated) {
    return absl::InvalidArgumentError(absl::StrCat("a JPEG precision of ", header->precision,
                                                   " bits for ", d.bits_allocated,
                                                   " bits allocated"));
  }
  const std::size_t count = static_cast<std::size_t>(d.rows) * d.columns;
  const int bytes = header->precision <= 8 ? 1 : 2;
  std::vector<std::uint8_t> raw(count * bytes);
  absl::Status s = header->precision <= 8    ? Decode<DJDecompressIJG8Bit>(frame, raw)
                   : header->precision <= 12 ? Decode<DJDecompressIJG12Bit>(frame, raw)
                                             : Decode<DJDecompressIJG16Bit>(frame, raw);
  if (!s.ok()) return s;
  const StoredBits b = StoredBitsOf(d);
  if (bytes == 1) {
    StoreSamples(b, raw.data(), count, 0, out);
  } else {
    // The 12- and 16-bit builds write host-order 16-bit samples.
    StoreSamples(b, reinterpret_cast<const std::uint16_t*>(raw.data()), count, 0, out);
  }
  return absl::OkStatus();
}

}  // namespace cuimg
