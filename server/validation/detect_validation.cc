// DetectPedestrians requests: the model first, then the fields.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/security/untrusted_text.h"
#include "server/state/model_registry.h"
#include "server/validation/proto_conversion.h"
#include "server/validation/request_validation.h"
#include "server/validation/validation_rules.h"

namespace cuimg {

absl::StatusOr<DetectJob> ValidateDetectRequest(const v1::DetectPedestriansRequest& request,
                                                const RequestLimits& limits,
                                                const ModelRegistry& models,
                                                DetachedPixels pixels) {
  DetectJob job;
  const std::string name = request.model().empty() ? kDefaultDetectorModel : request.model();
  job.model = models.Find(name);
  if (job.model == nullptr) {
    return MakeError(
        absl::StatusCode::kNotFound, ErrorReason::kModelNotFound, "model",
        absl::StrCat(QuoteClientValue(name), " is not loaded (loaded: ", models.Names(), ")"));
  }
  CUIMG_ASSIGN_OR_RETURN(job.input, ValidateImageSource(request.input(), "input", limits, pixels));
  // Defaults here; the ranges are the kernel's (ValidateDetectSpec), checked once below.
  DetectSpec& spec = job.spec;
  spec.hit_threshold = request.hit_threshold();
  if (request.win_stride() != 0) {
    CUIMG_ASSIGN_OR_RETURN(spec.win_stride, AsInt("win_stride", request.win_stride()));
  }
  CUIMG_ASSIGN_OR_RETURN(spec.padding, AsInt("padding", request.padding()));
  if (request.scale() != 0) spec.scale = request.scale();
  // The server's cap on levels is this server's rule, not the kernel's.
  CUIMG_RETURN_IF_ERROR(CheckLimit("max_levels", request.max_levels(), 0, limits.max_pyramid_levels,
                                   "max_pyramid_levels"));
  spec.max_levels = request.max_levels() != 0 ? static_cast<int>(request.max_levels())
                                              : std::min(64, limits.max_pyramid_levels);
  spec.gamma_correction =
      request.has_gamma_correction() ? request.gamma_correction() : job.model->gamma_correction;
  switch (request.grouping()) {
    case v1::GROUPING_UNSPECIFIED:
    case v1::GROUPING_GROUP_RECTANGLES:
      spec.grouping = DetectGrouping::kGroupRectangles;
      break;
    case v1::GROUPING_NONE:
      spec.grouping = DetectGrouping::kNone;
      break;
    default:
      return InvalidFieldError(ErrorReason::kUnknownEnumValue, "grouping",
                               absl::StrCat("unknown value ", request.grouping()));
  }
  if (request.has_group_threshold()) {
    CUIMG_ASSIGN_OR_RETURN(spec.group_threshold,
                           AsInt("group_threshold", request.group_threshold()));
  }
  if (request.group_eps() != 0) spec.group_eps = request.group_eps();
  CUIMG_RETURN_IF_ERROR(ValidateDetectSpec(spec));
  if (job.input.kind == ImageInput::Kind::kInline || job.input.kind == ImageInput::Kind::kFrames) {
    CUIMG_RETURN_IF_ERROR(CheckDetectInput(
        ImageView{job.input.type, job.input.extent, job.input.channels, nullptr}, job));
  }
  return job;
}

absl::Status CheckDetectInput(const ImageView& image, const DetectJob& job) {
  return ValidateDetectInput(image.type, image.extent, image.channels, job.input.field);
}

}  // namespace cuimg
