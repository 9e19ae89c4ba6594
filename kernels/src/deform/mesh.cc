// Validation and lattice geometry of kernels/include/cuimg/kernels/mesh.h.
#include "cuimg/kernels/mesh.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

double Norm(const std::array<double, 3>& v) {
  return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

std::array<double, 3> Cross(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

double Dot(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

constexpr const char* kAxisNames[3] = {"x", "y", "z"};

absl::Status CheckFiniteVec(const std::array<double, 3>& v, absl::string_view field,
                            absl::string_view name) {
  for (int i = 0; i < 3; ++i) {
    if (!std::isfinite(v[i])) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange,
                               absl::StrCat(field, ".", name, ".", kAxisNames[i]),
                               absl::StrCat("must be finite, got ", v[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckCount(int count, absl::string_view field, absl::string_view name) {
  if (count < kMinLatticeCount || count > kMaxLatticeCount) {
    return InvalidFieldError(
        ErrorReason::kValueOutOfRange, absl::StrCat(field, ".", name),
        absl::StrCat("must be in [", kMinLatticeCount, ", ", kMaxLatticeCount, "], got ", count));
  }
  return absl::OkStatus();
}

}  // namespace

Lattice Lattice::Identity(std::array<double, 3> origin, std::array<double, 3> s,
                          std::array<double, 3> t, std::array<double, 3> u, int count_s,
                          int count_t, int count_u) {
  Lattice lattice;
  lattice.origin = origin;
  lattice.s = s;
  lattice.t = t;
  lattice.u = u;
  lattice.count_s = count_s;
  lattice.count_t = count_t;
  lattice.count_u = count_u;
  const int n = count_s * count_t * count_u;
  lattice.displacements.assign(n > 0 ? 3 * static_cast<std::size_t>(n) : 0, 0.0);
  return lattice;
}

absl::Status ValidateMesh(const MeshView& mesh, absl::string_view field) {
  if (mesh.vertex_count > kMaxMeshVertices) {
    return InvalidFieldError(
        ErrorReason::kLimitExceeded, absl::StrCat(field, ".vertex_count"),
        absl::StrCat("must be <= ", kMaxMeshVertices, ", got ", mesh.vertex_count));
  }
  if (mesh.triangle_count > kMaxMeshTriangles) {
    return InvalidFieldError(
        ErrorReason::kLimitExceeded, absl::StrCat(field, ".triangle_count"),
        absl::StrCat("must be <= ", kMaxMeshTriangles, ", got ", mesh.triangle_count));
  }
  const std::size_t floats = mesh.vertex_count * 3;
  for (std::size_t i = 0; i < floats; ++i) {
    if (!std::isfinite(mesh.positions[i])) {
      // positions and triangles are bytes fields on the wire: the index is the message's.
      return InvalidFieldError(ErrorReason::kValueOutOfRange, absl::StrCat(field, ".positions"),
                               absl::StrCat("float ", i, " (vertex ", i / 3,
                                            ") must be finite, got ", mesh.positions[i]));
    }
  }
  const std::size_t indices = mesh.triangle_count * 3;
  for (std::size_t i = 0; i < indices; ++i) {
    if (mesh.triangles[i] >= mesh.vertex_count) {
      return InvalidFieldError(
          ErrorReason::kValueOutOfRange, absl::StrCat(field, ".triangles"),
          absl::StrCat("index ", i, " (triangle ", i / 3, ") is ", mesh.triangles[i],
                       ", out of range: vertex_count is ", mesh.vertex_count));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMesh(const Mesh& mesh, absl::string_view field) {
  if (mesh.positions.size() % 3 != 0) {
    return InvalidFieldError(
        ErrorReason::kDataSizeMismatch, absl::StrCat(field, ".positions"),
        absl::StrCat("must hold 3 floats per vertex, got ", mesh.positions.size()));
  }
  if (mesh.triangles.size() % 3 != 0) {
    return InvalidFieldError(
        ErrorReason::kDataSizeMismatch, absl::StrCat(field, ".triangles"),
        absl::StrCat("must hold 3 indices per triangle, got ", mesh.triangles.size()));
  }
  return ValidateMesh(mesh.view(), field);
}

double LatticeDeterminant(const Lattice& lattice) {
  return Dot(lattice.s, Cross(lattice.t, lattice.u));
}

std::array<double, 9> LatticeInverse(const Lattice& lattice) {
  const double det = LatticeDeterminant(lattice);
  const std::array<double, 3> r0 = Cross(lattice.t, lattice.u);
  const std::array<double, 3> r1 = Cross(lattice.u, lattice.s);
  const std::array<double, 3> r2 = Cross(lattice.s, lattice.t);
  return {r0[0] / det, r0[1] / det, r0[2] / det, r1[0] / det, r1[1] / det,
          r1[2] / det, r2[0] / det, r2[1] / det, r2[2] / det};
}

absl::Status ValidateLattice(const Lattice& lattice, absl::string_view field) {
  if (absl::Status s = CheckFiniteVec(lattice.origin, field, "origin"); !s.ok()) return s;
  if (absl::Status s = CheckFiniteVec(lattice.s, field, "s"); !s.ok()) return s;
  if (absl::Status s = CheckFiniteVec(lattice.t, field, "t"); !s.ok()) return s;
  if (absl::Status s = CheckFiniteVec(lattice.u, field, "u"); !s.ok()) return s;
  const double scale = Norm(lattice.s) * Norm(lattice.t) * Norm(lattice.u);
  const double det = LatticeDeterminant(lattice);
  // Written so that a zero axis (scale 0) and overflow (inf / inf) fail too.
  if (!(std::isfinite(scale) && std::fabs(det) > kMinLatticeSineVolume * scale)) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, field,
                             absl::StrCat("s, t and u must span a volume: |det[S T U]| = ",
                                          std::fabs(det), " must exceed ", kMinLatticeSineVolume,
                                          " * |S||T||U| = ", kMinLatticeSineVolume * scale));
  }
  if (absl::Status s = CheckCount(lattice.count_s, field, "count_s"); !s.ok()) return s;
  if (absl::Status s = CheckCount(lattice.count_t, field, "count_t"); !s.ok()) return s;
  if (absl::Status s = CheckCount(lattice.count_u, field, "count_u"); !s.ok()) return s;
  const std::size_t want = 3 * lattice.ControlPointCount();
  if (lattice.displacements.size() != want) {
    return InvalidFieldError(ErrorReason::kDataSizeMismatch, absl::StrCat(field, ".displacements"),
                             absl::StrCat("must hold 3 * count_s * count_t * count_u = ", want,
                                          " values, got ", lattice.displacements.size()));
  }
  for (std::size_t i = 0; i < want; ++i) {
    if (!std::isfinite(lattice.displacements[i])) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange,
                               absl::StrCat(field, ".displacements[", i, "]"),
                               absl::StrCat("must be finite, got ", lattice.displacements[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace cuimg
