// Deform requests and the mesh header of an Upload.
#include <array>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/validation/request_validation.h"
#include "server/validation/validation_rules.h"

namespace cuimg {
namespace {

std::array<double, 3> FromVec3(const v1::Vec3& v) { return {v.x(), v.y(), v.z()}; }

absl::Status CheckMeshCounts(const v1::Mesh& mesh, absl::string_view field,
                             const RequestLimits& limits) {
  CUIMG_RETURN_IF_ERROR(CheckLimit(absl::StrCat(field, ".vertex_count"), mesh.vertex_count(), 1,
                                   limits.max_mesh_vertices, "max_mesh_vertices"));
  CUIMG_RETURN_IF_ERROR(CheckLimit(absl::StrCat(field, ".triangle_count"), mesh.triangle_count(), 0,
                                   2 * limits.max_mesh_vertices, "2 * max_mesh_vertices"));
  return absl::OkStatus();
}

}  // namespace

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
        return InvalidFieldError(
            ErrorReason::kDataSizeMismatch, "mesh.mesh.positions",
            absl::StrCat(m.positions().size(), " bytes, expected vertex_count * 12 = ", pos_bytes));
      }
      if (m.triangles().size() != tri_bytes) {
        return InvalidFieldError(
            ErrorReason::kDataSizeMismatch, "mesh.mesh.triangles",
            absl::StrCat(m.triangles().size(),
                         " bytes, expected triangle_count * 12 = ", tri_bytes));
      }
      job.mesh.kind = MeshInput::Kind::kInline;
      job.mesh.view = MeshView{
          reinterpret_cast<const float*>(m.positions().data()), m.vertex_count(),
          reinterpret_cast<const std::uint32_t*>(m.triangles().data()), m.triangle_count()};
      CUIMG_RETURN_IF_ERROR(ValidateMesh(job.mesh.view, "mesh.mesh"));
      break;
    }
    case v1::MeshSource::kHandle:
      CUIMG_RETURN_IF_ERROR(ValidateHandle(request.mesh().handle(), "mesh.handle"));
      job.mesh.kind = MeshInput::Kind::kHandle;
      job.mesh.handle = request.mesh().handle();
      break;
    case v1::MeshSource::SOURCE_NOT_SET:
      return InvalidFieldError(ErrorReason::kFieldRequired, "mesh.source",
                               "one of mesh or handle is required");
  }
  if (!request.has_lattice()) {
    return InvalidFieldError(ErrorReason::kFieldRequired, "lattice", "is required");
  }
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
      return InvalidFieldError(ErrorReason::kUnknownEnumValue, "outputs",
                               absl::StrCat("unknown value ", request.outputs()));
  }
  CUIMG_ASSIGN_OR_RETURN(job.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_RETURN_IF_ERROR(RefuseSharedMemoryOutput(job.output, "Deform"));
  CUIMG_RETURN_IF_ERROR(RefuseFrameEncoding(job.output, "Deform"));
  return job;
}

absl::Status ValidateUploadMeshHeader(const v1::Mesh& mesh, const RequestLimits& limits) {
  CUIMG_RETURN_IF_ERROR(CheckMeshCounts(mesh, "mesh", limits));
  if (mesh.positions().size() > std::uint64_t{mesh.vertex_count()} * 12) {
    return InvalidFieldError(ErrorReason::kDataSizeMismatch, "mesh.positions",
                             "more bytes than vertex_count * 12");
  }
  if (!mesh.triangles().empty() &&
      mesh.positions().size() != std::uint64_t{mesh.vertex_count()} * 12) {
    return InvalidFieldError(ErrorReason::kMessageOutOfOrder, "mesh.triangles",
                             "sent before all positions (positions come first)");
  }
  if (mesh.triangles().size() > std::uint64_t{mesh.triangle_count()} * 12) {
    return InvalidFieldError(ErrorReason::kDataSizeMismatch, "mesh.triangles",
                             "more bytes than triangle_count * 12");
  }
  return absl::OkStatus();
}

}  // namespace cuimg
