// Resolves a validated ImageInput to pixels: inline bytes (no copy), a resident object, or a
// PNG/JPEG decoded under the request limits.
#ifndef CUIMG_SERVER_IMAGE_INPUT_H_
#define CUIMG_SERVER_IMAGE_INPUT_H_

#include <memory>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/image.h"
#include "server/backend/backend.h"
#include "server/rpc/call_scope.h"
#include "server/validation/request_validation.h"
#include "server/state/resident_store.h"
#include "server/state/shared_memory_registry.h"

namespace cuimg {

struct ResolvedImage {
  // Read-only view of the pixels; valid while this object and the request live.
  ImageView view;
  v1::Spacing spacing;
  // Owners, when the pixels are not the request's own bytes.
  std::shared_ptr<const StoredImage> resident;
  std::unique_ptr<Image> decoded;
  // The shared-memory region the pixels lie in, held while the request uses them.
  std::shared_ptr<const SharedMemoryRegion> region;
};

// The decoder's limits under the request limits: max_decoded_pixels (or max_pixels if smaller).
DecodeLimits DecodeLimitsFor(const RequestLimits& limits);
// INVALID_ARGUMENT naming `field` and the limit when an encoded image's header (ProbeImage)
// claims more pixels than the server decodes.
absl::Status CheckEncodedShape(const ImageView& shape, absl::string_view field,
                               const RequestLimits& limits);

// For `call`'s identity; fills its decode_us for encoded inputs.
// `decode_threads` (may be null) lends idle threads to JPEG decoding. `shared_memory` is null when
// the server offers none (a shared-memory input is then FAILED_PRECONDITION).
absl::StatusOr<ResolvedImage> ResolveImage(const ImageInput& input, CallScope& call, ResidentStore& store,
                                           const SharedMemoryRegistry* shared_memory,
                                           const RequestLimits& limits,
                                           DecodeThreads* decode_threads);

// The region a request names (`field`: "input.shared_memory.region", ...) for `call`'s identity,
// held by the caller and by `call` (whose CheckSharedMemory then covers it): FAILED_PRECONDITION
// when `shared_memory` is null, NOT_FOUND when unknown or another identity's.
absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> FindRegion(
    const SharedMemoryRegistry* shared_memory, CallScope& call, absl::string_view handle,
    absl::string_view field);

}  // namespace cuimg

#endif  // CUIMG_SERVER_IMAGE_INPUT_H_
