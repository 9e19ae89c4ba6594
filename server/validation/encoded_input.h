// The limits an encoded (PNG/JPEG) input decodes under, from the request limits: checked on its
// header before admission (scheduling/inflight_estimate.h) and again by the decoder
// (rpc/image_input.h).
#ifndef CUIMG_SERVER_VALIDATION_ENCODED_INPUT_H_
#define CUIMG_SERVER_VALIDATION_ENCODED_INPUT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/image.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// The decoder's limits under the request limits: max_decoded_pixels (or max_pixels if smaller).
DecodeLimits DecodeLimitsFor(const RequestLimits& limits);
// INVALID_ARGUMENT naming `field` and the limit when an encoded image's header (ProbeImage)
// claims more pixels than the server decodes.
absl::Status CheckEncodedShape(const ImageView& shape, absl::string_view field,
                               const RequestLimits& limits);

}  // namespace cuimg

#endif  // CUIMG_SERVER_VALIDATION_ENCODED_INPUT_H_
