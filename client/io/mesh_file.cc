#include "client/io/mesh_file.h"

#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <assimp/Exporter.hpp>
#include <assimp/Importer.hpp>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/io/atomic_output.h"

namespace cuimg {

namespace {

constexpr unsigned kImportSteps =
    aiProcess_Triangulate | aiProcess_JoinIdenticalVertices | aiProcess_SortByPType;

// Merges the scene's triangle meshes into one. `name` labels errors.
absl::StatusOr<Mesh> MeshFromScene(const aiScene& scene_ref, absl::string_view name) {
  const aiScene* scene = &scene_ref;
  Mesh mesh;
  for (unsigned m = 0; m < scene->mNumMeshes; ++m) {
    const aiMesh* in = scene->mMeshes[m];
    if (!(in->mPrimitiveTypes & aiPrimitiveType_TRIANGLE)) continue;
    const auto base = static_cast<std::uint32_t>(mesh.vertex_count());
    for (unsigned v = 0; v < in->mNumVertices; ++v) {
      mesh.positions.insert(mesh.positions.end(),
                            {in->mVertices[v].x, in->mVertices[v].y, in->mVertices[v].z});
    }
    for (unsigned f = 0; f < in->mNumFaces; ++f) {
      if (in->mFaces[f].mNumIndices != 3) continue;
      for (int k = 0; k < 3; ++k) {
        // An importer may pass a file's bad index through; the server would refuse it anyway.
        if (in->mFaces[f].mIndices[k] >= in->mNumVertices) {
          return absl::InvalidArgumentError(
              absl::StrCat(name, ": face ", f, " of mesh ", m, " indexes past its vertices"));
        }
        mesh.triangles.push_back(base + in->mFaces[f].mIndices[k]);
      }
    }
  }
  if (mesh.vertex_count() == 0 || mesh.triangle_count() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no triangles"));
  }
  return mesh;
}

}  // namespace

absl::StatusOr<Mesh> ReadMeshFile(const std::string& path) {
  // A path that is not there is the command line's fault (exit 2), not the file's (assimp would
  // say INVALID_ARGUMENT).
  if (std::error_code ec; !std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  Assimp::Importer importer;
  const aiScene* scene = importer.ReadFile(path, kImportSteps);
  if (scene == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", importer.GetErrorString()));
  }
  return MeshFromScene(*scene, path);
}

absl::StatusOr<Mesh> ReadMeshBytes(absl::Span<const std::uint8_t> bytes, absl::string_view format) {
  if (bytes.empty()) return absl::InvalidArgumentError(absl::StrCat(format, " data: empty"));
  Assimp::Importer importer;
  const std::string hint(format);
  const aiScene* scene =
      importer.ReadFileFromMemory(bytes.data(), bytes.size(), kImportSteps, hint.c_str());
  if (scene == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(format, " data: ", importer.GetErrorString()));
  }
  return MeshFromScene(*scene, absl::StrCat(format, " data"));
}

namespace {

// WriteMeshFile into `path` as it is (the caller picks a temporary name).
absl::Status WriteMeshFileTo(const std::string& path, const Mesh& mesh,
                             const std::vector<float>& normals) {
  const std::string lower = absl::AsciiStrToLower(path);
  std::string format;
  if (absl::EndsWith(lower, ".obj"))
    format = "obj";
  else if (absl::EndsWith(lower, ".ply"))
    format = "plyb";
  else if (absl::EndsWith(lower, ".stl"))
    format = "stlb";
  else
    return absl::InvalidArgumentError(absl::StrCat(path, ": unknown extension (.obj, .ply, .stl)"));
  // A one-mesh scene; assimp's destructors free what is allocated here.
  aiScene scene;
  scene.mRootNode = new aiNode();
  scene.mRootNode->mNumMeshes = 1;
  scene.mRootNode->mMeshes = new unsigned[1]{0};
  scene.mNumMaterials = 1;
  scene.mMaterials = new aiMaterial* [1] { new aiMaterial() };
  scene.mNumMeshes = 1;
  scene.mMeshes = new aiMesh* [1] { new aiMesh() };
  aiMesh* out = scene.mMeshes[0];
  out->mMaterialIndex = 0;
  out->mPrimitiveTypes = aiPrimitiveType_TRIANGLE;
  out->mNumVertices = static_cast<unsigned>(mesh.vertex_count());
  out->mVertices = new aiVector3D[out->mNumVertices];
  for (unsigned v = 0; v < out->mNumVertices; ++v) {
    out->mVertices[v] =
        aiVector3D(mesh.positions[3 * v], mesh.positions[3 * v + 1], mesh.positions[3 * v + 2]);
  }
  if (!normals.empty()) {
    out->mNormals = new aiVector3D[out->mNumVertices];
    for (unsigned v = 0; v < out->mNumVertices; ++v) {
      out->mNormals[v] = aiVector3D(normals[3 * v], normals[3 * v + 1], normals[3 * v + 2]);
    }
  }
  out->mNumFaces = static_cast<unsigned>(mesh.triangle_count());
  out->mFaces = new aiFace[out->mNumFaces];
  for (unsigned f = 0; f < out->mNumFaces; ++f) {
    out->mFaces[f].mNumIndices = 3;
    out->mFaces[f].mIndices = new unsigned[3]{mesh.triangles[3 * f], mesh.triangles[3 * f + 1],
                                              mesh.triangles[3 * f + 2]};
  }
  Assimp::Exporter exporter;
  if (exporter.Export(&scene, format, path) != AI_SUCCESS) {
    return absl::DataLossError(absl::StrCat(path, ": ", exporter.GetErrorString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteMeshFile(const std::string& path, const Mesh& mesh,
                           const std::vector<float>& normals) {
  return WriteAtomically(path, OutputKind::kFile, [&](const std::string& temp) {
    return WriteMeshFileTo(temp, mesh, normals);
  });
}

}  // namespace cuimg
