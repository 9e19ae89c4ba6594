// From raw window hits to the detections a response carries: OpenCV's rectangle grouping, then
// clipping and ordering. Host code, shared by both backends.
#ifndef CUIMG_KERNELS_GROUP_RECTANGLES_H_
#define CUIMG_KERNELS_GROUP_RECTANGLES_H_

#include <vector>

#include "cuimg/kernels/hog_types.h"

namespace cuimg {

// OpenCV HOGDescriptor::groupRectangles: rectangles are similar when every edge differs by at
// most eps * (min widths + min heights) / 2; clusters (connected components) with at most
// `group_threshold` members are dropped; the rest become their members' average (rounded half to
// even) with the members' maximum score and mean scale; a cluster lying inside another one
// (within eps of its size) is dropped when the other has more than max(3, its members) members
// or it has fewer than 3. group_threshold <= 0 returns `rects` unchanged.
std::vector<Detection> GroupRectangles(const std::vector<Detection>& rects, int group_threshold,
                                       double eps);

// The response of a detection: hits as rectangles (cvRound(x * scale), cvRound(y * scale),
// cvRound(window * scale)), grouped per spec.grouping, clipped to the image (empty ones dropped),
// in descending score order (ties by position). Hits may come in any order.
std::vector<Detection> FinishDetections(const DetectGeometry& geometry, std::vector<WindowHit> hits,
                                        const DetectSpec& spec);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_GROUP_RECTANGLES_H_
