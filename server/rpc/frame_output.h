// Results returned as DICOM frames (OutputOptions.frame_encoding): each slice of a result encoded
// as a lossless codestream, on the GPU frame decoder's device where the backend has one (the host
// when it fails), else on the host with the idle decode threads (frame_encode.h).
#ifndef CUIMG_SERVER_RPC_FRAME_OUTPUT_H_
#define CUIMG_SERVER_RPC_FRAME_OUTPUT_H_

#include "absl/status/status.h"
#include "cuimg/codec/dicom_frame.h"
#include "cuimg/common/image.h"
#include "cuimg/v1/types.pb.h"
#include "server/rpc/image_input.h"

namespace cuimg {

// Encodes `result` (host pixels; U8, U16 or I16, one channel, one frame per slice) as frames of
// `encoding` (kHtj2kLossless) into `out`: the transfer syntax, the pixel module (8 or 16 bits
// allocated and stored, signed for I16, MONOCHROME2), one frame per slice with rescale slope 1 and
// intercept 0, and `spacing`. INTERNAL when no encoder succeeds.
absl::Status EncodeResultFrames(const ImageView& result, const v1::Spacing& spacing,
                                FrameSyntax encoding, const ImageDecoders& decoders,
                                v1::DicomFrames* out);

}  // namespace cuimg

#endif  // CUIMG_SERVER_RPC_FRAME_OUTPUT_H_
