// Results stored compressed: one 2D image encoded as a lossless DICOM frame, HTJ2K (OpenJPH) or
// JPEG 2000 (OpenJPEG), on the CPU. The GPU encoder (server/backend/nvjpeg2k_frames.h) writes the
// same kind of codestream; any conforming decoder gives the image back.
#ifndef CUIMG_CODEC_FRAME_ENCODE_H_
#define CUIMG_CODEC_FRAME_ENCODE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/codec/dicom_frame.h"
#include "cuimg/common/image.h"

namespace cuimg {

// Encodes `image` (2D, one channel, U8, U16 or I16, at most 65535 per side) as a frame of
// `syntax`, kHtj2kLossless (1.2.840.10008.1.2.4.201) or kJ2kLossless (.90): a raw codestream (no
// JP2 box), reversible 5/3 wavelet, up to 5 decomposition levels, 64x64 code blocks, one quality
// layer, RPCL progression, one component of 8 bits (U8) or 16 (U16; I16 signed). The frame
// decodes (DecodeFrame, with rows and columns of the image, bits_allocated and bits_stored 8 or
// 16 and is_signed for I16) to `image` exactly. INVALID_ARGUMENT for another syntax or image;
// INTERNAL when the library fails. Thread-safe.
absl::StatusOr<std::vector<std::uint8_t>> EncodeLosslessFrame(FrameSyntax syntax,
                                                              const ImageView& image);

// Decomposition levels of a lossless encode: 5, fewer for an image too small to halve 5 times
// (decoders differ on levels past the image's size). The GPU encoder uses the same.
int LosslessDecompositions(int width, int height);

// The description a frame from EncodeLosslessFrame(_, image) decodes with.
FrameDescription LosslessFrameDescription(const ImageView& image);

}  // namespace cuimg

#endif  // CUIMG_CODEC_FRAME_ENCODE_H_
