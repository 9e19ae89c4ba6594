#include "cuimg/reference/deform_reference.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "cuimg/common/status_macros.h"
#include "cuimg/reference/parallel_for.h"

namespace cuimg {
namespace {

using Vec3 = std::array<double, 3>;

// C(n, i) for n <= 8, exact in double.
double Binomial(int n, int i) {
  double c = 1;
  for (int k = 1; k <= i; ++k) c = c * (n - i + k) / k;
  return c;
}

double Power(double x, int e) {
  double p = 1;
  for (int k = 0; k < e; ++k) p *= x;
  return p;
}

// B_i^n(x) = C(n, i) x^i (1 - x)^(n - i) for i = 0..n, straight from the definition.
void BernsteinWeights(double x, int n, double* w) {
  for (int i = 0; i <= n; ++i) w[i] = Binomial(n, i) * Power(x, i) * Power(1 - x, n - i);
}

// What a lattice needs per point: its inverse and the deformed control points P'_ijk.
struct PreparedLattice {
  const Lattice* lattice;
  std::array<double, 9> inverse;
  std::vector<Vec3> points;  // P'_ijk at ControlPointIndex(i, j, k)
};

PreparedLattice Prepare(const Lattice& lattice) {
  PreparedLattice p{&lattice, LatticeInverse(lattice), {}};
  const int l = lattice.count_s - 1;
  const int m = lattice.count_t - 1;
  const int n = lattice.count_u - 1;
  p.points.resize(lattice.ControlPointCount());
  for (int i = 0; i <= l; ++i) {
    for (int j = 0; j <= m; ++j) {
      for (int k = 0; k <= n; ++k) {
        const std::size_t idx = lattice.ControlPointIndex(i, j, k);
        Vec3& q = p.points[idx];
        for (int a = 0; a < 3; ++a) {
          q[a] = lattice.origin[a] + (static_cast<double>(i) / l) * lattice.s[a] +
                 (static_cast<double>(j) / m) * lattice.t[a] +
                 (static_cast<double>(k) / n) * lattice.u[a] + lattice.displacements[idx * 3 + a];
        }
      }
    }
  }
  return p;
}

Vec3 LocalCoordinates(const std::array<double, 9>& inv, const Lattice& lattice, const Vec3& x) {
  const Vec3 d{x[0] - lattice.origin[0], x[1] - lattice.origin[1], x[2] - lattice.origin[2]};
  return {inv[0] * d[0] + inv[1] * d[1] + inv[2] * d[2],
          inv[3] * d[0] + inv[4] * d[1] + inv[5] * d[2],
          inv[6] * d[0] + inv[7] * d[1] + inv[8] * d[2]};
}

Vec3 DeformPoint(const PreparedLattice& p, const Vec3& x) {
  const Lattice& lattice = *p.lattice;
  const Vec3 local = LocalCoordinates(p.inverse, lattice, x);
  if (!InsideLattice(local)) return x;
  double ws[kMaxLatticeCount], wt[kMaxLatticeCount], wu[kMaxLatticeCount];
  BernsteinWeights(local[0], lattice.count_s - 1, ws);
  BernsteinWeights(local[1], lattice.count_t - 1, wt);
  BernsteinWeights(local[2], lattice.count_u - 1, wu);
  Vec3 out{0, 0, 0};
  for (int i = 0; i < lattice.count_s; ++i) {
    for (int j = 0; j < lattice.count_t; ++j) {
      for (int k = 0; k < lattice.count_u; ++k) {
        const double w = ws[i] * wt[j] * wu[k];
        const Vec3& q = p.points[lattice.ControlPointIndex(i, j, k)];
        for (int a = 0; a < 3; ++a) out[a] += w * q[a];
      }
    }
  }
  return out;
}

std::vector<float> ToFloat(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace

std::array<double, 3> LatticeLocalCoordinates(const Lattice& lattice,
                                              const std::array<double, 3>& x) {
  return LocalCoordinates(LatticeInverse(lattice), lattice, x);
}

bool InsideLattice(const std::array<double, 3>& local) {
  for (double c : local) {
    if (!(c >= -kLatticeInsideTolerance && c <= 1 + kLatticeInsideTolerance)) return false;
  }
  return true;
}

std::array<double, 3> DeformPointReference(const Lattice& lattice, const std::array<double, 3>& x) {
  return DeformPoint(Prepare(lattice), x);
}

std::vector<double> VertexNormalsF64(const std::vector<double>& positions, const MeshView& mesh,
                                     const VertexFaceAdjacency& adjacency, int threads) {
  std::vector<double> normals(mesh.vertex_count * 3, 0.0);
  ParallelFor(static_cast<std::int64_t>(mesh.vertex_count), threads, [&](std::int64_t v) {
    Vec3 sum{0, 0, 0};
    for (std::uint32_t e = adjacency.offsets[v]; e < adjacency.offsets[v + 1]; ++e) {
      const std::uint32_t* tri = mesh.triangles + std::size_t{adjacency.faces[e]} * 3;
      const double* p0 = &positions[std::size_t{tri[0]} * 3];
      const double* p1 = &positions[std::size_t{tri[1]} * 3];
      const double* p2 = &positions[std::size_t{tri[2]} * 3];
      const Vec3 a{p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
      const Vec3 b{p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
      sum[0] += a[1] * b[2] - a[2] * b[1];
      sum[1] += a[2] * b[0] - a[0] * b[2];
      sum[2] += a[0] * b[1] - a[1] * b[0];
    }
    if (sum[0] == 0 && sum[1] == 0 && sum[2] == 0) return;  // the documented zero fallback
    const double len = std::sqrt(sum[0] * sum[0] + sum[1] * sum[1] + sum[2] * sum[2]);
    for (int a = 0; a < 3; ++a) normals[v * 3 + a] = sum[a] / len;
  });
  return normals;
}

absl::StatusOr<DeformedMeshF64> DeformReferenceF64(const MeshView& mesh,
                                                   const VertexFaceAdjacency& adjacency,
                                                   const Lattice& lattice, int threads,
                                                   const CancelToken& cancel) {
  CUIMG_RETURN_IF_ERROR(ValidateLattice(lattice));
  const PreparedLattice prepared = Prepare(lattice);
  DeformedMeshF64 out;
  out.positions.resize(mesh.vertex_count * 3);
  // A vertex costs one pass over the lattice (up to thousands of control points): a look at the
  // token every 64 vertices is well under a millisecond of work apart.
  ParallelFor(static_cast<std::int64_t>(mesh.vertex_count), threads, [&](std::int64_t v) {
    if (v % 64 == 0 && cancel.Stopped()) return;  // the result is discarded below
    const float* x = mesh.positions + v * 3;
    const Vec3 y = DeformPoint(prepared, {x[0], x[1], x[2]});
    for (int a = 0; a < 3; ++a) out.positions[v * 3 + a] = y[a];
  });
  CUIMG_RETURN_IF_ERROR(cancel.Check());
  out.normals = VertexNormalsF64(out.positions, mesh, adjacency, threads);
  return out;
}

absl::StatusOr<DeformedMeshF64> DeformReferenceF64(const MeshView& mesh, const Lattice& lattice,
                                                   int threads) {
  CUIMG_RETURN_IF_ERROR(ValidateMesh(mesh));
  CUIMG_RETURN_IF_ERROR(ValidateLattice(lattice));
  CUIMG_ASSIGN_OR_RETURN(VertexFaceAdjacency adjacency, BuildVertexFaceAdjacency(mesh));
  return DeformReferenceF64(mesh, adjacency, lattice, threads);
}

absl::StatusOr<DeformedMesh> DeformReference(const MeshView& mesh, const Lattice& lattice,
                                             DeformOutputs outputs, int threads) {
  CUIMG_ASSIGN_OR_RETURN(DeformedMeshF64 f64, DeformReferenceF64(mesh, lattice, threads));
  DeformedMesh out;
  if (WantsPositions(outputs)) out.positions = ToFloat(f64.positions);
  if (WantsNormals(outputs)) out.normals = ToFloat(f64.normals);
  return out;
}

absl::StatusOr<std::vector<float>> VertexNormalsReference(const MeshView& mesh, int threads) {
  CUIMG_RETURN_IF_ERROR(ValidateMesh(mesh));
  CUIMG_ASSIGN_OR_RETURN(VertexFaceAdjacency adjacency, BuildVertexFaceAdjacency(mesh));
  const std::vector<double> positions(mesh.positions, mesh.positions + mesh.vertex_count * 3);
  return ToFloat(VertexNormalsF64(positions, mesh, adjacency, threads));
}

}  // namespace cuimg
