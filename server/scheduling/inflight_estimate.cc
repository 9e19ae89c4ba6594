#include "server/scheduling/inflight_estimate.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/dicom_frame.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/reference/morphology_reference.h"
#include "cuimg/reference/reconstruction_reference.h"
#include "server/validation/encoded_input.h"

namespace cuimg {
namespace {

std::uint64_t Bytes(const ImageView& shape) { return shape.Bytes(); }

// Pixels that are not the request's own bytes: a decoded file, or a copy the backend makes. DICOM
// frames decode into the image, each through a frame of stored values on the thread decoding it
// (at most kFrameDecodeThreads at once).
std::uint64_t DecodedBytes(const ImageInput& input, const ImageView& shape) {
  switch (input.kind) {
    case ImageInput::Kind::kEncoded:
      return Bytes(shape);
    case ImageInput::Kind::kFrames: {
      const std::uint64_t frames = std::min<std::uint64_t>(
          static_cast<std::uint64_t>(shape.extent.depth), kFrameDecodeThreads);
      return Bytes(shape) + frames * DecodedFrameBytes(input.frames->description);
    }
    default:
      return 0;
  }
}

}  // namespace

absl::StatusOr<ImageView> InputShape(const ImageInput& input, absl::string_view identity,
                                     ResidentStore& store, const RequestLimits& limits) {
  switch (input.kind) {
    case ImageInput::Kind::kInline:
    case ImageInput::Kind::kSharedMemory:
    case ImageInput::Kind::kFrames:  // the decoded image's, from the pixel module
      return ImageView{input.type, input.extent, input.channels, nullptr};
    case ImageInput::Kind::kHandle: {
      absl::StatusOr<ResidentInfo> info = store.Describe(identity, input.handle);
      if (!info.ok()) return AtField(info.status(), input.field);
      if (info->kind != ResidentKind::kImage) {
        return InvalidFieldError(ErrorReason::kObjectKindMismatch, input.field,
                                 "names a mesh, not an image");
      }
      return ImageView{info->type, info->extent, info->channels, nullptr};
    }
    case ImageInput::Kind::kEncoded:
      break;
  }
  const auto* data = reinterpret_cast<const std::uint8_t*>(input.bytes.data());
  absl::StatusOr<ImageView> shape = ProbeImage(absl::MakeConstSpan(data, input.bytes.size()));
  if (!shape.ok()) {
    // As a failed decode (image_input.cc): the file is the caller's input.
    return WithCode(
        AtField(WithDefaultReason(shape.status(), ErrorReason::kCorruptEncodedData), input.field),
        absl::StatusCode::kInvalidArgument);
  }
  CUIMG_RETURN_IF_ERROR(CheckEncodedShape(*shape, input.field, limits));
  return shape;
}

// Request + decoded input + the result (none in a shared-memory region; a resident one is
// copied into the response unless omitted) + the CPU reference's buffers between passes. The
// backends read the input where it lies and write the result in place; inline pixels are
// counted by the caller (detached from the message, whose bytes are freed once parsed).
absl::StatusOr<std::uint64_t> EstimateInflightBytes(const MorphologyJob& job,
                                                    const v1::MorphologyRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, store, limits));
  const OutputSpec& out = job.output;
  // An encoded result is held twice: its pixels and its frames (at most as large, lossless).
  const std::uint64_t results = !out.shared_memory_region.empty()            ? 0
                                : out.keep_resident && !out.omit_data        ? 2
                                : out.frame_encoding != FrameSyntax::kNative ? 2
                                                                             : 1;
  const std::uint64_t scratch = MorphologyReferenceScratchImages(job.steps);
  // An encoded marker is decoded (inline ones are in the request's bytes).
  std::uint64_t marker = 0;
  if (job.marker.has_value() && job.marker->kind == ImageInput::Kind::kEncoded) {
    CUIMG_ASSIGN_OR_RETURN(ImageView shape, InputShape(*job.marker, identity, store, limits));
    marker = Bytes(shape);
  }
  return request.ByteSizeLong() + DecodedBytes(job.input, in) + marker +
         (results + scratch) * Bytes(in) + SegmentationScratchBytes(job.steps, in.extent);
}

std::uint64_t WholeVolumeStageBytes(PixelType type, const Extent& extent,
                                    const std::vector<MorphologyStep>& steps) {
  const std::uint64_t volume = static_cast<std::uint64_t>(extent.Pixels()) * PixelSize(type);
  return volume * (2 + static_cast<std::uint64_t>(MorphologyReferenceScratchImages(steps))) +
         SegmentationScratchBytes(steps, extent);
}

std::uint64_t SegmentationScratchBytes(const std::vector<MorphologyStep>& steps,
                                       const Extent& extent) {
  std::uint64_t most = 0;
  for (const MorphologyStep& step : steps) {
    if (step.op == MorphOp::kRemoveSmall || step.op == MorphOp::kKeepLargest) {
      // The labelling reference's mask byte, union-find root and count per pixel (9; 12 counted).
      most = std::max<std::uint64_t>(most, 12 * static_cast<std::uint64_t>(extent.Pixels()));
    } else if (IsGlobalStep(step)) {
      most = std::max<std::uint64_t>(
          most, static_cast<std::uint64_t>(ReconstructionReferenceQueueBytes(extent)));
    }
  }
  return most;
}

absl::StatusOr<std::uint64_t> EstimateInflightBytes(const LabelJob& job,
                                                    const v1::LabelRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, store, limits));
  std::uint64_t intensity = 0;
  if (job.intensity.has_value() && job.intensity->kind == ImageInput::Kind::kEncoded) {
    CUIMG_ASSIGN_OR_RETURN(ImageView shape, InputShape(*job.intensity, identity, store, limits));
    intensity = Bytes(shape);
  }
  const std::uint64_t pixels = static_cast<std::uint64_t>(in.extent.Pixels());
  const std::uint64_t labels = job.output.keep_resident && !job.output.omit_data ? 2 : 1;
  // Labelling's own buffers: the CPU reference's mask byte, union-find root and count per pixel
  // (9 bytes; 12 counted, on the high side as every estimate here).
  return request.ByteSizeLong() + DecodedBytes(job.input, in) + intensity +
         pixels * (4 * labels + 12);
}

std::uint64_t LabelRegionBytes(std::size_t regions, bool intensity) {
  // RegionStats (112 bytes), then per region 8 + 2 x 12 + 2 x 24 (+ 32 with intensity) bytes of
  // columns, once in the message and once serialized.
  const std::uint64_t columns = 8 + 2 * 12 + 2 * 24 + (intensity ? 32 : 0);
  return static_cast<std::uint64_t>(regions) * (sizeof(RegionStats) + 2 * columns);
}

absl::StatusOr<std::uint64_t> EstimateInflightBytes(const GradientJob& job,
                                                    const v1::GradientRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, store, limits));
  const std::uint64_t planes = 2 + job.spec.magnitude + job.spec.angle;
  const std::uint64_t plane = static_cast<std::uint64_t>(in.extent.Pixels()) * sizeof(float);
  // Each plane exists in the backend and in the response.
  return request.ByteSizeLong() + 2 * DecodedBytes(job.input, in) + 2 * planes * plane;
}

absl::StatusOr<std::uint64_t> EstimateInflightBytes(const PyramidJob& job,
                                                    const v1::PyramidRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, store, limits));
  std::uint64_t levels = 0;
  // A plan that fails here fails the request when it runs, before any level is allocated.
  if (absl::StatusOr<std::vector<PyramidLevel>> plan =
          PlanPyramidLevels(in.type, in.extent, job.spec);
      plan.ok()) {
    levels = PyramidOutputBytes(*plan);
  }
  // Levels: the backend's, the packed buffer, the response's.
  return request.ByteSizeLong() + 2 * DecodedBytes(job.input, in) + 3 * levels;
}

absl::StatusOr<std::uint64_t> EstimateInflightBytes(const DetectJob& job,
                                                    const v1::DetectPedestriansRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, store, limits));
  // Levels are worked one at a time: the resized level plus per-pixel gradient votes (bins and
  // magnitudes, 32 bytes a pixel at most) and block histograms, largest at level 0.
  const std::uint64_t pixels = static_cast<std::uint64_t>(in.extent.Pixels());
  return request.ByteSizeLong() + DecodedBytes(job.input, in) + pixels * (in.channels + 32);
}

absl::StatusOr<std::uint64_t> EstimateInflightBytes(const DeformJob& job,
                                                    const v1::DeformRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store, const RequestLimits&) {
  std::uint64_t vertices = job.mesh.view.vertex_count;
  std::uint64_t triangles = job.mesh.view.triangle_count;
  if (job.mesh.kind == MeshInput::Kind::kHandle) {
    absl::StatusOr<ResidentInfo> info = store.Describe(identity, job.mesh.handle);
    if (!info.ok()) return AtField(info.status(), "mesh.handle");
    vertices = info->vertex_count;
    triangles = info->triangle_count;
  }
  // Positions and normals (float32 in the response, float64 in the CPU reference), the mesh
  // copy with its vertex->face adjacency.
  const std::uint64_t per_vertex = 2 * 12 + 2 * 24 + 12 + 4;
  const std::uint64_t per_triangle = 12 + 3 * 4;
  return request.ByteSizeLong() + vertices * per_vertex + triangles * per_triangle;
}

bool UsesResident(const ImageInput& input, const OutputSpec& output) {
  return input.kind == ImageInput::Kind::kHandle || output.keep_resident;
}
bool UsesResident(const MorphologyJob& job) {
  return UsesResident(job.input, job.output) ||
         (job.marker.has_value() && job.marker->kind == ImageInput::Kind::kHandle);
}
bool UsesResident(const GradientJob& job) { return UsesResident(job.input, job.output); }
bool UsesResident(const LabelJob& job) {
  return UsesResident(job.input, job.output) ||
         (job.intensity.has_value() && job.intensity->kind == ImageInput::Kind::kHandle);
}
bool UsesResident(const PyramidJob& job) { return UsesResident(job.input, job.output); }
bool UsesResident(const DetectJob& job) { return job.input.kind == ImageInput::Kind::kHandle; }
bool UsesResident(const DeformJob& job) {
  return job.mesh.kind == MeshInput::Kind::kHandle || job.output.keep_resident;
}

}  // namespace cuimg
