// Resolves a validated ImageInput to pixels: inline bytes (no copy), a resident object, or a
// PNG/JPEG decoded under the request limits.
#ifndef CUIMG_SERVER_IMAGE_INPUT_H_
#define CUIMG_SERVER_IMAGE_INPUT_H_

#include <memory>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/image.h"
#include "server/backend.h"
#include "server/request_validation.h"
#include "server/resident_store.h"

namespace cuimg {

struct ResolvedImage {
  // Read-only view of the pixels; valid while this object and the request live.
  ImageView view;
  v1::Spacing spacing;
  // Owners, when the pixels are not the request's own bytes.
  std::shared_ptr<const StoredImage> resident;
  std::unique_ptr<Image> decoded;
};

// The decoder's limits under the request limits: max_decoded_pixels (or max_pixels if smaller).
DecodeLimits DecodeLimitsFor(const RequestLimits& limits);
// INVALID_ARGUMENT naming `field` and the limit when an encoded image's header (ProbeImage)
// claims more pixels than the server decodes.
absl::Status CheckEncodedShape(const ImageView& shape, absl::string_view field,
                               const RequestLimits& limits);

// Fills times->decode_us for encoded inputs.
// `decode_threads` (may be null) lends idle threads to JPEG decoding.
absl::StatusOr<ResolvedImage> ResolveImage(const ImageInput& input, const v1::ImageSource& source,
                                           absl::string_view identity, ResidentStore& store,
                                           const RequestLimits& limits,
                                           DecodeThreads* decode_threads, StageTimes* times);

}  // namespace cuimg

#endif  // CUIMG_SERVER_IMAGE_INPUT_H_
