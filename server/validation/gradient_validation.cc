// Gradient requests (and the filter fields the streamed volumes share).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/validation/proto_conversion.h"
#include "server/validation/request_validation.h"
#include "server/validation/validation_rules.h"

namespace cuimg {

absl::StatusOr<GradientSpec> ValidateGradientFields(const v1::GradientRequest& request,
                                                    absl::string_view prefix) {
  // Defaults here; the ranges are the kernel's (ValidateGradientSpec).
  GradientSpec spec;
  if (request.kernel_length() != 0) {
    CUIMG_ASSIGN_OR_RETURN(spec.kernel_length,
                           AsInt(absl::StrCat(prefix, "kernel_length"), request.kernel_length()));
  }
  spec.sigma = request.sigma();
  spec.magnitude = request.magnitude();
  spec.angle = request.angle();
  CUIMG_RETURN_IF_ERROR(WithFieldPrefix(ValidateGradientSpec(spec), prefix));
  return spec;
}

absl::StatusOr<GradientJob> ValidateGradientRequest(const v1::GradientRequest& request,
                                                    const RequestLimits& limits,
                                                    DetachedPixels pixels) {
  GradientJob job;
  CUIMG_ASSIGN_OR_RETURN(job.input, ValidateImageSource(request.input(), "input", limits, pixels));
  CUIMG_ASSIGN_OR_RETURN(job.spec, ValidateGradientFields(request, ""));
  CUIMG_ASSIGN_OR_RETURN(job.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_RETURN_IF_ERROR(RefuseSharedMemoryOutput(job.output, "Gradient"));
  CUIMG_RETURN_IF_ERROR(RefuseFrameEncoding(job.output, "Gradient"));
  if (job.input.kind == ImageInput::Kind::kInline || job.input.kind == ImageInput::Kind::kFrames) {
    CUIMG_RETURN_IF_ERROR(CheckGradientInput(
        ImageView{job.input.type, job.input.extent, job.input.channels, nullptr}, job));
  }
  return job;
}

absl::Status CheckGradientInput(const ImageView& image, const GradientJob& job) {
  if (image.channels != 1) {
    return InvalidFieldError(ErrorReason::kUnsupportedImageShape, job.input.field,
                             absl::StrCat("has ", image.channels, " channels; Gradient needs 1"));
  }
  return CheckFilterPixelType(image.type, PixelTypeField(job.input), "Gradient");
}

}  // namespace cuimg
