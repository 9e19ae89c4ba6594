#include "client/lattice_spec.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "client/morphology_spec.h"

namespace cuimg {

absl::StatusOr<Lattice> LatticeAroundMesh(const Mesh& mesh, const LatticeControls& c) {
  auto counts = ParseSize(c.counts);
  if (!counts.ok() || (*counts)[2] == 0) {
    return absl::InvalidArgumentError("--lattice_counts: expected SxTxU, e.g. 3x3x3");
  }
  std::array<double, 3> lo{std::numeric_limits<double>::max(), std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::max()};
  std::array<double, 3> hi{-lo[0], -lo[1], -lo[2]};
  for (std::size_t v = 0; v < mesh.vertex_count(); ++v) {
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min<double>(lo[a], mesh.positions[3 * v + a]);
      hi[a] = std::max<double>(hi[a], mesh.positions[3 * v + a]);
    }
  }
  std::array<double, 3> size{};
  for (int a = 0; a < 3; ++a) {
    const double pad = std::max(1e-6, 0.01 * (hi[a] - lo[a]));
    lo[a] -= pad;
    size[a] = hi[a] - lo[a] + pad;
  }
  Lattice l = Lattice::Identity(lo, {size[0], 0, 0}, {0, size[1], 0}, {0, 0, size[2]}, (*counts)[0],
                                (*counts)[1], (*counts)[2]);
  if (absl::Status s = ValidateLattice(l, "lattice"); !s.ok()) return s;
  const double cx = lo[0] + size[0] / 2;
  const double cy = lo[1] + size[1] / 2;
  for (int i = 0; i < l.count_s; ++i) {
    for (int j = 0; j < l.count_t; ++j) {
      for (int k = 0; k < l.count_u; ++k) {
        const double fk = static_cast<double>(k) / (l.count_u - 1);
        const double x = lo[0] + size[0] * i / (l.count_s - 1) - cx;
        const double y = lo[1] + size[1] * j / (l.count_t - 1) - cy;
        const double angle = c.twist_degrees * M_PI / 180.0 * (fk - 0.5);
        const double grow = 1.0 + c.bulge * std::sin(M_PI * fk);
        const double nx = grow * (x * std::cos(angle) - y * std::sin(angle));
        const double ny = grow * (x * std::sin(angle) + y * std::cos(angle));
        const std::size_t p = l.ControlPointIndex(i, j, k) * 3;
        l.displacements[p] = nx - x;
        l.displacements[p + 1] = ny - y;
      }
    }
  }
  return l;
}

absl::StatusOr<Lattice> LatticeFromJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return LatticeFromJson(text.str(), path);
}

absl::StatusOr<Lattice> LatticeFromJson(absl::string_view text, const std::string& path) {
  const nlohmann::json j =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  }
  auto vec3 = [&](const char* key, std::array<double, 3>* out) -> absl::Status {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_array() || it->size() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"", key, "\" must be [x, y, z]"));
    }
    for (int a = 0; a < 3; ++a) {
      if (!(*it)[a].is_number()) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": \"", key, "\" must hold numbers"));
      }
      (*out)[a] = (*it)[a].get<double>();
    }
    return absl::OkStatus();
  };
  Lattice l;
  for (const auto& [key, out] :
       {std::pair<const char*, std::array<double, 3>*>{"origin", &l.origin},
        {"s", &l.s},
        {"t", &l.t},
        {"u", &l.u}}) {
    if (absl::Status s = vec3(key, out); !s.ok()) return s;
  }
  const auto counts = j.find("counts");
  if (counts == j.end() || !counts->is_array() || counts->size() != 3 ||
      !std::all_of(counts->begin(), counts->end(),
                   [](const auto& v) { return v.is_number_integer(); })) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": \"counts\" must be [cs, ct, cu]"));
  }
  // Checked before anything is sized by them (displacements default to count_s*count_t*count_u).
  for (const auto& v : *counts) {
    if (v.get<std::int64_t>() < kMinLatticeCount || v.get<std::int64_t>() > kMaxLatticeCount) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": \"counts\" must each be in [", kMinLatticeCount, ", ", kMaxLatticeCount, "]"));
    }
  }
  l.count_s = (*counts)[0].get<int>();
  l.count_t = (*counts)[1].get<int>();
  l.count_u = (*counts)[2].get<int>();
  const auto disp = j.find("displacements");
  if (disp != j.end()) {
    if (!disp->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"displacements\" must be an array"));
    }
    for (const auto& v : *disp) {
      if (!v.is_number())
        return absl::InvalidArgumentError(absl::StrCat(path, ": displacements must be numbers"));
      l.displacements.push_back(v.get<double>());
    }
  } else {
    l.displacements.assign(3 * l.ControlPointCount(), 0.0);
  }
  if (absl::Status s = ValidateLattice(l, "lattice"); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  return l;
}

void ToProtoLattice(const Lattice& l, v1::Lattice* out) {
  auto set = [](const std::array<double, 3>& v, v1::Vec3* o) {
    o->set_x(v[0]);
    o->set_y(v[1]);
    o->set_z(v[2]);
  };
  set(l.origin, out->mutable_origin());
  set(l.s, out->mutable_s());
  set(l.t, out->mutable_t());
  set(l.u, out->mutable_u());
  out->set_count_s(static_cast<std::uint32_t>(l.count_s));
  out->set_count_t(static_cast<std::uint32_t>(l.count_t));
  out->set_count_u(static_cast<std::uint32_t>(l.count_u));
  for (double d : l.displacements) out->add_displacements(d);
}

}  // namespace cuimg
