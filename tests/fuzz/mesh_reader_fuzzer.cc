// libFuzzer target: the client's mesh reader (OBJ and PLY through assimp, then our merge into one
// triangle mesh). The first byte picks the format. Whatever the bytes: a status, and any mesh
// returned is one the server's validation would size correctly (indices in range).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "client/io/mesh_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static const char* kFormats[] = {"obj", "ply", "stl"};
  const char* format = kFormats[data[0] % 3];
  absl::StatusOr<cuimg::Mesh> mesh =
      cuimg::ReadMeshBytes(absl::MakeConstSpan(data + 1, size - 1), format);
  if (!mesh.ok()) return 0;
  for (std::uint32_t index : mesh->triangles) {
    if (index >= mesh->vertex_count()) std::abort();
  }
  return 0;
}
