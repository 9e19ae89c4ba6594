// Meshes, lattices and comparisons for the Deform tests: reproducible by seed.
#ifndef CUIMG_TESTS_TESTING_MESH_TESTING_H_
#define CUIMG_TESTS_TESTING_MESH_TESTING_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuimg/kernels/mesh.h"

namespace cuimg::testing {

using Vec3d = std::array<double, 3>;

inline double Norm3(const double* v) { return std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]); }

// The lattice's size for tolerances: its longest axis.
inline double LatticeSize(const Lattice& lattice) {
  return std::max({Norm3(lattice.s.data()), Norm3(lattice.t.data()), Norm3(lattice.u.data())});
}

// A lattice centred at `center` with axes of about `size`, rotated, sheared and scaled at random
// (|det| / (|S||T||U|) stays above ~0.3), counts in [min_count, max_count] per axis, displacements
// uniform in +-displacement * size.
inline Lattice RandomLattice(std::mt19937_64& rng, const Vec3d& center, double size,
                             int min_count = 2, int max_count = 9, double displacement = 0.2) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> count(min_count, max_count);
  // Axes: a random orthonormal frame (Gram-Schmidt), each axis scaled, then sheared a little.
  Vec3d axes[3];
  for (;;) {
    for (auto& a : axes) a = {unit(rng), unit(rng), unit(rng)};
    bool ok = true;
    for (int i = 0; i < 3 && ok; ++i) {
      for (int j = 0; j < i; ++j) {
        const double d =
            axes[i][0] * axes[j][0] + axes[i][1] * axes[j][1] + axes[i][2] * axes[j][2];
        for (int k = 0; k < 3; ++k) axes[i][k] -= d * axes[j][k];
      }
      const double n = Norm3(axes[i].data());
      if (n < 0.1) ok = false;
      for (int k = 0; ok && k < 3; ++k) axes[i][k] /= n;
    }
    if (ok) break;
  }
  Vec3d scaled[3];
  for (int i = 0; i < 3; ++i) {
    const double scale = size * (0.6 + 0.4 * std::abs(unit(rng)));
    for (int k = 0; k < 3; ++k) scaled[i][k] = axes[i][k] * scale;
  }
  for (int i = 0; i < 3; ++i) {  // shear: add up to 30 % of the next axis
    const double shear = 0.3 * unit(rng);
    for (int k = 0; k < 3; ++k) scaled[i][k] += shear * scaled[(i + 1) % 3][k];
  }
  Lattice lattice;
  lattice.s = scaled[0];
  lattice.t = scaled[1];
  lattice.u = scaled[2];
  for (int k = 0; k < 3; ++k) {
    lattice.origin[k] = center[k] - 0.5 * (scaled[0][k] + scaled[1][k] + scaled[2][k]);
  }
  lattice.count_s = count(rng);
  lattice.count_t = count(rng);
  lattice.count_u = count(rng);
  lattice.displacements.resize(3 * lattice.ControlPointCount());
  for (double& d : lattice.displacements) d = displacement * size * unit(rng);
  return lattice;
}

// An axis-aligned lattice [lo, lo + size]^3 with zero displacements.
inline Lattice BoxLattice(const Vec3d& lo, const Vec3d& size, int count_s, int count_t,
                          int count_u) {
  return Lattice::Identity(lo, {size[0], 0, 0}, {0, size[1], 0}, {0, 0, size[2]}, count_s, count_t,
                           count_u);
}

// `vertices` random points in center +- extent/2; `triangles` triangles, each joining a random
// vertex to two of its next few indices (local but arbitrary shapes), a few with a repeated index.
inline Mesh RandomSoupMesh(std::mt19937_64& rng, std::size_t vertices, std::size_t triangles,
                           const Vec3d& center, double extent) {
  std::uniform_real_distribution<double> unit(-0.5, 0.5);
  Mesh mesh;
  mesh.positions.resize(vertices * 3);
  for (std::size_t i = 0; i < vertices * 3; ++i) {
    mesh.positions[i] = static_cast<float>(center[i % 3] + extent * unit(rng));
  }
  mesh.triangles.resize(triangles * 3);
  for (std::size_t f = 0; f < triangles; ++f) {
    const std::uint32_t a = static_cast<std::uint32_t>(rng() % vertices);
    const std::uint32_t b = static_cast<std::uint32_t>((a + 1 + rng() % 8) % vertices);
    std::uint32_t c = static_cast<std::uint32_t>((a + 1 + rng() % 8) % vertices);
    if (rng() % 50 == 0) c = a;  // degenerate: repeated index
    mesh.triangles[f * 3] = a;
    mesh.triangles[f * 3 + 1] = b;
    mesh.triangles[f * 3 + 2] = c;
  }
  return mesh;
}

// An open, planar nx x ny vertex grid in z = 0 over [0, width] x [0, height], CCW seen from +z.
inline Mesh GridPatch(int nx, int ny, double width, double height) {
  Mesh mesh;
  for (int y = 0; y < ny; ++y) {
    for (int x = 0; x < nx; ++x) {
      mesh.positions.push_back(static_cast<float>(width * x / (nx - 1)));
      mesh.positions.push_back(static_cast<float>(height * y / (ny - 1)));
      mesh.positions.push_back(0.0f);
    }
  }
  for (int y = 0; y + 1 < ny; ++y) {
    for (int x = 0; x + 1 < nx; ++x) {
      const std::uint32_t v00 = static_cast<std::uint32_t>(y * nx + x);
      const std::uint32_t v10 = v00 + 1;
      const std::uint32_t v01 = v00 + static_cast<std::uint32_t>(nx);
      const std::uint32_t v11 = v01 + 1;
      mesh.triangles.insert(mesh.triangles.end(), {v00, v10, v11, v00, v11, v01});
    }
  }
  return mesh;
}

// Angle in radians between two 3-vectors (0 when both are zero, pi/2 when only one is).
template <typename A, typename B>
double AngleBetween(const A* a, const B* b) {
  const double ax = a[0], ay = a[1], az = a[2], bx = b[0], by = b[1], bz = b[2];
  const double cx = ay * bz - az * by, cy = az * bx - ax * bz, cz = ax * by - ay * bx;
  const double na = std::sqrt(ax * ax + ay * ay + az * az);
  const double nb = std::sqrt(bx * bx + by * by + bz * bz);
  if (na == 0 && nb == 0) return 0;
  if (na == 0 || nb == 0) return M_PI / 2;
  return std::atan2(std::sqrt(cx * cx + cy * cy + cz * cz), ax * bx + ay * by + az * bz);
}

// Per vertex, how much rounding of the positions its normal amplifies: the sum over its faces of
// |e1| |e2| divided by |sum of the cross products| (infinite for a zero sum), on float64
// positions. Well-shaped meshes are ~1; a vertex whose face normals nearly cancel is large.
inline std::vector<double> NormalConditioning(const std::vector<double>& positions,
                                              const Mesh& mesh) {
  const std::size_t n = mesh.vertex_count();
  std::vector<double> edge_products(n, 0.0);
  std::vector<Vec3d> sums(n, Vec3d{0, 0, 0});
  for (std::size_t f = 0; f < mesh.triangle_count(); ++f) {
    const std::uint32_t* tri = &mesh.triangles[f * 3];
    const double* p0 = &positions[std::size_t{tri[0]} * 3];
    const double* p1 = &positions[std::size_t{tri[1]} * 3];
    const double* p2 = &positions[std::size_t{tri[2]} * 3];
    const double a[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
    const double b[3] = {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
    const double c[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                         a[0] * b[1] - a[1] * b[0]};
    // The largest edge product seen from any corner bounds the rounding of any corner's form.
    const double e01 = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    const double e02 = std::sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    const double d[3] = {p2[0] - p1[0], p2[1] - p1[1], p2[2] - p1[2]};
    const double e12 = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    const double w = std::max({e01 * e02, e01 * e12, e02 * e12});
    for (int k = 0; k < 3; ++k) {
      edge_products[tri[k]] += w;
      for (int a2 = 0; a2 < 3; ++a2) sums[tri[k]][a2] += c[a2];
    }
  }
  std::vector<double> kappa(n);
  for (std::size_t v = 0; v < n; ++v) {
    const double s = Norm3(sums[v].data());
    kappa[v] = s > 0 ? edge_products[v] / s : (edge_products[v] > 0 ? INFINITY : 0.0);
  }
  return kappa;
}

struct Deviation {
  double max_position = 0;  // max |got - want| over coordinates
  double max_angle = 0;     // max normal angle over compared vertices (radians)
  std::size_t compared_normals = 0;
  std::size_t worst_vertex = 0;
};

// Compares float outputs with float64 ones; normals only where conditioning < max_kappa.
inline Deviation Compare(const std::vector<float>& positions, const std::vector<float>& normals,
                         const std::vector<double>& want_positions,
                         const std::vector<double>& want_normals, const std::vector<double>& kappa,
                         double max_kappa) {
  Deviation d;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const double e = std::abs(positions[i] - want_positions[i]);
    if (e > d.max_position) {
      d.max_position = e;
      d.worst_vertex = i / 3;
    }
  }
  for (std::size_t v = 0; v * 3 < normals.size(); ++v) {
    if (!(kappa[v] < max_kappa)) continue;
    ++d.compared_normals;
    d.max_angle = std::max(d.max_angle, AngleBetween(&normals[v * 3], &want_normals[v * 3]));
  }
  return d;
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_MESH_TESTING_H_
