// Procedural test meshes: exact sizes, analytic normals, no licence questions. Used by the tests,
// the benchmarks and the client (`cuimg mesh torus`).
#ifndef CUIMG_REFERENCE_MESH_GENERATORS_H_
#define CUIMG_REFERENCE_MESH_GENERATORS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/kernels/mesh.h"

namespace cuimg {

// A closed torus around the z axis: n segments around the major circle (radius R, angle
// theta = 2 pi i / n) times m around the tube (radius r, angle phi = 2 pi j / m). Vertex
// (i, j) = ((R + r cos phi) cos theta, (R + r cos phi) sin theta, r sin phi) has index i * m + j.
// Each grid quad (i, j), (i+1, j), (i+1, j+1), (i, j+1) (indices wrapping) becomes the triangles
// {(i,j), (i+1,j), (i+1,j+1)} and {(i,j), (i+1,j+1), (i,j+1)}, counter-clockwise seen from
// outside (outward normals). n * m vertices, 2 * n * m triangles: 301 x 301 gives 90,601 / 181,202.
// INVALID_ARGUMENT unless n, m >= 3, 2 * n * m <= kMaxMeshTriangles, r > 0 and R, r finite.
absl::StatusOr<Mesh> MakeTorus(int n, int m, double major_radius, double minor_radius);

// The analytic outward unit normals of MakeTorus(n, m, ...)'s vertices, 3 floats each:
// (cos phi cos theta, cos phi sin theta, sin phi) (independent of the radii while R > r).
std::vector<float> TorusNormals(int n, int m);

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_MESH_GENERATORS_H_
