#include "client/request_building.h"

#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/io/mesh_file.h"
#include "client/io/volume_file.h"
#include "client/lattice_spec.h"
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

absl::StatusOr<Lattice> DeformLattice(const DeformCommand& c, const Mesh& mesh) {
  if (c.lattice_file.empty()) return LatticeAroundMesh(mesh, c.controls);
  absl::StatusOr<Lattice> lattice = LatticeFromJsonFile(c.lattice_file);
  if (!lattice.ok()) return AsReadError(lattice.status());
  return lattice;
}

v1::GradientRequest GradientParameters(const GradientCommand& c) {
  v1::GradientRequest r;
  r.set_kernel_length(static_cast<std::uint32_t>(c.kernel_length));
  r.set_sigma(c.sigma);
  r.set_magnitude(true);
  return r;
}

absl::StatusOr<v1::PyramidRequest> PyramidParameters(const PyramidCommand& c) {
  if (c.mode != "from_base" && c.mode != "cascaded") {
    return absl::InvalidArgumentError("--mode: expected from_base or cascaded");
  }
  v1::PyramidRequest r;
  r.set_levels(static_cast<std::uint32_t>(c.levels));
  r.set_ratio(c.ratio);
  r.set_mode(c.mode == "cascaded" ? v1::PYRAMID_MODE_CASCADED : v1::PYRAMID_MODE_FROM_BASE);
  r.set_output_type(v1::PIXEL_TYPE_F32);
  return r;
}

absl::StatusOr<v1::DetectPedestriansRequest> DetectParameters(const DetectCommand& c) {
  if (c.gamma != "model" && c.gamma != "on" && c.gamma != "off") {
    return absl::InvalidArgumentError("--gamma: expected model, on or off");
  }
  if (c.grouping != "rectangles" && c.grouping != "none") {
    return absl::InvalidArgumentError("--grouping: expected rectangles or none");
  }
  v1::DetectPedestriansRequest r;
  r.set_model(c.model);
  r.set_hit_threshold(c.hit_threshold);
  r.set_win_stride(static_cast<std::uint32_t>(c.win_stride));
  r.set_padding(static_cast<std::uint32_t>(c.padding));
  r.set_scale(c.scale);
  r.set_max_levels(static_cast<std::uint32_t>(c.max_levels));
  if (c.gamma != "model") r.set_gamma_correction(c.gamma == "on");
  r.set_grouping(c.grouping == "none" ? v1::GROUPING_NONE : v1::GROUPING_GROUP_RECTANGLES);
  if (c.group_threshold >= 0) r.set_group_threshold(static_cast<std::uint32_t>(c.group_threshold));
  r.set_group_eps(c.group_eps);
  return r;
}

}  // namespace cuimg
