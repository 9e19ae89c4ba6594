// The limits an encoded (PNG/JPEG) input decodes under, from the request limits: checked on its
// header before admission (scheduling/inflight_estimate.h) and again by the decoder
// (rpc/image_input.h); and how many DICOM frames decode at once, which admission counts and the
// frame decoder (rpc/frame_input.h) keeps to.
#ifndef CUIMG_SERVER_VALIDATION_ENCODED_INPUT_H_
#define CUIMG_SERVER_VALIDATION_ENCODED_INPUT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/image.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// At most this many frames of one request decode at once (the calling thread and the 15 decode
// threads --decode_threads allows at most): admission counts one frame of stored values each.
inline constexpr int kFrameDecodeThreads = 16;

// The decoder's limits under the request limits: max_decoded_pixels (or max_pixels if smaller).
DecodeLimits DecodeLimitsFor(const RequestLimits& limits);
// INVALID_ARGUMENT naming `field` and the limit when an encoded image's header (ProbeImage)
// claims more pixels than the server decodes.
absl::Status CheckEncodedShape(const ImageView& shape, absl::string_view field,
                               const RequestLimits& limits);

}  // namespace cuimg

#endif  // CUIMG_SERVER_VALIDATION_ENCODED_INPUT_H_
