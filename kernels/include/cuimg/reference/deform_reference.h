// CPU reference for Deform, in float64: the definitions of deform.proto written plainly. It is the
// test oracle of the CUDA kernels (which must agree within 1e-5 x lattice size and 1e-3 rad) and
// the CPU comparison of the benchmarks.
//
// Positions: a vertex X with local coordinates (s, t, u) = [S T U]^-1 (X - origin) inside the
// lattice (each in [0, 1] up to kLatticeInsideTolerance) moves to
//   X' = sum_ijk B_i^l(s) B_j^m(t) B_k^n(u) P'_ijk,  B_i^l(s) = C(l, i) s^i (1 - s)^(l - i),
// with P'_ijk = origin + (i/l) S + (j/m) T + (k/n) U + displacement_ijk; every other vertex is
// left unchanged (bit for bit).
// Normals: per vertex, N = sum over its triangles (v0, v1, v2), in ascending triangle order, of
// (v1 - v0) x (v2 - v0) on the deformed positions; N / |N|, or (0, 0, 0) when N is exactly zero
// (isolated vertices, vertices whose triangles all have zero area). Deterministic.
#ifndef CUIMG_REFERENCE_DEFORM_REFERENCE_H_
#define CUIMG_REFERENCE_DEFORM_REFERENCE_H_

#include <array>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/kernels/mesh.h"

namespace cuimg {

struct DeformedMeshF64 {
  std::vector<double> positions;  // vertex_count * 3
  std::vector<double> normals;    // vertex_count * 3, unit or zero
};

// Local coordinates (s, t, u) of `x`. Requires a valid lattice.
std::array<double, 3> LatticeLocalCoordinates(const Lattice& lattice,
                                              const std::array<double, 3>& x);
// True when every local coordinate lies in [-kLatticeInsideTolerance, 1 + kLatticeInsideTolerance].
bool InsideLattice(const std::array<double, 3>& local);
// X' of one point per the definition above (x itself when outside). Requires a valid lattice.
std::array<double, 3> DeformPointReference(const Lattice& lattice, const std::array<double, 3>& x);

// Deformed positions and normals in float64. Validates the mesh and the lattice
// (INVALID_ARGUMENT naming the field), builds the adjacency, uses up to `threads` threads
// (0 = hardware concurrency).
absl::StatusOr<DeformedMeshF64> DeformReferenceF64(const MeshView& mesh, const Lattice& lattice,
                                                   int threads = 0);
// The same on a mesh validated before, with its adjacency built once (the "resident" CPU path of
// the benchmarks). Validates only the lattice. `adjacency` must be BuildVertexFaceAdjacency(mesh).
// Looks at `cancel` every few vertices and returns its status once it stops.
absl::StatusOr<DeformedMeshF64> DeformReferenceF64(const MeshView& mesh,
                                                   const VertexFaceAdjacency& adjacency,
                                                   const Lattice& lattice, int threads = 0,
                                                   const CancelToken& cancel = NeverCancelled());
// The same rounded to float32 (the API's output); only the arrays `outputs` asks for.
absl::StatusOr<DeformedMesh> DeformReference(
    const MeshView& mesh, const Lattice& lattice,
    DeformOutputs outputs = DeformOutputs::kPositionsAndNormals, int threads = 0);

// Area-weighted vertex normals (as above) of `positions` (vertex_count * 3 doubles) over the
// triangles of `mesh` (its positions are not read); `adjacency` = BuildVertexFaceAdjacency(mesh).
std::vector<double> VertexNormalsF64(const std::vector<double>& positions, const MeshView& mesh,
                                     const VertexFaceAdjacency& adjacency, int threads = 0);
// The normals of a mesh as given, in float64 then rounded to float32. Validates the mesh.
absl::StatusOr<std::vector<float>> VertexNormalsReference(const MeshView& mesh, int threads = 0);

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_DEFORM_REFERENCE_H_
