// Label requests.
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/label_types.h"
#include "server/validation/proto_conversion.h"
#include "server/validation/request_validation.h"
#include "server/validation/validation_rules.h"

namespace cuimg {

absl::StatusOr<LabelJob> ValidateLabelRequest(const v1::LabelRequest& request,
                                              const RequestLimits& limits, DetachedPixels pixels) {
  LabelJob job;
  CUIMG_ASSIGN_OR_RETURN(job.input, ValidateImageSource(request.input(), "input", limits, pixels));
  CUIMG_ASSIGN_OR_RETURN(job.spec.connectivity,
                         ConnectivityFromProto(request.connectivity(), "connectivity"));
  if (request.has_threshold()) {
    const double lo = request.threshold().lo();
    const double hi = request.threshold().hi();
    if (std::isnan(lo)) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange, "threshold.lo",
                               "must be a number, got NaN");
    }
    if (std::isnan(hi) || hi < lo) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange, "threshold.hi",
                               absl::StrCat("must be >= lo (", lo, "), got ", hi));
    }
    job.spec.threshold = std::array<double, 2>{lo, hi};
  }
  if (request.min_voxels() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "min_voxels",
                             absl::StrCat(request.min_voxels(), " is too large"));
  }
  job.spec.min_voxels = static_cast<std::int64_t>(request.min_voxels());
  if (request.has_intensity()) {
    CUIMG_ASSIGN_OR_RETURN(job.intensity,
                           ValidateImageSource(request.intensity(), "intensity", limits));
  }
  CUIMG_ASSIGN_OR_RETURN(job.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_RETURN_IF_ERROR(RefuseSharedMemoryOutput(job.output, "Label"));
  if (KnownShape(job.input)) CUIMG_RETURN_IF_ERROR(CheckLabelInput(ShapeOf(job.input), job));
  return job;
}

absl::Status CheckLabelInput(const ImageView& image, const LabelJob& job) {
  if (image.channels != 1) {
    return InvalidFieldError(
        ErrorReason::kInvalidCombination, job.input.field,
        absl::StrCat("has ", image.channels, " channels; Label needs 1 (split channels first)"));
  }
  // The kernels' rules (label_types.h): an extent labels can index, the connectivity for 2D or
  // 3D (the threshold and min_voxels were checked with their request fields above).
  CUIMG_RETURN_IF_ERROR(ValidateLabelExtent(image.extent, job.input.field));
  CUIMG_RETURN_IF_ERROR(ValidateLabelSpec(job.spec, image.extent, ""));
  if (job.intensity.has_value() && KnownShape(*job.intensity)) {
    CUIMG_RETURN_IF_ERROR(CheckLabelIntensity(ShapeOf(*job.intensity), image));
  }
  return absl::OkStatus();
}

absl::Status CheckLabelIntensity(const ImageView& intensity, const ImageView& image) {
  if (intensity.extent == image.extent && intensity.channels == 1) return absl::OkStatus();
  return InvalidFieldError(
      ErrorReason::kShapeMismatch, "intensity",
      absl::StrCat("must be one channel of the input's size (", image.extent.width, "x",
                   image.extent.height, "x", image.extent.depth, "), got ", intensity.channels,
                   " channel(s) of ", intensity.extent.width, "x", intensity.extent.height, "x",
                   intensity.extent.depth));
}

}  // namespace cuimg
