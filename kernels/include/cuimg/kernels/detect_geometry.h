// Where a detection looks: the pyramid levels and the windows on each (OpenCV 4.6
// HOGDescriptor::detectMultiScale's rules), planned from the image size, the window and the spec.
#ifndef CUIMG_KERNELS_DETECT_GEOMETRY_H_
#define CUIMG_KERNELS_DETECT_GEOMETRY_H_

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/hog_types.h"

namespace cuimg {

// The levels detectMultiScale evaluates: scale_0 = 1 and scale_k = scale_{k-1} * spec.scale for
// as long as cvRound(side / scale_k) reaches the window on both axes, at most max_levels; level 0
// is always evaluated (padding may give it windows even when the input is smaller than one).
// Errors: ValidateDetectSpec's, and INVALID_ARGUMENT for a non-2D or empty extent or a window that
// ValidateHogModel would refuse.
absl::StatusOr<DetectGeometry> PlanDetection(const Extent& image, int window_width,
                                             int window_height, const DetectSpec& spec);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_DETECT_GEOMETRY_H_
