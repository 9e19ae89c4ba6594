// Triangle meshes and free-form-deformation lattices on the host: the domain types of Deform, their
// validation (INVALID_ARGUMENT naming the field), and the vertex->face adjacency (CSR) that smooth
// normals gather over. Plain C++, no CUDA: shared by the CPU reference, the GPU upload and the
// server's request validation.
#ifndef CUIMG_KERNELS_MESH_H_
#define CUIMG_KERNELS_MESH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cuimg {

// A non-owning view of a triangle mesh in host memory (4-byte aligned).
// positions: vertex_count * 3 floats (x, y, z per vertex).
// triangles: triangle_count * 3 vertex indices; counter-clockwise seen from outside = outward.
struct MeshView {
  const float* positions = nullptr;
  std::size_t vertex_count = 0;
  const std::uint32_t* triangles = nullptr;
  std::size_t triangle_count = 0;
};

// An owning host mesh, laid out as the API sends it (packed float32 xyz, uint32 index triples).
struct Mesh {
  std::vector<float> positions;
  std::vector<std::uint32_t> triangles;

  std::size_t vertex_count() const { return positions.size() / 3; }
  std::size_t triangle_count() const { return triangles.size() / 3; }
  MeshView view() const {
    return MeshView{positions.data(), vertex_count(), triangles.data(), triangle_count()};
  }
};

// Most vertices and triangles a mesh may have here: vertex indices and CSR entries (3 per
// triangle) are uint32. The server's own limits (max_mesh_vertices) are far lower.
inline constexpr std::size_t kMaxMeshVertices = std::size_t{1} << 31;
inline constexpr std::size_t kMaxMeshTriangles = (std::size_t{1} << 32) / 3 - 1;

// Control points per lattice axis: 2..9 (Bernstein degrees 1..8).
inline constexpr int kMinLatticeCount = 2;
inline constexpr int kMaxLatticeCount = 9;
// |det[S T U]| / (|S| |T| |U|) must exceed this (1 for orthogonal axes, 0 for flat ones).
inline constexpr double kMinLatticeSineVolume = 1e-9;
// A vertex is inside the lattice when each local coordinate lies in [-tol, 1 + tol]: the lattice's
// faces belong to it, and the tolerance absorbs the float64 rounding of the local coordinates
// (so a vertex computed to lie on a face stays inside). CPU reference and GPU use the same rule.
inline constexpr double kLatticeInsideTolerance = 1e-12;

// A Sederberg-Parry lattice: the parallelepiped origin + s*S + t*T + u*U, (s, t, u) in [0, 1]^3,
// with count_s x count_t x count_u control points. The rest control point (i, j, k) is
// origin + (i / (count_s - 1)) S + (j / (count_t - 1)) T + (k / (count_u - 1)) U; displacements
// move it: 3 values per point at ((i * count_t + j) * count_u + k) * 3 + axis. All zero = identity.
struct Lattice {
  std::array<double, 3> origin{0, 0, 0};
  std::array<double, 3> s{1, 0, 0};
  std::array<double, 3> t{0, 1, 0};
  std::array<double, 3> u{0, 0, 1};
  int count_s = 2;
  int count_t = 2;
  int count_u = 2;
  std::vector<double> displacements;

  std::size_t ControlPointCount() const {
    return static_cast<std::size_t>(count_s) * count_t * count_u;
  }
  // Index of control point (i, j, k) in displacements / 3.
  std::size_t ControlPointIndex(int i, int j, int k) const {
    return (static_cast<std::size_t>(i) * count_t + j) * count_u + k;
  }
  // A lattice of the given counts with all displacements zero (the identity deformation).
  static Lattice Identity(std::array<double, 3> origin, std::array<double, 3> s,
                          std::array<double, 3> t, std::array<double, 3> u, int count_s,
                          int count_t, int count_u);
};

// OK, or INVALID_ARGUMENT naming the offending field under `field` ("mesh.positions[7] is not
// finite", "mesh.triangles[12] = 40 is out of range: vertex_count is 30"): sizes within the
// limits above, every coordinate finite, every index < vertex_count. Empty meshes are valid here
// (the server bounds the counts).
absl::Status ValidateMesh(const MeshView& mesh, absl::string_view field = "mesh");
// Also checks that the vectors hold whole vertices and triangles (sizes divisible by 3).
absl::Status ValidateMesh(const Mesh& mesh, absl::string_view field = "mesh");

// OK, or INVALID_ARGUMENT naming the field under `field` ("lattice.count_t must be in [2, 9], got
// 1"): finite origin and axes, |det[S T U]| > 1e-9 |S||T||U|, counts in [2, 9], displacements of
// length 3 * count_s * count_t * count_u, all finite.
absl::Status ValidateLattice(const Lattice& lattice, absl::string_view field = "lattice");

// det[S T U] = S . (T x U).
double LatticeDeterminant(const Lattice& lattice);

// The rows of [S T U]^-1 (S, T, U as columns), row-major: (s, t, u) = inverse * (X - origin).
// Row 0 = (T x U) / det, row 1 = (U x S) / det, row 2 = (S x T) / det. Requires det != 0.
std::array<double, 9> LatticeInverse(const Lattice& lattice);

// Which arrays a Deform computes (the API's DeformOutputs without the UNSPECIFIED value).
enum class DeformOutputs { kPositionsAndNormals, kPositions, kNormals };

inline bool WantsPositions(DeformOutputs outputs) { return outputs != DeformOutputs::kNormals; }
inline bool WantsNormals(DeformOutputs outputs) { return outputs != DeformOutputs::kPositions; }

// A deformed mesh as the API returns it: float32 xyz per vertex; an array not asked for is empty.
struct DeformedMesh {
  std::vector<float> positions;
  std::vector<float> normals;
};

// Vertex -> face adjacency in CSR form: the faces touching vertex v are
// faces[offsets[v] .. offsets[v + 1]), in ascending face index. A face that holds v at several
// corners (a degenerate face with a repeated index) is listed once per corner; its cross product
// is exactly zero, so normals do not change. offsets has vertex_count + 1 entries, faces
// 3 * triangle_count. Deterministic (a counting sort).
struct VertexFaceAdjacency {
  std::vector<std::uint32_t> offsets;
  std::vector<std::uint32_t> faces;
};

// INVALID_ARGUMENT (naming mesh.triangles[i]) when an index is >= vertex_count or the sizes
// exceed the limits above. Positions are not read.
absl::StatusOr<VertexFaceAdjacency> BuildVertexFaceAdjacency(const MeshView& mesh);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_MESH_H_
