#include "server/validation/encoded_input.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {

DecodeLimits DecodeLimitsFor(const RequestLimits& limits) {
  DecodeLimits decode;
  decode.max_pixels = std::min(limits.max_pixels, limits.max_decoded_pixels);
  decode.max_side = limits.max_side;
  return decode;
}

absl::Status CheckEncodedShape(const ImageView& shape, absl::string_view field,
                               const RequestLimits& limits) {
  const DecodeLimits decode = DecodeLimitsFor(limits);
  const Extent& e = shape.extent;
  if (e.width > decode.max_side || e.height > decode.max_side) {
    return InvalidFieldError(ErrorReason::kLimitExceeded, field,
                             absl::StrCat(e.width, "x", e.height,
                                          " exceeds the server limit max_side=", decode.max_side));
  }
  if (e.Pixels() > decode.max_pixels) {
    return InvalidFieldError(
        ErrorReason::kLimitExceeded, field,
        absl::StrCat(
            e.width, "x", e.height, " = ", e.Pixels(), " decoded pixels exceeds the server limit ",
            limits.max_decoded_pixels <= limits.max_pixels ? "max_decoded_pixels=" : "max_pixels=",
            decode.max_pixels));
  }
  return absl::OkStatus();
}

}  // namespace cuimg
