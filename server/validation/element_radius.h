// Structuring elements given in millimetres (StructuringElement.radius): the one place where a
// physical element becomes a voxel element. Pure functions, no gRPC.
#ifndef CUIMG_SERVER_ELEMENT_RADIUS_H_
#define CUIMG_SERVER_ELEMENT_RADIUS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/v1/morphology.pb.h"
#include "cuimg/v1/types.pb.h"

namespace cuimg {

// What an element in millimetres resolves against: the input's voxel size, whether the input is
// a volume (depth > 1; on a 2D image the element is the ball's section through the image, a 2D
// element, and z_mm is not used), and the field naming the spacing in messages
// ("input.image.spacing"). `spacing_field` empty: the input carries no spacing at all (an
// encoded image); `why_no_spacing` then says so in the message.
struct ElementFrame {
  v1::Spacing spacing;
  bool volume = false;
  std::string spacing_field;
  std::string why_no_spacing;
};

// True when `element` is given in millimetres (its `radius` is set).
inline bool HasRadius(const v1::StructuringElement& element) { return element.has_radius(); }

// The voxel element for `element`, which has a radius: shape kept, width/height/depth = 2k + 1
// per axis with k = round-half-up(radius / spacing) (ratios within 1e-9 of a half round up),
// depth 0 for a 2D element (z_mm = 0, or a 2D input); radius, anchors and mask unset.
// INVALID_ARGUMENT naming the field (`field` is the element's, e.g. "steps[0].element"): a radius
// not finite or negative; width, height, depth, an anchor or a mask set beside it; a CUSTOM
// shape; an axis with a radius > 0 whose spacing is 0; an extent over `max_extent`. The shape
// itself is the caller's to check (the voxel element goes through the voxel rules next).
absl::StatusOr<v1::StructuringElement> ResolveElementRadius(const v1::StructuringElement& element,
                                                            absl::string_view field,
                                                            const ElementFrame& frame,
                                                            int max_extent);

}  // namespace cuimg

#endif  // CUIMG_SERVER_ELEMENT_RADIUS_H_
