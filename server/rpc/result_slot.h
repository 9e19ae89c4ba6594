// Where an image RPC's result image goes: into a buffer sent beside the response's bytes
// (wire_pixels.h), or into an image kept resident (and copied into the response unless omitted).
#ifndef CUIMG_SERVER_RPC_RESULT_SLOT_H_
#define CUIMG_SERVER_RPC_RESULT_SLOT_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/image.h"
#include "cuimg/v1/types.pb.h"
#include "server/rpc/wire_pixels.h"
#include "server/state/resident_store.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// The resident store's refusal of a result kept resident: about output.ttl_seconds when the
// store judged the TTL (its error names "ttl_seconds"), else about output.keep_resident.
absl::Status KeptResultError(const absl::Status& status);

// A returned result's header (type, size, channels 1, spacing): everything but the pixels.
v1::Image* DescribeResult(PixelType type, const Extent& extent, const v1::Spacing& spacing,
                          v1::ImageResult* result);

// One result image of `type` and `extent`. When it is only returned, its pixels go into a
// buffer sent beside the response's bytes (`detached`), which is the request's own when
// `overwrite` (not null) is its inline input of the same bytes
// (DetachedResults::TakeRequestPixels); when it also stays resident, into an owned image, kept
// by Deliver.
class ResultSlot {
 public:
  ResultSlot(const OutputSpec& output, PixelType type, const Extent& extent,
             const v1::Spacing& spacing, v1::ImageResult* result, DetachedResults& detached,
             const void* overwrite = nullptr);

  // Where the backend writes the result's pixels (uninitialized until it does).
  void* data() const { return data_; }

  // Stores the result when asked (counting against `identity`'s budget; a refusal as
  // KeptResultError words it) and fills the response: the handle, and the pixels unless omitted.
  absl::Status Deliver(ResidentStore& store, absl::string_view identity);

 private:
  OutputSpec output_;
  v1::ImageResult* result_;
  std::unique_ptr<StoredImage> stored_;
  void* data_ = nullptr;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_RPC_RESULT_SLOT_H_
