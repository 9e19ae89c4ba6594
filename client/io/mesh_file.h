// Mesh files through assimp: OBJ, PLY, STL (and whatever else assimp reads) in, OBJ/PLY/STL with
// vertex normals out.
#ifndef CUIMG_CLIENT_IO_MESH_FILE_H_
#define CUIMG_CLIENT_IO_MESH_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/kernels/mesh.h"

namespace cuimg {

// All meshes of the file merged into one triangle mesh (faces triangulated; duplicate vertices
// joined so that normals can be shared).
absl::StatusOr<Mesh> ReadMeshFile(const std::string& path);
// Writes by extension (.obj, .ply, .stl); `normals` (vertex_count * 3) may be empty.
absl::Status WriteMeshFile(const std::string& path, const Mesh& mesh,
                           const std::vector<float>& normals);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_MESH_FILE_H_
