#include "cuimg/reference/mesh_generators.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace cuimg {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

}  // namespace

absl::StatusOr<Mesh> MakeTorus(int n, int m, double major_radius, double minor_radius) {
  if (n < 3 || m < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("torus: n and m must be >= 3, got n = ", n, ", m = ", m));
  }
  if (2 * static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(m) > kMaxMeshTriangles) {
    return absl::InvalidArgumentError(absl::StrCat(
        "torus: 2 * n * m must be <= ", kMaxMeshTriangles, " triangles, got n = ", n, ", m = ", m));
  }
  if (!std::isfinite(major_radius) || !std::isfinite(minor_radius) || !(minor_radius > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "torus: radii must be finite with r > 0, got R = ", major_radius, ", r = ", minor_radius));
  }
  Mesh mesh;
  const std::size_t vertices = static_cast<std::size_t>(n) * m;
  mesh.positions.resize(vertices * 3);
  mesh.triangles.resize(vertices * 6);
  for (int i = 0; i < n; ++i) {
    const double theta = kTwoPi * i / n;
    for (int j = 0; j < m; ++j) {
      const double phi = kTwoPi * j / m;
      const double ring = major_radius + minor_radius * std::cos(phi);
      float* p = &mesh.positions[(static_cast<std::size_t>(i) * m + j) * 3];
      p[0] = static_cast<float>(ring * std::cos(theta));
      p[1] = static_cast<float>(ring * std::sin(theta));
      p[2] = static_cast<float>(minor_radius * std::sin(phi));
    }
  }
  for (int i = 0; i < n; ++i) {
    const std::uint32_t i1 = static_cast<std::uint32_t>((i + 1) % n);
    for (int j = 0; j < m; ++j) {
      const std::uint32_t j1 = static_cast<std::uint32_t>((j + 1) % m);
      const std::uint32_t mm = static_cast<std::uint32_t>(m);
      const std::uint32_t v00 = static_cast<std::uint32_t>(i) * mm + static_cast<std::uint32_t>(j);
      const std::uint32_t v10 = i1 * mm + static_cast<std::uint32_t>(j);
      const std::uint32_t v11 = i1 * mm + j1;
      const std::uint32_t v01 = static_cast<std::uint32_t>(i) * mm + j1;
      std::uint32_t* t = &mesh.triangles[(static_cast<std::size_t>(i) * m + j) * 6];
      t[0] = v00;
      t[1] = v10;
      t[2] = v11;
      t[3] = v00;
      t[4] = v11;
      t[5] = v01;
    }
  }
  return mesh;
}

std::vector<float> TorusNormals(int n, int m) {
  std::vector<float> normals(static_cast<std::size_t>(std::max(n, 0)) * std::max(m, 0) * 3);
  for (int i = 0; i < n; ++i) {
    const double theta = kTwoPi * i / n;
    for (int j = 0; j < m; ++j) {
      const double phi = kTwoPi * j / m;
      float* p = &normals[(static_cast<std::size_t>(i) * m + j) * 3];
      p[0] = static_cast<float>(std::cos(phi) * std::cos(theta));
      p[1] = static_cast<float>(std::cos(phi) * std::sin(theta));
      p[2] = static_cast<float>(std::sin(phi));
    }
  }
  return normals;
}

}  // namespace cuimg
