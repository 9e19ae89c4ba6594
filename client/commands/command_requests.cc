#include "client/commands/command_requests.h"

#include <cstdint>

#include "client/connection.h"
#include "client/lattice_spec.h"

namespace cuimg {

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
