// A volume sent as DICOM frames (ImageSource.dicom_frames) decoded into the image the operation
// sees, on the host: each frame's stored values (codec/dicom_frame.h, in this process or in a
// FrameSandbox helper where a decoder may abort), then the rescale (codec/frame_volume.h).
// The GPU path (Backend::frame_decoder) produces the same values on a device.
#ifndef CUIMG_SERVER_RPC_FRAME_INPUT_H_
#define CUIMG_SERVER_RPC_FRAME_INPUT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cuimg/codec/decode_threads.h"
#include "cuimg/codec/frame_sandbox.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "server/validation/encoded_input.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// The field naming frame `index` ("input.dicom_frames.frames[3]") under the input's field.
std::string FrameField(const ImageInput& input, int index);

// Frame `index`'s stored values into `stored` (DecodedFrameBytes of its description): in this
// process, or through `sandbox` where FrameNeedsSandbox says the decoder may abort (null: such
// frames are refused, FAILED_PRECONDITION, as this server then cannot decode them safely).
// Errors as DecodeFrame's, naming the frame (FrameField).
absl::Status DecodeStoredFrame(const ImageInput& input, int index, FrameSandbox* sandbox,
                               absl::Span<std::uint8_t> stored);

// Every frame of a kFrames `input` decoded and rescaled into `out` (input.type and input.extent,
// densely packed), on the calling thread and the idle threads of `threads` (may be null). Stops
// early once `cancel` does. When frames fail, the lowest-numbered one's error is returned, so the
// outcome never depends on which thread got there first.
absl::Status DecodeFramesOnHost(const ImageInput& input, FrameSandbox* sandbox,
                                DecodeThreads* threads, const CancelToken& cancel,
                                const ImageView& out);

}  // namespace cuimg

#endif  // CUIMG_SERVER_RPC_FRAME_INPUT_H_
