// The header of a ProcessVolumeStream call.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/validation/proto_conversion.h"
#include "server/validation/request_validation.h"
#include "server/validation/validation_rules.h"

namespace cuimg {

absl::StatusOr<VolumeStreamJob> ValidateVolumeStreamHeader(const v1::VolumeStreamHeader& header,
                                                           const RequestLimits& limits) {
  if (!header.has_volume()) {
    return InvalidFieldError(ErrorReason::kFieldRequired, "header.volume",
                             "is required (the volume's type and size)");
  }
  CUIMG_ASSIGN_OR_RETURN(ImageInput volume, ValidateImage(header.volume(), header.volume().data(),
                                                          "header.volume", limits, true));
  if (!header.volume().data().empty()) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, "header.volume.data",
                             absl::StrCat("must be empty (pixels arrive in slab messages), got ",
                                          header.volume().data().size(), " bytes"));
  }
  if (volume.channels != 1) {
    return InvalidFieldError(ErrorReason::kUnsupportedImageShape, "header.volume.channels",
                             absl::StrCat(volume.channels, "; streamed volumes need 1"));
  }
  VolumeStreamJob job;
  job.type = volume.type;
  job.extent = volume.extent;
  job.spacing = header.volume().spacing();
  switch (header.operation_case()) {
    case v1::VolumeStreamHeader::kMorphology: {
      const v1::MorphologyRequest& m = header.morphology();
      if (m.has_input()) {
        return InvalidFieldError(ErrorReason::kInvalidCombination, "header.morphology.input",
                                 "must be unset (the pixels arrive in slab messages)");
      }
      if (m.has_output()) {
        return InvalidFieldError(ErrorReason::kInvalidCombination, "header.morphology.output",
                                 "must be unset (results stream back; nothing is kept)");
      }
      job.op = VolumeStreamJob::Op::kMorphology;
      ElementFrame frame;
      frame.spacing = header.volume().spacing();
      frame.volume = job.extent.depth > 1;
      frame.spacing_field = "header.volume.spacing";
      CUIMG_ASSIGN_OR_RETURN(job.steps, ValidateMorphologySteps(m, "header.morphology.", limits,
                                                                frame, &job.resolved_elements));
      CUIMG_RETURN_IF_ERROR(
          CheckStepsForImage(job.steps, job.type, job.extent, "header.morphology."));
      absl::StatusOr<absl::optional<ImageInput>> marker = ValidateMarker(m, limits);
      if (!marker.ok()) return WithFieldPrefix(marker.status(), "header.morphology.");
      job.marker = *std::move(marker);
      if (job.marker.has_value() && (job.marker->kind == ImageInput::Kind::kInline ||
                                     job.marker->kind == ImageInput::Kind::kEncoded)) {
        return InvalidFieldError(
            ErrorReason::kInvalidCombination, "header.morphology.marker",
            "a streamed volume's marker must be a resident handle or in shared memory (the "
            "header stays small): upload it first");
      }
      if (job.marker.has_value() && KnownShape(*job.marker)) {
        CUIMG_RETURN_IF_ERROR(CheckMarkerShape(ShapeOf(*job.marker),
                                               ImageView{job.type, job.extent, 1, nullptr},
                                               "header.morphology.marker"));
      }
      return job;
    }
    case v1::VolumeStreamHeader::kGradient: {
      const v1::GradientRequest& g = header.gradient();
      if (g.has_input()) {
        return InvalidFieldError(ErrorReason::kInvalidCombination, "header.gradient.input",
                                 "must be unset (the pixels arrive in slab messages)");
      }
      if (g.has_output()) {
        return InvalidFieldError(ErrorReason::kInvalidCombination, "header.gradient.output",
                                 "must be unset (results stream back; nothing is kept)");
      }
      job.op = VolumeStreamJob::Op::kGradient;
      CUIMG_RETURN_IF_ERROR(CheckFilterPixelType(job.type, "header.volume.pixel_type", "Gradient"));
      CUIMG_ASSIGN_OR_RETURN(job.gradient, ValidateGradientFields(g, "header.gradient."));
      return job;
    }
    case v1::VolumeStreamHeader::OPERATION_NOT_SET:
      break;
  }
  return InvalidFieldError(ErrorReason::kFieldRequired, "header.operation",
                           "one of morphology or gradient is required");
}

}  // namespace cuimg
