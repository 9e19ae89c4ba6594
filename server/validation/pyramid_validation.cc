// Pyramid requests.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/validation/proto_conversion.h"
#include "server/validation/request_validation.h"
#include "server/validation/validation_rules.h"

namespace cuimg {

absl::StatusOr<PyramidJob> ValidatePyramidRequest(const v1::PyramidRequest& request,
                                                  const RequestLimits& limits,
                                                  DetachedPixels pixels) {
  PyramidJob job;
  CUIMG_ASSIGN_OR_RETURN(job.input, ValidateImageSource(request.input(), "input", limits, pixels));
  CUIMG_RETURN_IF_ERROR(
      CheckLimit("levels", request.levels(), 0, limits.max_pyramid_levels, "max_pyramid_levels"));
  job.spec.levels =
      request.levels() == 0 ? kDefaultPyramidLevels : static_cast<int>(request.levels());
  job.spec.ratio = request.ratio() == 0 ? kDefaultPyramidRatio : request.ratio();
  CUIMG_RETURN_IF_ERROR(
      CheckLimit("min_width", request.min_width(), 0, limits.max_side, "max_side"));
  CUIMG_RETURN_IF_ERROR(
      CheckLimit("min_height", request.min_height(), 0, limits.max_side, "max_side"));
  job.spec.min_width =
      request.min_width() == 0 ? kDefaultPyramidMinSide : static_cast<int>(request.min_width());
  job.spec.min_height =
      request.min_height() == 0 ? kDefaultPyramidMinSide : static_cast<int>(request.min_height());
  switch (request.mode()) {
    case v1::PYRAMID_MODE_UNSPECIFIED:
    case v1::PYRAMID_MODE_FROM_BASE:
      job.spec.mode = PyramidMode::kFromBase;
      break;
    case v1::PYRAMID_MODE_CASCADED:
      job.spec.mode = PyramidMode::kCascaded;
      break;
    default:
      return InvalidFieldError(ErrorReason::kUnknownEnumValue, "mode",
                               absl::StrCat("unknown value ", request.mode()));
  }
  if (request.output_type() == v1::PIXEL_TYPE_UNSPECIFIED) {
    job.spec.output_type = PixelType::kF32;
  } else {
    CUIMG_ASSIGN_OR_RETURN(job.spec.output_type,
                           PixelTypeFromProto(request.output_type(), "output_type"));
    job.output_input_type = job.spec.output_type != PixelType::kF32;
  }
  // The ranges are the kernel's, checked here for every input and again with the input's shape.
  CUIMG_RETURN_IF_ERROR(ValidatePyramidParameters(job.spec));
  CUIMG_ASSIGN_OR_RETURN(job.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_RETURN_IF_ERROR(RefuseSharedMemoryOutput(job.output, "Pyramid"));
  CUIMG_RETURN_IF_ERROR(RefuseFrameEncoding(job.output, "Pyramid"));
  if (job.input.kind == ImageInput::Kind::kInline || job.input.kind == ImageInput::Kind::kFrames) {
    CUIMG_RETURN_IF_ERROR(CheckPyramidInput(
        ImageView{job.input.type, job.input.extent, job.input.channels, nullptr}, &job));
  }
  return job;
}

absl::Status CheckPyramidInput(const ImageView& image, PyramidJob* job) {
  if (image.channels != 1) {
    return InvalidFieldError(ErrorReason::kUnsupportedImageShape, job->input.field,
                             absl::StrCat("has ", image.channels, " channels; Pyramid needs 1"));
  }
  if (image.extent.depth != 1) {
    return InvalidFieldError(ErrorReason::kUnsupportedImageShape, job->input.field,
                             "is a volume; Pyramid needs a 2D image");
  }
  // U32 is refused naming the input's pixel type field, as Gradient's is.
  CUIMG_RETURN_IF_ERROR(CheckFilterPixelType(image.type, PixelTypeField(job->input), "Pyramid"));
  // The kernel's rules, output_type's among them (F32 or the input's type). The kernel names its
  // spec's fields (PyramidRequest's names too); what it says about the image itself names no
  // field, so it is the input's.
  return AtField(ValidatePyramidSpec(image.type, image.extent, job->spec), job->input.field);
}

}  // namespace cuimg
