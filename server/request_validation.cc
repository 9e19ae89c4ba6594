#include "server/request_validation.h"

#include <array>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/model_registry.h"
#include "server/proto_conversion.h"
#include "server/untrusted_text.h"

namespace cuimg {
namespace {

absl::Status OutOfRange(absl::string_view field, std::int64_t value, std::int64_t lo,
                        std::int64_t hi, absl::string_view why = "") {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", value, " is not in [", lo, ", ", hi, "]", why));
}

absl::Status CheckRange(absl::string_view field, std::int64_t value, std::int64_t lo,
                        std::int64_t hi, absl::string_view why = "") {
  if (value < lo || value > hi) return OutOfRange(field, value, lo, hi, why);
  return absl::OkStatus();
}

// A uint32 field as the int a kernel spec holds; INVALID_ARGUMENT naming `field` when it does
// not fit (the kernel's validator judges the range of what does).
absl::StatusOr<int> AsInt(absl::string_view field, std::uint32_t value) {
  if (value > static_cast<std::uint32_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", value, " is too large"));
  }
  return static_cast<int>(value);
}

// A kernel validator's error ("kernel_length: ...") with the request's path to the spec before
// its field ("header.gradient.kernel_length: ...").
absl::Status WithFieldPrefix(const absl::Status& status, absl::string_view prefix) {
  if (status.ok() || prefix.empty()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// `data` is the image's pixels: image.data(), or what stands for it (DetachedPixels).
absl::StatusOr<ImageInput> ValidateImage(const v1::Image& image, absl::string_view data,
                                         std::string field, const RequestLimits& limits,
                                         bool partial_data) {
  ImageInput in;
  in.kind = ImageInput::Kind::kInline;
  CUIMG_ASSIGN_OR_RETURN(in.type,
                         PixelTypeFromProto(image.pixel_type(), absl::StrCat(field, ".pixel_type")));
  CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".width"), image.width(), 1, limits.max_side));
  CUIMG_RETURN_IF_ERROR(
      CheckRange(absl::StrCat(field, ".height"), image.height(), 1, limits.max_side));
  CUIMG_RETURN_IF_ERROR(
      CheckRange(absl::StrCat(field, ".depth"), image.depth(), 0, limits.max_side));
  CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".channels"), image.channels(), 0, 4));
  in.extent = Extent{image.width(), image.height(), image.depth() == 0 ? 1 : image.depth()};
  in.channels = image.channels() == 0 ? 1 : static_cast<int>(image.channels());
  const std::int64_t pixels = in.extent.Pixels();
  if (pixels > limits.max_pixels) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", in.extent.width, "x", in.extent.height, "x", in.extent.depth,
                     " = ", pixels, " pixels exceeds the server limit max_pixels=",
                     limits.max_pixels));
  }
  const std::int64_t expected =
      pixels * in.channels * static_cast<std::int64_t>(PixelSize(in.type));
  const auto got = static_cast<std::int64_t>(data.size());
  if (partial_data ? got > expected : got != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".data: ", data.size(), " bytes, expected width*height*depth*channels*",
        PixelSize(in.type), " = ", expected));
  }
  const v1::Spacing& sp = image.spacing();
  for (const auto& [name, value] : {std::pair<const char*, double>{"x_mm", sp.x_mm()},
                                    {"y_mm", sp.y_mm()},
                                    {"z_mm", sp.z_mm()}}) {
    if (!std::isfinite(value) || value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".spacing.", name, ": ", value, " is not finite and >= 0"));
    }
  }
  in.bytes = data;
  in.field = std::move(field);
  return in;
}

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
      return absl::InvalidArgumentError(absl::StrCat(field, ": is required (ELEMENT_SHAPE_UNSPECIFIED)"));
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": unknown value ", value));
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
    case v1::MORPHOLOGY_OP_UNSPECIFIED:
      return absl::InvalidArgumentError(absl::StrCat(field, ": is required (MORPHOLOGY_OP_UNSPECIFIED)"));
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": unknown value ", value));
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
  return absl::InvalidArgumentError(absl::StrCat(field, ": unknown value ", value));
}

absl::StatusOr<StructuringElement> ValidateElement(const v1::StructuringElement& e,
                                                   const std::string& field,
                                                   const RequestLimits& limits) {
  ElementSpec spec;
  CUIMG_ASSIGN_OR_RETURN(spec.shape, ShapeFromProto(e.shape(), absl::StrCat(field, ".shape")));
  const int max = limits.max_element_extent;
  const char* why = " (max_element_extent)";
  CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".width"), e.width(), 1, max, why));
  CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".height"), e.height(), 1, max, why));
  CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".depth"), e.depth(), 0, max, why));
  spec.width = static_cast<int>(e.width());
  spec.height = static_cast<int>(e.height());
  spec.depth = static_cast<int>(e.depth());
  const int depth = spec.depth == 0 ? 1 : spec.depth;
  if (e.has_anchor_x()) {
    CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".anchor_x"), e.anchor_x(), 0, spec.width - 1));
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
      return absl::InvalidArgumentError(absl::StrCat(field, ".mask: ", e.mask().size(),
                                                     " bytes, expected width*height*depth = ", cells));
    }
    spec.mask.assign(e.mask().begin(), e.mask().end());
  } else if (!e.mask().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".mask: only allowed with ELEMENT_SHAPE_CUSTOM"));
  }
  absl::StatusOr<StructuringElement> se = StructuringElement::Create(spec);
  if (!se.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".", se.status().message()));
  }
  return se;
}

}  // namespace

absl::Status ValidateHandle(absl::string_view handle, absl::string_view field) {
  if (handle.empty() || handle.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must be 1 to 128 characters"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ImageInput> ValidateImageSource(const v1::ImageSource& source,
                                               absl::string_view field,
                                               const RequestLimits& limits,
                                               DetachedPixels pixels) {
  switch (source.source_case()) {
    case v1::ImageSource::kImage:
      return ValidateImage(source.image(), pixels.value_or(source.image().data()),
                           absl::StrCat(field, ".image"), limits, false);
    case v1::ImageSource::kHandle: {
      CUIMG_RETURN_IF_ERROR(ValidateHandle(source.handle(), absl::StrCat(field, ".handle")));
      ImageInput in;
      in.kind = ImageInput::Kind::kHandle;
      in.handle = source.handle();
      in.field = absl::StrCat(field, ".handle");
      return in;
    }
    case v1::ImageSource::kEncoded: {
      if (source.encoded().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".encoded: is empty"));
      }
      ImageInput in;
      in.kind = ImageInput::Kind::kEncoded;
      in.bytes = source.encoded();
      in.field = absl::StrCat(field, ".encoded");
      return in;
    }
    case v1::ImageSource::kSharedMemory: {
      const v1::SharedMemoryImage& shm = source.shared_memory();
      const std::string prefix = absl::StrCat(field, ".shared_memory");
      CUIMG_RETURN_IF_ERROR(ValidateHandle(shm.region(), absl::StrCat(prefix, ".region")));
      if (!shm.has_image()) {
        return absl::InvalidArgumentError(absl::StrCat(prefix, ".image: is required"));
      }
      if (!shm.image().data().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            prefix, ".image.data: must be empty (the pixels are in the region)"));
      }
      // The shape's rules are an inline image's; only the bytes live elsewhere.
      CUIMG_ASSIGN_OR_RETURN(ImageInput in,
                             ValidateImage(shm.image(), "", absl::StrCat(prefix, ".image"), limits,
                                           /*partial_data=*/true));
      in.kind = ImageInput::Kind::kSharedMemory;
      in.handle = shm.region();
      in.offset = shm.offset();
      in.field = prefix;
      return in;
    }
    case v1::ImageSource::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": one of image, handle, encoded or shared_memory is required"));
}

absl::StatusOr<OutputSpec> ValidateOutputOptions(const v1::OutputOptions& output,
                                                 absl::string_view field) {
  if (output.omit_data() && !output.keep_resident()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".omit_data: requires keep_resident (the result would be discarded)"));
  }
  if (output.ttl_seconds() != 0 && !output.keep_resident()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".ttl_seconds: only meaningful with keep_resident"));
  }
  OutputSpec spec{output.keep_resident(), output.omit_data(), output.ttl_seconds(), "", 0};
  if (output.has_shared_memory()) {
    if (output.keep_resident()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".shared_memory: not with keep_resident (the result goes to one place)"));
    }
    CUIMG_RETURN_IF_ERROR(ValidateHandle(output.shared_memory().region(),
                                               absl::StrCat(field, ".shared_memory.region")));
    spec.shared_memory_region = output.shared_memory().region();
    spec.shared_memory_offset = output.shared_memory().offset();
  }
  return spec;
}

namespace {

// Only Morphology writes its result into shared memory.
absl::Status RefuseSharedMemoryOutput(const OutputSpec& output, absl::string_view rpc) {
  if (output.shared_memory_region.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "output.shared_memory: ", rpc, " returns its results inline or resident; only Morphology "
      "writes to shared memory"));
}

}  // namespace

namespace {

// The chain of a Morphology request; `prefix` goes before every field name ("" or
// "header.morphology.").
absl::StatusOr<std::vector<MorphologyStep>> ValidateMorphologySteps(
    const v1::MorphologyRequest& request, absl::string_view prefix, const RequestLimits& limits) {
  if (request.steps().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "steps: at least one step is required"));
  }
  CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(prefix, "steps: count"), request.steps_size(), 1,
                                   limits.max_steps, " (max_steps)"));
  std::vector<MorphologyStep> steps;
  for (int i = 0; i < request.steps_size(); ++i) {
    const v1::MorphologyStep& s = request.steps(i);
    const std::string field = absl::StrCat(prefix, "steps[", i, "]");
    MorphologyStep step;
    CUIMG_ASSIGN_OR_RETURN(step.op, OpFromProto(s.op(), absl::StrCat(field, ".op")));
    CUIMG_ASSIGN_OR_RETURN(step.element,
                           ValidateElement(s.element(), absl::StrCat(field, ".element"), limits));
    CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".iterations"), s.iterations(), 0,
                                     limits.max_iterations, " (max_iterations)"));
    step.iterations = s.iterations() == 0 ? 1 : static_cast<int>(s.iterations());
    CUIMG_ASSIGN_OR_RETURN(step.border,
                           BorderFromProto(s.border_mode(), absl::StrCat(field, ".border_mode")));
    step.border_value = s.border_value();
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace

absl::StatusOr<MorphologyJob> ValidateMorphologyRequest(const v1::MorphologyRequest& request,
                                                        const RequestLimits& limits,
                                                        DetachedPixels pixels) {
  MorphologyJob job;
  CUIMG_ASSIGN_OR_RETURN(job.input,
                         ValidateImageSource(request.input(), "input", limits, pixels));
  CUIMG_ASSIGN_OR_RETURN(job.steps, ValidateMorphologySteps(request, "", limits));
  CUIMG_ASSIGN_OR_RETURN(job.output, ValidateOutputOptions(request.output(), "output"));
  if (job.input.kind == ImageInput::Kind::kInline) {
    CUIMG_RETURN_IF_ERROR(CheckMorphologyInput(
        ImageView{job.input.type, job.input.extent, job.input.channels, nullptr}, job));
  }
  return job;
}

absl::Status CheckMorphologyInput(const ImageView& image, const MorphologyJob& job) {
  if (image.channels != 1) {
    return absl::InvalidArgumentError(absl::StrCat(job.input.field, ": has ", image.channels,
                                                   " channels; Morphology needs 1 (split "
                                                   "channels first)"));
  }
  if (image.type == PixelType::kF32) return absl::OkStatus();
  for (std::size_t i = 0; i < job.steps.size(); ++i) {
    if (!std::isfinite(job.steps[i].border_value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("steps[", i, "].border_value: ", job.steps[i].border_value,
                       " is not finite (allowed only for F32 images)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ImageInput> ValidateUploadHeader(const v1::Image& image,
                                                const RequestLimits& limits) {
  return ValidateImage(image, image.data(), "image", limits, true);
}

}  // namespace cuimg

namespace cuimg {
namespace {

absl::Status CheckDoubleRange(absl::string_view field, double value, double lo_excl, double hi,
                              absl::string_view why = "") {
  if (!std::isfinite(value) || value <= lo_excl || value > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", value, " is not in (", lo_excl, ", ", hi, "]", why));
  }
  return absl::OkStatus();
}

std::array<double, 3> FromVec3(const v1::Vec3& v) { return {v.x(), v.y(), v.z()}; }

absl::Status CheckMeshCounts(const v1::Mesh& mesh, absl::string_view field,
                             const RequestLimits& limits) {
  CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".vertex_count"), mesh.vertex_count(), 1,
                                   limits.max_mesh_vertices, " (max_mesh_vertices)"));
  CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".triangle_count"), mesh.triangle_count(),
                                   0, 2 * limits.max_mesh_vertices, " (2 * max_mesh_vertices)"));
  return absl::OkStatus();
}

// The filter fields of a Gradient request; `prefix` goes before every field name.
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

}  // namespace

absl::StatusOr<GradientJob> ValidateGradientRequest(const v1::GradientRequest& request,
                                                    const RequestLimits& limits,
                                                    DetachedPixels pixels) {
  GradientJob job;
  CUIMG_ASSIGN_OR_RETURN(job.input,
                         ValidateImageSource(request.input(), "input", limits, pixels));
  CUIMG_ASSIGN_OR_RETURN(job.spec, ValidateGradientFields(request, ""));
  CUIMG_ASSIGN_OR_RETURN(job.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_RETURN_IF_ERROR(RefuseSharedMemoryOutput(job.output, "Gradient"));
  if (job.input.kind == ImageInput::Kind::kInline) {
    CUIMG_RETURN_IF_ERROR(CheckGradientInput(
        ImageView{job.input.type, job.input.extent, job.input.channels, nullptr}, job));
  }
  return job;
}

absl::Status CheckGradientInput(const ImageView& image, const GradientJob& job) {
  if (image.channels != 1) {
    return absl::InvalidArgumentError(absl::StrCat(job.input.field, ": has ", image.channels,
                                                   " channels; Gradient needs 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PyramidJob> ValidatePyramidRequest(const v1::PyramidRequest& request,
                                                  const RequestLimits& limits,
                                                  DetachedPixels pixels) {
  PyramidJob job;
  CUIMG_ASSIGN_OR_RETURN(job.input,
                         ValidateImageSource(request.input(), "input", limits, pixels));
  CUIMG_RETURN_IF_ERROR(CheckRange("levels", request.levels(), 0, limits.max_pyramid_levels,
                                   " (max_pyramid_levels)"));
  job.spec.levels = request.levels() == 0 ? kDefaultPyramidLevels : static_cast<int>(request.levels());
  if (request.ratio() != 0) CUIMG_RETURN_IF_ERROR(CheckDoubleRange("ratio", request.ratio(), 1, 16));
  job.spec.ratio = request.ratio() == 0 ? kDefaultPyramidRatio : request.ratio();
  CUIMG_RETURN_IF_ERROR(CheckRange("min_width", request.min_width(), 0, limits.max_side));
  CUIMG_RETURN_IF_ERROR(CheckRange("min_height", request.min_height(), 0, limits.max_side));
  job.spec.min_width = request.min_width() == 0 ? kDefaultPyramidMinSide : static_cast<int>(request.min_width());
  job.spec.min_height = request.min_height() == 0 ? kDefaultPyramidMinSide : static_cast<int>(request.min_height());
  switch (request.mode()) {
    case v1::PYRAMID_MODE_UNSPECIFIED:
    case v1::PYRAMID_MODE_FROM_BASE:
      job.spec.mode = PyramidMode::kFromBase;
      break;
    case v1::PYRAMID_MODE_CASCADED:
      job.spec.mode = PyramidMode::kCascaded;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("mode: unknown value ", request.mode()));
  }
  if (request.output_type() == v1::PIXEL_TYPE_UNSPECIFIED) {
    job.spec.output_type = PixelType::kF32;
  } else {
    CUIMG_ASSIGN_OR_RETURN(job.spec.output_type,
                           PixelTypeFromProto(request.output_type(), "output_type"));
    job.output_input_type = job.spec.output_type != PixelType::kF32;
  }
  CUIMG_ASSIGN_OR_RETURN(job.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_RETURN_IF_ERROR(RefuseSharedMemoryOutput(job.output, "Pyramid"));
  if (job.input.kind == ImageInput::Kind::kInline) {
    CUIMG_RETURN_IF_ERROR(CheckPyramidInput(
        ImageView{job.input.type, job.input.extent, job.input.channels, nullptr}, &job));
  }
  return job;
}

absl::Status CheckPyramidInput(const ImageView& image, PyramidJob* job) {
  if (image.channels != 1) {
    return absl::InvalidArgumentError(absl::StrCat(job->input.field, ": has ", image.channels,
                                                   " channels; Pyramid needs 1"));
  }
  if (image.extent.depth != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(job->input.field, ": is a volume; Pyramid needs a 2D image"));
  }
  if (job->output_input_type && job->spec.output_type != image.type) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output_type: ", PixelTypeName(job->spec.output_type), " is neither F32 nor the input's ",
        PixelTypeName(image.type)));
  }
  return ValidatePyramidSpec(image.type, image.extent, job->spec);
}

absl::StatusOr<DeformJob> ValidateDeformRequest(const v1::DeformRequest& request,
                                                const RequestLimits& limits) {
  DeformJob job;
  switch (request.mesh().source_case()) {
    case v1::MeshSource::kMesh: {
      const v1::Mesh& m = request.mesh().mesh();
      CUIMG_RETURN_IF_ERROR(CheckMeshCounts(m, "mesh.mesh", limits));
      const std::uint64_t pos_bytes = std::uint64_t{m.vertex_count()} * 12;
      const std::uint64_t tri_bytes = std::uint64_t{m.triangle_count()} * 12;
      if (m.positions().size() != pos_bytes) {
        return absl::InvalidArgumentError(absl::StrCat("mesh.mesh.positions: ", m.positions().size(),
                                                       " bytes, expected vertex_count * 12 = ", pos_bytes));
      }
      if (m.triangles().size() != tri_bytes) {
        return absl::InvalidArgumentError(absl::StrCat("mesh.mesh.triangles: ", m.triangles().size(),
                                                       " bytes, expected triangle_count * 12 = ", tri_bytes));
      }
      job.mesh.kind = MeshInput::Kind::kInline;
      job.mesh.view = MeshView{reinterpret_cast<const float*>(m.positions().data()), m.vertex_count(),
                               reinterpret_cast<const std::uint32_t*>(m.triangles().data()),
                               m.triangle_count()};
      CUIMG_RETURN_IF_ERROR(ValidateMesh(job.mesh.view, "mesh.mesh"));
      break;
    }
    case v1::MeshSource::kHandle:
      CUIMG_RETURN_IF_ERROR(ValidateHandle(request.mesh().handle(), "mesh.handle"));
      job.mesh.kind = MeshInput::Kind::kHandle;
      job.mesh.handle = request.mesh().handle();
      break;
    case v1::MeshSource::SOURCE_NOT_SET:
      return absl::InvalidArgumentError("mesh: one of mesh or handle is required");
  }
  if (!request.has_lattice()) return absl::InvalidArgumentError("lattice: is required");
  const v1::Lattice& l = request.lattice();
  job.lattice.origin = FromVec3(l.origin());
  job.lattice.s = FromVec3(l.s());
  job.lattice.t = FromVec3(l.t());
  job.lattice.u = FromVec3(l.u());
  CUIMG_ASSIGN_OR_RETURN(job.lattice.count_s, AsInt("lattice.count_s", l.count_s()));
  CUIMG_ASSIGN_OR_RETURN(job.lattice.count_t, AsInt("lattice.count_t", l.count_t()));
  CUIMG_ASSIGN_OR_RETURN(job.lattice.count_u, AsInt("lattice.count_u", l.count_u()));
  job.lattice.displacements.assign(l.displacements().begin(), l.displacements().end());
  // The lattice's rules (finite axes spanning a volume, counts, displacements) are the kernel's.
  CUIMG_RETURN_IF_ERROR(ValidateLattice(job.lattice, "lattice"));
  switch (request.outputs()) {
    case v1::DEFORM_OUTPUTS_UNSPECIFIED:
    case v1::DEFORM_OUTPUTS_POSITIONS_AND_NORMALS:
      job.outputs = DeformOutputs::kPositionsAndNormals;
      break;
    case v1::DEFORM_OUTPUTS_POSITIONS:
      job.outputs = DeformOutputs::kPositions;
      break;
    case v1::DEFORM_OUTPUTS_NORMALS:
      job.outputs = DeformOutputs::kNormals;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("outputs: unknown value ", request.outputs()));
  }
  CUIMG_ASSIGN_OR_RETURN(job.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_RETURN_IF_ERROR(RefuseSharedMemoryOutput(job.output, "Deform"));
  return job;
}

absl::Status ValidateUploadMeshHeader(const v1::Mesh& mesh, const RequestLimits& limits) {
  CUIMG_RETURN_IF_ERROR(CheckMeshCounts(mesh, "mesh", limits));
  if (mesh.positions().size() > std::uint64_t{mesh.vertex_count()} * 12) {
    return absl::InvalidArgumentError("mesh.positions: more bytes than vertex_count * 12");
  }
  if (!mesh.triangles().empty() && mesh.positions().size() != std::uint64_t{mesh.vertex_count()} * 12) {
    return absl::InvalidArgumentError(
        "mesh.triangles: sent before all positions (positions come first)");
  }
  if (mesh.triangles().size() > std::uint64_t{mesh.triangle_count()} * 12) {
    return absl::InvalidArgumentError("mesh.triangles: more bytes than triangle_count * 12");
  }
  return absl::OkStatus();
}

absl::StatusOr<DetectJob> ValidateDetectRequest(const v1::DetectPedestriansRequest& request,
                                                const RequestLimits& limits,
                                                const ModelRegistry& models,
                                                DetachedPixels pixels) {
  DetectJob job;
  const std::string name = request.model().empty() ? kDefaultDetectorModel : request.model();
  job.model = models.Find(name);
  if (job.model == nullptr) {
    return absl::NotFoundError(absl::StrCat("model: ", QuoteClientValue(name),
                                            " is not loaded (loaded: ", models.Names(), ")"));
  }
  CUIMG_ASSIGN_OR_RETURN(job.input,
                         ValidateImageSource(request.input(), "input", limits, pixels));
  // Defaults here; the ranges are the kernel's (ValidateDetectSpec), checked once below.
  DetectSpec& spec = job.spec;
  spec.hit_threshold = request.hit_threshold();
  if (request.win_stride() != 0) {
    CUIMG_ASSIGN_OR_RETURN(spec.win_stride, AsInt("win_stride", request.win_stride()));
  }
  CUIMG_ASSIGN_OR_RETURN(spec.padding, AsInt("padding", request.padding()));
  if (request.scale() != 0) spec.scale = request.scale();
  // The server's cap on levels is this server's rule, not the kernel's.
  CUIMG_RETURN_IF_ERROR(CheckRange("max_levels", request.max_levels(), 0, limits.max_pyramid_levels,
                                   " (max_pyramid_levels)"));
  spec.max_levels = request.max_levels() != 0 ? static_cast<int>(request.max_levels())
                                              : std::min(64, limits.max_pyramid_levels);
  spec.gamma_correction = request.has_gamma_correction() ? request.gamma_correction()
                                                         : job.model->gamma_correction;
  switch (request.grouping()) {
    case v1::GROUPING_UNSPECIFIED:
    case v1::GROUPING_GROUP_RECTANGLES:
      spec.grouping = DetectGrouping::kGroupRectangles;
      break;
    case v1::GROUPING_NONE:
      spec.grouping = DetectGrouping::kNone;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("grouping: unknown value ", request.grouping()));
  }
  if (request.has_group_threshold()) {
    CUIMG_ASSIGN_OR_RETURN(spec.group_threshold,
                           AsInt("group_threshold", request.group_threshold()));
  }
  if (request.group_eps() != 0) spec.group_eps = request.group_eps();
  CUIMG_RETURN_IF_ERROR(ValidateDetectSpec(spec));
  if (job.input.kind == ImageInput::Kind::kInline) {
    CUIMG_RETURN_IF_ERROR(CheckDetectInput(
        ImageView{job.input.type, job.input.extent, job.input.channels, nullptr}, job));
  }
  return job;
}

absl::Status CheckDetectInput(const ImageView& image, const DetectJob& job) {
  if (image.type != PixelType::kU8) {
    return absl::InvalidArgumentError(absl::StrCat(job.input.field, ": is ",
                                                   PixelTypeName(image.type),
                                                   "; DetectPedestrians needs U8"));
  }
  if (image.channels != 1 && image.channels != 3 && image.channels != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat(job.input.field, ": has ", image.channels,
                     " channels; DetectPedestrians needs 1 (gray), 3 (BGR) or 4 (BGRA)"));
  }
  if (image.extent.depth != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(job.input.field, ": is a volume; DetectPedestrians needs a 2D image"));
  }
  return absl::OkStatus();
}

absl::StatusOr<VolumeStreamJob> ValidateVolumeStreamHeader(const v1::VolumeStreamHeader& header,
                                                           const RequestLimits& limits) {
  if (!header.has_volume()) {
    return absl::InvalidArgumentError("header.volume: is required (the volume's type and size)");
  }
  CUIMG_ASSIGN_OR_RETURN(ImageInput volume,
                         ValidateImage(header.volume(), header.volume().data(), "header.volume",
                                       limits, true));
  if (!header.volume().data().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("header.volume.data: must be empty (pixels arrive in slab messages), got ",
                     header.volume().data().size(), " bytes"));
  }
  if (volume.channels != 1) {
    return absl::InvalidArgumentError(absl::StrCat("header.volume.channels: ", volume.channels,
                                                   "; streamed volumes need 1"));
  }
  VolumeStreamJob job;
  job.type = volume.type;
  job.extent = volume.extent;
  job.spacing = header.volume().spacing();
  switch (header.operation_case()) {
    case v1::VolumeStreamHeader::kMorphology: {
      const v1::MorphologyRequest& m = header.morphology();
      if (m.has_input()) {
        return absl::InvalidArgumentError(
            "header.morphology.input: must be unset (the pixels arrive in slab messages)");
      }
      if (m.has_output()) {
        return absl::InvalidArgumentError(
            "header.morphology.output: must be unset (results stream back; nothing is kept)");
      }
      job.op = VolumeStreamJob::Op::kMorphology;
      CUIMG_ASSIGN_OR_RETURN(job.steps, ValidateMorphologySteps(m, "header.morphology.", limits));
      if (job.type != PixelType::kF32) {
        for (std::size_t i = 0; i < job.steps.size(); ++i) {
          if (!std::isfinite(job.steps[i].border_value)) {
            return absl::InvalidArgumentError(absl::StrCat(
                "header.morphology.steps[", i, "].border_value: ", job.steps[i].border_value,
                " is not finite (allowed only for F32 volumes)"));
          }
        }
      }
      return job;
    }
    case v1::VolumeStreamHeader::kGradient: {
      const v1::GradientRequest& g = header.gradient();
      if (g.has_input()) {
        return absl::InvalidArgumentError(
            "header.gradient.input: must be unset (the pixels arrive in slab messages)");
      }
      if (g.has_output()) {
        return absl::InvalidArgumentError(
            "header.gradient.output: must be unset (results stream back; nothing is kept)");
      }
      job.op = VolumeStreamJob::Op::kGradient;
      CUIMG_ASSIGN_OR_RETURN(job.gradient, ValidateGradientFields(g, "header.gradient."));
      return job;
    }
    case v1::VolumeStreamHeader::OPERATION_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("header.operation: one of morphology or gradient is required");
}

}  // namespace cuimg
