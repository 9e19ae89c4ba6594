// A JPEG 2000 codestream's main header read without decoding (ISO 15444-1 A.5.1, the SIZ
// segment): checked against a frame's description before a decoder (OpenJPEG, nvJPEG2000)
// allocates anything, so a codestream's own size never decides how much memory a
// decode takes.
#ifndef CUIMG_CODEC_J2K_HEADER_H_
#define CUIMG_CODEC_J2K_HEADER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/codec/dicom_frame.h"

namespace cuimg {

struct J2kSiz {
  std::uint32_t width = 0;  // Xsiz - XOsiz
  std::uint32_t height = 0;
  int components = 0;
  int precision = 0;  // of component 0, 1 .. 38
  bool is_signed = false;
  bool subsampled = false;  // a component with XRsiz or YRsiz other than 1
  // HT code blocks (ISO 15444-15): Rsiz bit 14, a CAP segment, or a COD or COC in the main or
  // a tile-part header whose code-block style says HT or mixed.
  bool high_throughput = false;
  bool jp2 = false;  // the codestream is wrapped in a JP2 file
};

// Reads the SIZ of a raw codestream (SOC then SIZ) or of the first codestream box of a JP2 file,
// and walks the rest of the main header and the tile-parts (their headers, then their data by
// their lengths) to the final EOC.
// INVALID_ARGUMENT naming what is missing or inconsistent (no SOC, a SIZ past the end, a
// component count its length does not hold, an empty image, a segment or tile-part past the end,
// no EOC: a codestream cut short, which some decoders fill in with zeros). Reads only `bytes`.
absl::StatusOr<J2kSiz> ReadJ2kSiz(absl::Span<const std::uint8_t> bytes);

// OK when `siz` describes a frame of `description`: its rows and columns, one component, no
// subsampling, and at most bits_allocated bits; else INVALID_ARGUMENT saying how they differ.
absl::Status CheckJ2kSiz(const J2kSiz& siz, const FrameDescription& description);

}  // namespace cuimg

#endif  // CUIMG_CODEC_J2K_HEADER_H_
