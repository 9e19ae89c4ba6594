#include "server/scheduling/inflight_estimate.h"

#include "absl/strings/str_cat.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/reference/morphology_reference.h"
#include "server/validation/encoded_input.h"

namespace cuimg {
namespace {

std::uint64_t Bytes(const ImageView& shape) { return shape.Bytes(); }

// Pixels that are not the request's own bytes: a decoded file, or a copy the backend makes.
std::uint64_t DecodedBytes(const ImageInput& input, const ImageView& shape) {
  return input.kind == ImageInput::Kind::kEncoded ? Bytes(shape) : 0;
}

}  // namespace

absl::StatusOr<ImageView> InputShape(const ImageInput& input, absl::string_view identity,
                                     ResidentStore& store, const RequestLimits& limits) {
  switch (input.kind) {
    case ImageInput::Kind::kInline:
    case ImageInput::Kind::kSharedMemory:
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
  const std::uint64_t results = !out.shared_memory_region.empty()     ? 0
                                : out.keep_resident && !out.omit_data ? 2
                                                                      : 1;
  const std::uint64_t scratch = MorphologyReferenceScratchImages(job.steps);
  return request.ByteSizeLong() + DecodedBytes(job.input, in) + (results + scratch) * Bytes(in);
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
bool UsesResident(const MorphologyJob& job) { return UsesResident(job.input, job.output); }
bool UsesResident(const GradientJob& job) { return UsesResident(job.input, job.output); }
bool UsesResident(const PyramidJob& job) { return UsesResident(job.input, job.output); }
bool UsesResident(const DetectJob& job) { return job.input.kind == ImageInput::Kind::kHandle; }
bool UsesResident(const DeformJob& job) {
  return job.mesh.kind == MeshInput::Kind::kHandle || job.output.keep_resident;
}

}  // namespace cuimg
