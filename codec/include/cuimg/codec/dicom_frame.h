// One DICOM frame (PS3.5 A.4: a compressed frame's bytes as its Pixel Data fragments hold them,
// or a native frame's raw samples) decoded on the CPU into its stored values. The server decodes
// frames sent encoded (a PACS's JPEG 2000 or HTJ2K series travels as it is stored); the GPU path
// (server/backend/nvjpeg2k_frames.h) produces the same values.
//
// Decoders: JPEG 2000 and HTJ2K by OpenJPEG 2.5 (OpenJPH 0.9, as Debian builds it, aborts on
// malformed packet headers, so it only encodes: frame_encode.h), JPEG-LS by CharLS 2.4, JPEG
// (baseline, extended, lossless) by DCMTK's IJG codecs (8, 12 and 16 bits; libjpeg-turbo has no
// lossless or 12-bit decoder), RLE by our own code. For every lossless syntax the values equal
// pydicom's (GDCM's codecs) on the same frame; Debian's pydicom and GDCM do not know HTJ2K, whose
// frames equal OpenJPH's ojph_expand's.
//
// The stored-value rule, whatever the codestream says about signedness: the decoder's integer v
// keeps its low BitsStored bits, which are read as two's complement when PixelRepresentation is
// 1 (signed) and as unsigned otherwise. A codestream that marks its samples signed with negative
// values therefore gives the same values as one that stores their two's complement bit patterns
// unsigned (both occur in archives), and bits above BitsStored never leak into the value. Before
// that, v is within the codestream's own sample range: decoders clamp what decodes beyond it, a
// lossy decode's overshoot near edges, or a value no conforming encoder writes. OpenJPH 0.9's
// ojph_compress writes such values: a signed raw image's negative samples as their unsigned
// 16-bit patterns in a signed component, which OpenJPEG clamps to 32767 while OpenJPH's own
// decoder wraps them back (the observation in issue 49); our encoders (frame_encode.h) and
// nvJPEG2000's store signed samples as signed values.
#ifndef CUIMG_CODEC_DICOM_FRAME_H_
#define CUIMG_CODEC_DICOM_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cuimg/common/image.h"

namespace cuimg {

// The transfer syntaxes a frame may be in (their UIDs in FrameSyntaxUid).
enum class FrameSyntax {
  kNative,              // 1.2.840.10008.1.2.1 explicit VR (and .1.2 implicit) little endian
  kRle,                 // 1.2.840.10008.1.2.5 RLE Lossless
  kJpegBaseline,        // 1.2.840.10008.1.2.4.50 JPEG baseline (process 1, 8-bit, lossy)
  kJpegExtended,        // 1.2.840.10008.1.2.4.51 JPEG extended (process 2 & 4, 12-bit, lossy)
  kJpegLossless,        // 1.2.840.10008.1.2.4.57 JPEG lossless (process 14, any predictor)
  kJpegLosslessSv1,     // 1.2.840.10008.1.2.4.70 JPEG lossless, first-order prediction
  kJpegLsLossless,      // 1.2.840.10008.1.2.4.80 JPEG-LS lossless
  kJpegLsNearLossless,  // 1.2.840.10008.1.2.4.81 JPEG-LS near-lossless
  kJ2kLossless,         // 1.2.840.10008.1.2.4.90 JPEG 2000 lossless only
  kJ2k,                 // 1.2.840.10008.1.2.4.91 JPEG 2000 (lossless or lossy)
  kHtj2kLossless,       // 1.2.840.10008.1.2.4.201 HTJ2K lossless only
  kHtj2kLosslessRpcl,   // 1.2.840.10008.1.2.4.202 HTJ2K lossless, RPCL progression
  kHtj2k,               // 1.2.840.10008.1.2.4.203 HTJ2K (lossless or lossy)
};

// Every syntax DecodeFrame takes, in the order above.
absl::Span<const FrameSyntax> DecodableFrameSyntaxes();
// The syntax's UID ("1.2.840.10008.1.2.4.201"); kNative gives explicit VR little endian.
absl::string_view FrameSyntaxUid(FrameSyntax syntax);
// A short name for logs and messages ("HTJ2K lossless").
absl::string_view FrameSyntaxName(FrameSyntax syntax);
// The library that decodes it on the CPU ("openjpeg", "charls", "ijg", "rle", "native"): the
// `decoder` label of the decode metrics.
absl::string_view FrameDecoderName(FrameSyntax syntax);
// Whether every frame in the syntax decodes to exactly what was encoded.
bool IsLosslessSyntax(FrameSyntax syntax);
// The syntax of `uid` (DICOM UIDs have no padding; a trailing NUL or space, as a file pads it, is
// ignored). INVALID_ARGUMENT, reason UNSUPPORTED_ENCODING and `field`, for any other UID.
absl::StatusOr<FrameSyntax> FrameSyntaxFromUid(absl::string_view uid, absl::string_view field);

// The Image Pixel module's description of a frame (PS3.3 C.7.6.3). cuimg decodes grayscale
// frames: one sample per pixel, MONOCHROME1 or MONOCHROME2 (values are stored values: MONOCHROME1
// is not inverted, as pydicom leaves it).
enum class Photometric { kMonochrome1, kMonochrome2 };

struct FrameDescription {
  int rows = 0;     // 1 .. 65535
  int columns = 0;  // 1 .. 65535
  int samples_per_pixel = 1;
  int bits_allocated = 16;  // 8 or 16
  int bits_stored = 16;     // 1 .. bits_allocated; the high bit is bits_stored - 1
  bool is_signed = false;   // PixelRepresentation 1
  Photometric photometric = Photometric::kMonochrome2;
  int planar_configuration = 0;
};

// OK when DecodeFrame can decode frames of this description; else INVALID_ARGUMENT naming the
// field under `field` ("<field>.bits_stored"): VALUE_OUT_OF_RANGE for sizes and bit counts,
// UNSUPPORTED_PIXEL_TYPE for more than one sample per pixel or bits_allocated other than 8 or 16.
absl::Status ValidateFrameDescription(const FrameDescription& description, absl::string_view field);

// The pixel type frames of `description` decode to: U8 for unsigned 8-bit, U16 for unsigned
// 16-bit, I16 for every signed description (8-bit signed values sign-extended). `description`
// must be valid.
PixelType DecodedPixelType(const FrameDescription& description);
// rows * columns * the decoded pixel type's size.
std::size_t DecodedFrameBytes(const FrameDescription& description);

// Whether decoding `frame` runs library code that may abort the process, or not return for
// minutes, when the frame is malformed; such frames are decoded in a helper process (FrameSandbox,
// frame_sandbox.h), with a time limit, unless the caller trusts them. Found by fuzzing Debian 12's
// libraries: OpenJPEG 2.5.0 is built with its assertions on, and its HT block decoder asserts on
// malformed code blocks (OpenJPH 0.9 does the same in its packet parser), so every codestream
// with HT code blocks, whatever its syntax says; CharLS 2.4.1 loops over some malformed JPEG-LS
// scans, so every JPEG-LS frame. Reads only the codestream's headers.
bool FrameNeedsSandbox(FrameSyntax syntax, absl::Span<const std::uint8_t> frame);

// Decodes `frame` (in `syntax`, of `description`, which must be valid) into `out`, which holds
// DecodedFrameBytes(description) bytes: rows of `columns` values of DecodedPixelType, by the
// stored-value rule above. Reads only `frame` and writes only `out`; thread-safe (no state is
// shared between calls). A frame that does not decode, or whose own header disagrees with
// `description` (its size, its sample count, more bits than bits_allocated, a native frame of the
// wrong length), is INVALID_ARGUMENT with reason CORRUPT_ENCODED_DATA and `field` (the caller
// names the frame: "frames[3]"), and `out` holds unspecified values. Where FrameNeedsSandbox is
// true, a malformed frame may abort the process instead.
absl::Status DecodeFrame(FrameSyntax syntax, const FrameDescription& description,
                         absl::Span<const std::uint8_t> frame, absl::Span<std::uint8_t> out,
                         absl::string_view field);
// The same into a new 2D one-channel image.
absl::StatusOr<Image> DecodeFrame(FrameSyntax syntax, const FrameDescription& description,
                                  absl::Span<const std::uint8_t> frame, absl::string_view field);

}  // namespace cuimg

#endif  // CUIMG_CODEC_DICOM_FRAME_H_
