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
// "op:shape:WxH[xD][:iterations]".
absl::StatusOr<v1::MorphologyStep> ParseStep(absl::string_view text);
// A comma-separated list of steps.
absl::StatusOr<std::vector<v1::MorphologyStep>> ParseSteps(absl::string_view text);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_MORPHOLOGY_SPEC_H_
