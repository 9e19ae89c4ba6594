// Morphology requests (and the step chain the streamed volumes share).
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/validation/element_radius.h"
#include "server/validation/proto_conversion.h"
#include "server/validation/request_validation.h"
#include "server/validation/validation_rules.h"

namespace cuimg {
namespace {

absl::StatusOr<ElementShape> ShapeFromProto(int value, absl::string_view field) {
  switch (value) {
    case v1::ELEMENT_SHAPE_RECT:
      return ElementShape::kRect;
    case v1::ELEMENT_SHAPE_ELLIPSE:
      return ElementShape::kEllipse;
    case v1::ELEMENT_SHAPE_CROSS:
      return ElementShape::kCross;
    case v1::ELEMENT_SHAPE_CUSTOM:
      return ElementShape::kCustom;
    case v1::ELEMENT_SHAPE_UNSPECIFIED:
      return InvalidFieldError(ErrorReason::kFieldRequired, field,
                               "is required (ELEMENT_SHAPE_UNSPECIFIED)");
    default:
      break;
  }
  return InvalidFieldError(ErrorReason::kUnknownEnumValue, field,
                           absl::StrCat("unknown value ", value));
}

absl::StatusOr<MorphOp> OpFromProto(int value, absl::string_view field) {
  switch (value) {
    case v1::MORPHOLOGY_OP_ERODE:
      return MorphOp::kErode;
    case v1::MORPHOLOGY_OP_DILATE:
      return MorphOp::kDilate;
    case v1::MORPHOLOGY_OP_OPEN:
      return MorphOp::kOpen;
    case v1::MORPHOLOGY_OP_CLOSE:
      return MorphOp::kClose;
    case v1::MORPHOLOGY_OP_GRADIENT:
      return MorphOp::kGradient;
    case v1::MORPHOLOGY_OP_TOP_HAT:
      return MorphOp::kTopHat;
    case v1::MORPHOLOGY_OP_BLACK_HAT:
      return MorphOp::kBlackHat;
    case v1::MORPHOLOGY_OP_FILL_HOLES:
      return MorphOp::kFillHoles;
    case v1::MORPHOLOGY_OP_RECONSTRUCT_DILATE:
      return MorphOp::kReconstructDilate;
    case v1::MORPHOLOGY_OP_RECONSTRUCT_ERODE:
      return MorphOp::kReconstructErode;
    case v1::MORPHOLOGY_OP_OPEN_REC:
      return MorphOp::kOpenRec;
    case v1::MORPHOLOGY_OP_CLOSE_REC:
      return MorphOp::kCloseRec;
    case v1::MORPHOLOGY_OP_HMAX:
      return MorphOp::kHMax;
    case v1::MORPHOLOGY_OP_HMIN:
      return MorphOp::kHMin;
    case v1::MORPHOLOGY_OP_THRESHOLD:
      return MorphOp::kThreshold;
    case v1::MORPHOLOGY_OP_REMOVE_SMALL:
      return MorphOp::kRemoveSmall;
    case v1::MORPHOLOGY_OP_KEEP_LARGEST:
      return MorphOp::kKeepLargest;
    case v1::MORPHOLOGY_OP_UNSPECIFIED:
      return InvalidFieldError(ErrorReason::kFieldRequired, field,
                               "is required (MORPHOLOGY_OP_UNSPECIFIED)");
    default:
      break;
  }
  return InvalidFieldError(ErrorReason::kUnknownEnumValue, field,
                           absl::StrCat("unknown value ", value));
}

absl::StatusOr<BorderMode> BorderFromProto(int value, absl::string_view field) {
  switch (value) {
    case v1::BORDER_MODE_UNSPECIFIED:
    case v1::BORDER_MODE_NEUTRAL:
      return BorderMode::kNeutral;
    case v1::BORDER_MODE_CONSTANT:
      return BorderMode::kConstant;
    default:
      break;
  }
  return InvalidFieldError(ErrorReason::kUnknownEnumValue, field,
                           absl::StrCat("unknown value ", value));
}

absl::StatusOr<StructuringElement> ValidateElement(const v1::StructuringElement& e,
                                                   const std::string& field,
                                                   const RequestLimits& limits) {
  ElementSpec spec;
  CUIMG_ASSIGN_OR_RETURN(spec.shape, ShapeFromProto(e.shape(), absl::StrCat(field, ".shape")));
  const int max = limits.max_element_extent;
  const char* limit = "max_element_extent";
  const ErrorReason large = ErrorReason::kElementTooLarge;
  CUIMG_RETURN_IF_ERROR(CheckLimit(absl::StrCat(field, ".width"), e.width(), 1, max, limit, large));
  CUIMG_RETURN_IF_ERROR(
      CheckLimit(absl::StrCat(field, ".height"), e.height(), 1, max, limit, large));
  CUIMG_RETURN_IF_ERROR(CheckLimit(absl::StrCat(field, ".depth"), e.depth(), 0, max, limit, large));
  spec.width = static_cast<int>(e.width());
  spec.height = static_cast<int>(e.height());
  spec.depth = static_cast<int>(e.depth());
  const int depth = spec.depth == 0 ? 1 : spec.depth;
  if (e.has_anchor_x()) {
    CUIMG_RETURN_IF_ERROR(
        CheckRange(absl::StrCat(field, ".anchor_x"), e.anchor_x(), 0, spec.width - 1));
    spec.anchor_x = static_cast<int>(e.anchor_x());
  }
  if (e.has_anchor_y()) {
    CUIMG_RETURN_IF_ERROR(
        CheckRange(absl::StrCat(field, ".anchor_y"), e.anchor_y(), 0, spec.height - 1));
    spec.anchor_y = static_cast<int>(e.anchor_y());
  }
  if (e.has_anchor_z()) {
    CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".anchor_z"), e.anchor_z(), 0, depth - 1));
    spec.anchor_z = static_cast<int>(e.anchor_z());
  }
  const std::int64_t cells = std::int64_t{spec.width} * spec.height * depth;
  if (spec.shape == ElementShape::kCustom) {
    if (static_cast<std::int64_t>(e.mask().size()) != cells) {
      return InvalidFieldError(
          ErrorReason::kDataSizeMismatch, absl::StrCat(field, ".mask"),
          absl::StrCat(e.mask().size(), " bytes, expected width*height*depth = ", cells));
    }
    spec.mask.assign(e.mask().begin(), e.mask().end());
  } else if (!e.mask().empty()) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, absl::StrCat(field, ".mask"),
                             "only allowed with ELEMENT_SHAPE_CUSTOM");
  }
  absl::StatusOr<StructuringElement> se = StructuringElement::Create(spec);
  if (!se.ok()) return WithFieldPrefix(se.status(), absl::StrCat(field, "."));
  return se;
}

// Whether `op` runs with a structuring element (and its border and iterations).
bool TakesElement(MorphOp op) {
  switch (op) {
    case MorphOp::kErode:
    case MorphOp::kDilate:
    case MorphOp::kOpen:
    case MorphOp::kClose:
    case MorphOp::kGradient:
    case MorphOp::kTopHat:
    case MorphOp::kBlackHat:
    case MorphOp::kOpenRec:
    case MorphOp::kCloseRec:
      return true;
    default:
      break;
  }
  return false;
}

// A parameter that the step's op does not use must be left at its default, so that a parameter
// given to the wrong step is refused rather than silently ignored (morphology.proto).
absl::Status RefuseUnusedFields(const v1::MorphologyStep& s, MorphOp op, absl::string_view field) {
  MorphologyStep probe;
  probe.op = op;
  const bool element = TakesElement(op);
  const bool hextrema = op == MorphOp::kHMax || op == MorphOp::kHMin;
  const struct {
    const char* name;
    bool set;
    bool used;
  } fields[] = {
      {"element", s.has_element(), element},
      {"border_mode", s.border_mode() != v1::BORDER_MODE_UNSPECIFIED, element},
      {"border_value", s.border_value() != 0, element},
      {"iterations", s.iterations() > 1, element},
      {"connectivity", s.connectivity() != v1::CONNECTIVITY_UNSPECIFIED, IsGlobalStep(probe)},
      {"h", s.h() != 0, hextrema},
      {"lo", s.lo() != 0, op == MorphOp::kThreshold},
      {"hi", s.hi() != 0, op == MorphOp::kThreshold},
      {"min_voxels", s.min_voxels() != 0, op == MorphOp::kRemoveSmall},
  };
  for (const auto& f : fields) {
    if (f.set && !f.used) {
      return InvalidFieldError(
          ErrorReason::kInvalidCombination, absl::StrCat(field, ".", f.name),
          absl::StrCat("is not used by ", MorphOpName(op), " (leave it unset)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<MorphologyStep>> ValidateMorphologySteps(
    const v1::MorphologyRequest& request, absl::string_view prefix, const RequestLimits& limits,
    const ElementFrame& frame, std::vector<v1::StructuringElement>* resolved) {
  if (request.steps().empty()) {
    return InvalidFieldError(ErrorReason::kFieldRequired, absl::StrCat(prefix, "steps"),
                             "at least one step is required");
  }
  if (request.steps_size() > limits.max_steps) {
    return InvalidFieldError(
        ErrorReason::kLimitExceeded, absl::StrCat(prefix, "steps"),
        absl::StrCat(request.steps_size(), " steps, more than max_steps=", limits.max_steps));
  }
  std::vector<MorphologyStep> steps;
  bool any_radius = false;
  resolved->clear();
  for (int i = 0; i < request.steps_size(); ++i) {
    const v1::MorphologyStep& s = request.steps(i);
    const std::string field = absl::StrCat(prefix, "steps[", i, "]");
    MorphologyStep step;
    CUIMG_ASSIGN_OR_RETURN(step.op, OpFromProto(s.op(), absl::StrCat(field, ".op")));
    CUIMG_RETURN_IF_ERROR(RefuseUnusedFields(s, step.op, field));
    v1::StructuringElement voxels;  // steps without an element echo an empty one
    if (TakesElement(step.op)) {
      const std::string element_field = absl::StrCat(field, ".element");
      if (HasRadius(s.element())) {
        any_radius = true;
        CUIMG_ASSIGN_OR_RETURN(voxels, ResolveElementRadius(s.element(), element_field, frame,
                                                            limits.max_element_extent));
      } else {
        voxels = s.element();
      }
      CUIMG_ASSIGN_OR_RETURN(step.element, ValidateElement(voxels, element_field, limits));
      voxels.clear_mask();
    }
    resolved->push_back(std::move(voxels));
    CUIMG_RETURN_IF_ERROR(CheckLimit(absl::StrCat(field, ".iterations"), s.iterations(), 0,
                                     limits.max_iterations, "max_iterations"));
    step.iterations = s.iterations() == 0 ? 1 : static_cast<int>(s.iterations());
    CUIMG_ASSIGN_OR_RETURN(step.border,
                           BorderFromProto(s.border_mode(), absl::StrCat(field, ".border_mode")));
    step.border_value = s.border_value();
    CUIMG_ASSIGN_OR_RETURN(
        step.connectivity,
        ConnectivityFromProto(s.connectivity(), absl::StrCat(field, ".connectivity")));
    step.h = s.h();
    step.lo = s.lo();
    step.hi = s.hi();
    if (s.min_voxels() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange, absl::StrCat(field, ".min_voxels"),
                               absl::StrCat(s.min_voxels(), " is too large"));
    }
    step.min_voxels = static_cast<std::int64_t>(s.min_voxels());
    steps.push_back(std::move(step));
  }
  if (!any_radius) resolved->clear();
  return steps;
}

namespace {

bool AnyRadius(const v1::MorphologyRequest& request) {
  for (const v1::MorphologyStep& s : request.steps()) {
    if (HasRadius(s.element())) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<MorphologyJob> ValidateMorphologyRequest(const v1::MorphologyRequest& request,
                                                        const RequestLimits& limits,
                                                        DetachedPixels pixels) {
  MorphologyJob job;
  CUIMG_ASSIGN_OR_RETURN(job.input, ValidateImageSource(request.input(), "input", limits, pixels));
  ElementFrame frame;
  frame.volume = job.input.extent.depth > 1;
  switch (job.input.kind) {
    case ImageInput::Kind::kInline:
      frame.spacing = request.input().image().spacing();
      frame.spacing_field = "input.image.spacing";
      break;
    case ImageInput::Kind::kSharedMemory:
      frame.spacing = request.input().shared_memory().image().spacing();
      frame.spacing_field = "input.shared_memory.image.spacing";
      break;
    case ImageInput::Kind::kEncoded:
      frame.why_no_spacing = "input.encoded (PNG/JPEG) carries none";
      break;
    case ImageInput::Kind::kFrames:
      frame.spacing = job.input.spacing;
      frame.spacing_field = "input.dicom_frames.spacing";
      break;
    case ImageInput::Kind::kHandle:
      // The resident object's spacing: ResolveMorphologyOnResident, once it is looked up.
      job.steps_await_spacing = AnyRadius(request);
      break;
  }
  if (!job.steps_await_spacing) {
    CUIMG_ASSIGN_OR_RETURN(
        job.steps, ValidateMorphologySteps(request, "", limits, frame, &job.resolved_elements));
  }
  CUIMG_ASSIGN_OR_RETURN(job.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_ASSIGN_OR_RETURN(job.marker, ValidateMarker(request, limits));
  if (KnownShape(job.input)) {
    CUIMG_RETURN_IF_ERROR(CheckMorphologyInput(ShapeOf(job.input), job));
  }
  return job;
}

absl::StatusOr<absl::optional<ImageInput>> ValidateMarker(const v1::MorphologyRequest& request,
                                                          const RequestLimits& limits) {
  // Whether a step reads the marker is known from the ops alone (steps may await spacing).
  bool needed = false;
  for (const v1::MorphologyStep& s : request.steps()) {
    needed = needed || s.op() == v1::MORPHOLOGY_OP_RECONSTRUCT_DILATE ||
             s.op() == v1::MORPHOLOGY_OP_RECONSTRUCT_ERODE;
  }
  if (!request.has_marker()) {
    if (!needed) return absl::nullopt;
    return InvalidFieldError(ErrorReason::kFieldRequired, "marker",
                             "reconstruct_dilate and reconstruct_erode need a marker image");
  }
  if (!needed) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, "marker",
                             "no step reads it (only reconstruct_dilate and reconstruct_erode do)");
  }
  CUIMG_ASSIGN_OR_RETURN(ImageInput marker,
                         ValidateImageSource(request.marker(), "marker", limits));
  return marker;
}

absl::Status ResolveMorphologyOnResident(const v1::MorphologyRequest& request,
                                         const v1::Spacing& spacing, const Extent& extent,
                                         const RequestLimits& limits, MorphologyJob* job) {
  if (!job->steps_await_spacing) return absl::OkStatus();
  ElementFrame frame;
  frame.spacing = spacing;
  frame.volume = extent.depth > 1;
  frame.spacing_source = absl::StrCat("the resident object ", job->input.field, "'s spacing");
  CUIMG_ASSIGN_OR_RETURN(
      job->steps, ValidateMorphologySteps(request, "", limits, frame, &job->resolved_elements));
  job->steps_await_spacing = false;
  return absl::OkStatus();
}

absl::Status CheckStepsForImage(const std::vector<MorphologyStep>& steps, PixelType type,
                                const Extent& extent, absl::string_view prefix) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const MorphologyStep& step = steps[i];
    const std::string field = absl::StrCat(prefix, "steps[", i, "]");
    CUIMG_RETURN_IF_ERROR(ValidateMorphologyStep(step, extent, field));
    if (type == PixelType::kU32 && !StepTakesU32(step)) {  // the kernels' rule
      return InvalidFieldError(
          ErrorReason::kUnsupportedPixelType, absl::StrCat(field, ".op"),
          absl::StrCat(MorphOpName(step.op),
                       " takes u8, u16, i16 or f32; u32 label images take only the steps "
                       "without an element (fill_holes, reconstruction, hmax/hmin, threshold, "
                       "remove_small, keep_largest)"));
    }
    if (type != PixelType::kF32 && !std::isfinite(step.border_value)) {
      return InvalidFieldError(
          ErrorReason::kValueOutOfRange, absl::StrCat(field, ".border_value"),
          absl::StrCat(step.border_value, " is not finite (allowed only for F32 images)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckMarkerShape(const ImageView& marker, const ImageView& image,
                              absl::string_view field) {
  if (marker.type == image.type && marker.extent == image.extent && marker.channels == 1) {
    return absl::OkStatus();
  }
  return InvalidFieldError(
      ErrorReason::kShapeMismatch, field,
      absl::StrCat("the marker must be one channel of the input's type and size (",
                   PixelTypeName(image.type), " ", image.extent.width, "x", image.extent.height,
                   "x", image.extent.depth, "), got ", marker.channels, " channel(s) of ",
                   PixelTypeName(marker.type), " ", marker.extent.width, "x", marker.extent.height,
                   "x", marker.extent.depth));
}

absl::Status CheckMorphologyInput(const ImageView& image, const MorphologyJob& job) {
  if (image.channels != 1) {
    return InvalidFieldError(ErrorReason::kUnsupportedImageShape, job.input.field,
                             absl::StrCat("has ", image.channels,
                                          " channels; Morphology needs 1 (split channels first)"));
  }
  CUIMG_RETURN_IF_ERROR(CheckFrameEncodable(job.output, image.type));
  if (job.steps_await_spacing) return absl::OkStatus();  // checked once the steps are known
  CUIMG_RETURN_IF_ERROR(CheckStepsForImage(job.steps, image.type, image.extent, ""));
  if (job.marker.has_value() && KnownShape(*job.marker)) {
    CUIMG_RETURN_IF_ERROR(CheckMarkerShape(ShapeOf(*job.marker), image, "marker"));
  }
  return absl::OkStatus();
}

}  // namespace cuimg
