// Parsing of the client's morphology flags into API messages.
#ifndef CUIMG_CLIENT_MORPHOLOGY_SPEC_H_
#define CUIMG_CLIENT_MORPHOLOGY_SPEC_H_

#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/v1/morphology.pb.h"

namespace cuimg {

// "WxH" or "WxHxD" -> {W, H, D} (D = 0 for WxH).
absl::StatusOr<std::array<int, 3>> ParseSize(absl::string_view text);
absl::StatusOr<v1::MorphologyOp> ParseOp(absl::string_view text);
absl::StatusOr<v1::ElementShape> ParseShape(absl::string_view text);
// "Rmm", "RXxRYmm" or "RXxRYxRZmm" -> the element's radius in millimetres (non-negative decimals;
// "Rmm" is R on every axis: the server uses z only on volumes). Not a radius: NOT_FOUND (the
// text has no "mm" suffix), so callers can fall back to ParseSize.
absl::StatusOr<v1::ElementRadius> ParseRadius(absl::string_view text);
// "op:shape:WxH[xD][:iterations]", or with a radius in millimetres in place of the size
// ("dilate:ellipse:5mm", "erode:ball:5x5x10mm"): the server turns it into voxels from the
// input's spacing. The segmentation steps (C: a connectivity, ParseConnectivity; the server's
// default, face connectivity, when left out): "fill_holes[:C]", "reconstruct_dilate[:C]",
// "reconstruct_erode[:C]" (with the request's marker), "open_rec:SHAPE:SIZE[:C]",
// "close_rec:SHAPE:SIZE[:C]" (SIZE as above), "hmax:H[:C]", "hmin:H[:C]", "threshold:LO:HI",
// "remove_small:N[:C]", "keep_largest[:C]". INVALID_ARGUMENT naming the step otherwise.
absl::StatusOr<v1::MorphologyStep> ParseStep(absl::string_view text);
// "4", "8" (2D), "6", "18", "26" (3D); INVALID_ARGUMENT otherwise.
absl::StatusOr<v1::Connectivity> ParseConnectivity(absl::string_view text);
// The global steps (the segmentation steps but THRESHOLD: a pixel's result may depend on any
// pixel), which the client never splits over streams; the server's IsGlobalStep.
bool IsGlobalOp(v1::MorphologyOp op);
// "ellipse 15x15x5": a (resolved) element for people.
std::string DescribeElement(const v1::StructuringElement& element);
// A comma-separated list of steps.
absl::StatusOr<std::vector<v1::MorphologyStep>> ParseSteps(absl::string_view text);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_MORPHOLOGY_SPEC_H_
