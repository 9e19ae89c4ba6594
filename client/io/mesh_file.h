// Mesh files through assimp: OBJ, PLY, STL (and whatever else assimp reads) in, OBJ/PLY/STL with
// vertex normals out.
#ifndef CUIMG_CLIENT_IO_MESH_FILE_H_
#define CUIMG_CLIENT_IO_MESH_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cuimg/kernels/mesh.h"

namespace cuimg {

// All meshes of the file merged into one triangle mesh (faces triangulated; duplicate vertices
// joined so that normals can be shared). NOT_FOUND for a path that is not a file, INVALID_ARGUMENT
// for one assimp cannot read or that holds no triangles.
absl::StatusOr<Mesh> ReadMeshFile(const std::string& path);
// The same from a file's bytes; `format` is its extension without the dot ("obj", "ply", "stl").
absl::StatusOr<Mesh> ReadMeshBytes(absl::Span<const std::uint8_t> bytes, absl::string_view format);
// Writes by extension (.obj, .ply, .stl); `normals` (vertex_count * 3) may be empty. Through
// WriteAtomically (atomic_output.h): whole or not at all.
absl::Status WriteMeshFile(const std::string& path, const Mesh& mesh,
                           const std::vector<float>& normals);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_MESH_FILE_H_
