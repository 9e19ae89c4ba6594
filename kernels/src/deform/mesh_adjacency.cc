// Vertex -> face CSR adjacency: a counting sort of the (vertex, face) corner pairs. Walking the
// faces in ascending order and appending each corner to its vertex's slot keeps every vertex's
// faces in ascending order, so the result (and every sum over it) is deterministic.
#include <cstddef>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "cuimg/kernels/mesh.h"

namespace cuimg {

absl::StatusOr<VertexFaceAdjacency> BuildVertexFaceAdjacency(const MeshView& mesh) {
  if (mesh.vertex_count > kMaxMeshVertices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mesh.vertex_count must be <= ", kMaxMeshVertices, ", got ", mesh.vertex_count));
  }
  if (mesh.triangle_count > kMaxMeshTriangles) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mesh.triangle_count must be <= ", kMaxMeshTriangles, ", got ", mesh.triangle_count));
  }
  const std::size_t corners = mesh.triangle_count * 3;
  VertexFaceAdjacency adj;
  adj.offsets.assign(mesh.vertex_count + 1, 0);
  // Degrees, shifted by one so that the prefix sum lands in place.
  for (std::size_t c = 0; c < corners; ++c) {
    const std::uint32_t v = mesh.triangles[c];
    if (v >= mesh.vertex_count) {
      return absl::InvalidArgumentError(absl::StrCat("mesh.triangles[", c, "] = ", v,
                                                     " is out of range: vertex_count is ",
                                                     mesh.vertex_count, " (triangle ", c / 3, ")"));
    }
    ++adj.offsets[v + 1];
  }
  for (std::size_t v = 0; v < mesh.vertex_count; ++v) adj.offsets[v + 1] += adj.offsets[v];
  adj.faces.resize(corners);
  std::vector<std::uint32_t> cursor(adj.offsets.begin(), adj.offsets.end() - 1);
  for (std::size_t c = 0; c < corners; ++c) {
    adj.faces[cursor[mesh.triangles[c]]++] = static_cast<std::uint32_t>(c / 3);
  }
  return adj;
}

}  // namespace cuimg
