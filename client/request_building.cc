#include "client/request_building.h"

#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/connection.h"
#include "client/io/mesh_file.h"
#include "cuimg/reference/mesh_generators.h"

namespace cuimg {

void ToProtoImage(const Image& image, v1::Image* out) {
  ToProtoImageHeader(image, out);
  out->set_data(reinterpret_cast<const char*>(image.bytes()), image.size_bytes());
}

void ToProtoImageHeader(const Image& image, v1::Image* out) {
  out->set_pixel_type(PixelTypeToProto(image.type()));
  out->set_width(static_cast<std::uint32_t>(image.extent().width));
  out->set_height(static_cast<std::uint32_t>(image.extent().height));
  out->set_depth(image.extent().depth > 1 ? static_cast<std::uint32_t>(image.extent().depth) : 0);
  out->set_channels(static_cast<std::uint32_t>(image.channels()));
}

absl::StatusOr<Image> FromProtoImage(const v1::Image& image) {
  absl::StatusOr<PixelType> type = PixelTypeFromProto(image.pixel_type(), "response.pixel_type");
  if (!type.ok()) return type.status();
  Image out(*type, Extent{image.width(), image.height(), image.depth() == 0 ? 1 : image.depth()},
            image.channels() == 0 ? 1 : static_cast<int>(image.channels()));
  if (image.data().size() != out.size_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("response: ", image.data().size(), " bytes, expected ", out.size_bytes()));
  }
  std::memcpy(out.bytes(), image.data().data(), out.size_bytes());
  return out;
}

absl::StatusOr<Mesh> LoadMeshInput(const std::string& input) {
  if (input.rfind("torus:", 0) == 0) {
    std::vector<std::string> nm = absl::StrSplit(input.substr(6), ',');
    int n = 0;
    int m = 0;
    if (nm.size() != 2 || !absl::SimpleAtoi(nm[0], &n) || !absl::SimpleAtoi(nm[1], &m)) {
      return absl::InvalidArgumentError("--input torus:N,M expects two integers");
    }
    return MakeTorus(n, m, 1.0, 0.35);
  }
  absl::StatusOr<Mesh> mesh = ReadMeshFile(input);
  if (!mesh.ok()) return AsReadError(mesh.status());
  return mesh;
}

void ToProtoMesh(const Mesh& mesh, v1::Mesh* out) {
  out->set_vertex_count(static_cast<std::uint32_t>(mesh.vertex_count()));
  out->set_triangle_count(static_cast<std::uint32_t>(mesh.triangle_count()));
  out->set_positions(reinterpret_cast<const char*>(mesh.positions.data()),
                     mesh.positions.size() * 4);
  out->set_triangles(reinterpret_cast<const char*>(mesh.triangles.data()),
                     mesh.triangles.size() * 4);
}

}  // namespace cuimg
