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
// element, and z_mm is not used), and where the spacing comes from: `spacing_field`, its request
// field ("input.image.spacing"), or, for a spacing the request does not hold (a resident
// object's), `spacing_field` empty and `spacing_source` naming it in messages. `why_no_spacing`
// non-empty: the input carries no spacing at all (an encoded image), and says so.
struct ElementFrame {
  v1::Spacing spacing;
  bool volume = false;
  std::string spacing_field;
  std::string spacing_source;
  std::string why_no_spacing;
};

// True when `element` is given in millimetres (its `radius` is set).
inline bool HasRadius(const v1::StructuringElement& element) { return element.has_radius(); }

// The voxel element for `element`, which has a radius: shape kept, width/height/depth = 2k + 1
// per axis with k = round-half-up(radius / spacing) (ratios within 1e-9 of a half round up),
// depth 0 for a 2D element (z_mm = 0, or a 2D input); radius, anchors and mask unset.
// INVALID_ARGUMENT naming the field (`field` is the element's, e.g. "steps[0].element"): a radius
// not finite or negative (VALUE_OUT_OF_RANGE); width, height, depth, an anchor or a mask set
// beside it, a CUSTOM shape, an input without spacing (INVALID_COMBINATION); an axis with a
// radius > 0 whose spacing is 0 (FIELD_REQUIRED naming the spacing when the request holds it,
// else INVALID_COMBINATION naming the radius); an extent over `max_extent` (ELEMENT_TOO_LARGE). The
// shape itself is the caller's to check (the voxel element goes through the voxel rules next).
absl::StatusOr<v1::StructuringElement> ResolveElementRadius(const v1::StructuringElement& element,
                                                            absl::string_view field,
                                                            const ElementFrame& frame,
                                                            int max_extent);

}  // namespace cuimg

#endif  // CUIMG_SERVER_ELEMENT_RADIUS_H_
