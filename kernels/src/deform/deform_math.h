// The per-vertex arithmetic of the Deform kernels, compiled both for the GPU (deform.cu) and for
// the host (EmulateDeformOnHost, used by the CPU tests). Every multiply-add is an explicit fma and
// deform.cu is built with -fmad=false, so the compiler fuses nothing on its own: the GPU result
// equals the host emulation bit for bit, and the emulation can be checked against the float64
// reference where there is no GPU.
//
// FFD, written as a displacement of the vertex: with (s, t, u) the local coordinates,
//   X' = sum B_ijk P'_ijk = sum B_ijk P_ijk + sum B_ijk D_ijk = X + sum B_ijk D_ijk,
// because Bernstein bases reproduce linear functions (sum_i B_i^l(s) i / l = s, so the rest
// lattice maps X to itself). Exact in real arithmetic, and in float32 the error scales with the
// displacements instead of the lattice's distance from the origin; the identity lattice returns
// every vertex bit for bit. Local coordinates and the inside test are computed in float64 (a few
// DFMA per vertex): they decide which vertices move, so CPU and GPU must agree on them.
#ifndef CUIMG_KERNELS_SRC_DEFORM_MATH_H_
#define CUIMG_KERNELS_SRC_DEFORM_MATH_H_

#include <math.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "cuimg/kernels/mesh.h"

#if defined(__CUDACC__)
#define CUIMG_HOST_DEVICE __host__ __device__
#else
#define CUIMG_HOST_DEVICE
#endif
// Unrolled in device code only (host compilers warn about the pragma).
#if defined(__CUDA_ARCH__)
#define CUIMG_UNROLL _Pragma("unroll")
#else
#define CUIMG_UNROLL
#endif

namespace cuimg::internal {

// A deformed position padded to 16 bytes: one 128-bit load per gather in the normals kernel.
struct alignas(16) Vec4f {
  float x, y, z, w;
};

// One vertex -> face incidence, as the normals kernel reads it: the face's two other corners in
// winding order (v, next, prev), so (next - v) x (prev - v) is the face's cross product.
struct alignas(8) CornerPair {
  std::uint32_t next;
  std::uint32_t prev;
};

// The lattice as the FFD kernel takes it (a __grid_constant__ kernel parameter: each launch
// carries its own copy, so concurrent Deforms never share state). K = the largest count per axis;
// displacements are padded to K x K x K points, index ((i * K + j) * K + k) * 3 + axis, so every
// index in the unrolled loops is a compile-time constant-bank offset. Padding is zero.
template <int K>
struct FfdParams {
  double origin[3];
  double inverse[9];  // [S T U]^-1, row-major
  int degree[3];      // count - 1 per axis
  float displacement[K * K * K * 3];
};

// Calls fn(std::integral_constant<int, K>{}) for K = order in [2, 9].
template <typename Fn>
decltype(auto) VisitLatticeOrder(int order, Fn&& fn) {
  switch (order) {
    case 2:
      return fn(std::integral_constant<int, 2>{});
    case 3:
      return fn(std::integral_constant<int, 3>{});
    case 4:
      return fn(std::integral_constant<int, 4>{});
    case 5:
      return fn(std::integral_constant<int, 5>{});
    case 6:
      return fn(std::integral_constant<int, 6>{});
    case 7:
      return fn(std::integral_constant<int, 7>{});
    case 8:
      return fn(std::integral_constant<int, 8>{});
    default:
      break;
  }
  return fn(std::integral_constant<int, 9>{});
}

// The order K a lattice runs with. Requires a valid lattice.
inline int LatticeOrder(const Lattice& lattice) {
  return std::max({lattice.count_s, lattice.count_t, lattice.count_u});
}

// Host: the kernel parameters of a valid lattice with LatticeOrder(lattice) <= K.
template <int K>
FfdParams<K> MakeFfdParams(const Lattice& lattice) {
  FfdParams<K> p{};
  const std::array<double, 9> inverse = LatticeInverse(lattice);
  for (int a = 0; a < 3; ++a) p.origin[a] = lattice.origin[a];
  for (int a = 0; a < 9; ++a) p.inverse[a] = inverse[a];
  p.degree[0] = lattice.count_s - 1;
  p.degree[1] = lattice.count_t - 1;
  p.degree[2] = lattice.count_u - 1;
  for (int i = 0; i < lattice.count_s; ++i) {
    for (int j = 0; j < lattice.count_t; ++j) {
      for (int k = 0; k < lattice.count_u; ++k) {
        const std::size_t src = lattice.ControlPointIndex(i, j, k) * 3;
        const std::size_t dst = ((static_cast<std::size_t>(i) * K + j) * K + k) * 3;
        for (int a = 0; a < 3; ++a) {
          p.displacement[dst + a] = static_cast<float>(lattice.displacements[src + a]);
        }
      }
    }
  }
  return p;
}

// Bernstein weights B_j^degree(x), j = 0..K-1 (zero past the degree), by the de Casteljau
// recurrence B_j^r = s B_{j-1}^{r-1} + (1 - s) B_j^{r-1}: positive terms only, so each weight is
// within a few ulp. 1 - x is formed in float64 (exact near x = 1).
template <int K>
CUIMG_HOST_DEVICE inline void BernsteinWeights(double x, int degree, float (&w)[K]) {
  const float s = static_cast<float>(x);
  const float q = static_cast<float>(1.0 - x);
  w[0] = 1.0f;
  CUIMG_UNROLL
  for (int j = 1; j < K; ++j) w[j] = 0.0f;
  CUIMG_UNROLL
  for (int r = 1; r < K; ++r) {
    if (r > degree) break;
    CUIMG_UNROLL
    for (int j = r; j >= 1; --j) w[j] = fmaf(s, w[j - 1], q * w[j]);
    w[0] = q * w[0];
  }
}

// The deformed position of x (x itself, bit for bit, outside the lattice).
template <int K>
CUIMG_HOST_DEVICE inline void FfdVertex(const FfdParams<K>& p, const float (&x)[3], float (&y)[3]) {
  y[0] = x[0];
  y[1] = x[1];
  y[2] = x[2];
  const double dx = static_cast<double>(x[0]) - p.origin[0];
  const double dy = static_cast<double>(x[1]) - p.origin[1];
  const double dz = static_cast<double>(x[2]) - p.origin[2];
  const double s = fma(p.inverse[0], dx, fma(p.inverse[1], dy, p.inverse[2] * dz));
  const double t = fma(p.inverse[3], dx, fma(p.inverse[4], dy, p.inverse[5] * dz));
  const double u = fma(p.inverse[6], dx, fma(p.inverse[7], dy, p.inverse[8] * dz));
  constexpr double kLo = -kLatticeInsideTolerance;
  constexpr double kHi = 1.0 + kLatticeInsideTolerance;
  if (!(s >= kLo && s <= kHi && t >= kLo && t <= kHi && u >= kLo && u <= kHi)) return;
  float ws[K], wt[K], wu[K];
  BernsteinWeights<K>(s, p.degree[0], ws);
  BernsteinWeights<K>(t, p.degree[1], wt);
  BernsteinWeights<K>(u, p.degree[2], wu);
  // Tensor-product sum, innermost axis first: ~3 FMA per control point.
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  CUIMG_UNROLL
  for (int i = 0; i < K; ++i) {
    if (i > p.degree[0]) break;
    float bx = 0.0f, by = 0.0f, bz = 0.0f;
    CUIMG_UNROLL
    for (int j = 0; j < K; ++j) {
      if (j > p.degree[1]) break;
      float cx = 0.0f, cy = 0.0f, cz = 0.0f;
      // No early exit along u: past the degree, weights and padding are zero, so the extra
      // terms add exactly nothing, and K straight FMAs beat K compare-and-branch pairs.
      CUIMG_UNROLL
      for (int k = 0; k < K; ++k) {
        const float* d = &p.displacement[((i * K + j) * K + k) * 3];
        cx = fmaf(wu[k], d[0], cx);
        cy = fmaf(wu[k], d[1], cy);
        cz = fmaf(wu[k], d[2], cz);
      }
      bx = fmaf(wt[j], cx, bx);
      by = fmaf(wt[j], cy, by);
      bz = fmaf(wt[j], cz, bz);
    }
    ax = fmaf(ws[i], bx, ax);
    ay = fmaf(ws[i], by, ay);
    az = fmaf(ws[i], bz, az);
  }
  y[0] = x[0] + ax;
  y[1] = x[1] + ay;
  y[2] = x[2] + az;
}

// n += (a - p) x (b - p): the cross product of a face seen from its corner p.
CUIMG_HOST_DEVICE inline void AccumulateCorner(const Vec4f& p, const Vec4f& a, const Vec4f& b,
                                               float (&n)[3]) {
  const float ax = a.x - p.x, ay = a.y - p.y, az = a.z - p.z;
  const float bx = b.x - p.x, by = b.y - p.y, bz = b.z - p.z;
  n[0] = n[0] + fmaf(ay, bz, -(az * by));
  n[1] = n[1] + fmaf(az, bx, -(ax * bz));
  n[2] = n[2] + fmaf(ax, by, -(ay * bx));
}

// n / |n| in float64 (no overflow or underflow for any float n), or (0, 0, 0) when n is zero.
CUIMG_HOST_DEVICE inline void NormalizeOrZero(const float (&n)[3], float (&out)[3]) {
  const double x = n[0], y = n[1], z = n[2];
  const double len2 = fma(x, x, fma(y, y, z * z));
  if (len2 == 0.0) {
    out[0] = out[1] = out[2] = 0.0f;
    return;
  }
  const double r = 1.0 / sqrt(len2);
  out[0] = static_cast<float>(x * r);
  out[1] = static_cast<float>(y * r);
  out[2] = static_cast<float>(z * r);
}

// Host: the corner pairs in the order of adjacency.faces (ascending face per vertex).
inline std::vector<CornerPair> BuildCornerPairs(const MeshView& mesh,
                                                const VertexFaceAdjacency& adjacency) {
  std::vector<CornerPair> pairs(adjacency.faces.size());
  std::vector<std::uint32_t> cursor(adjacency.offsets.begin(), adjacency.offsets.end() - 1);
  for (std::size_t f = 0; f < mesh.triangle_count; ++f) {
    const std::uint32_t* tri = mesh.triangles + f * 3;
    for (int c = 0; c < 3; ++c) {
      pairs[cursor[tri[c]]++] = CornerPair{tri[(c + 1) % 3], tri[(c + 2) % 3]};
    }
  }
  return pairs;
}

// Host: what the kernels compute, vertex by vertex, in the same order of operations. For tests;
// requires a valid mesh and lattice. Outside-lattice vertices keep their positions.
inline DeformedMesh EmulateDeformOnHost(const MeshView& mesh, const Lattice& lattice,
                                        DeformOutputs outputs) {
  const std::size_t n = mesh.vertex_count;
  std::vector<Vec4f> deformed(n);
  VisitLatticeOrder(LatticeOrder(lattice), [&](auto order) {
    constexpr int K = decltype(order)::value;
    const FfdParams<K> p = MakeFfdParams<K>(lattice);
    for (std::size_t v = 0; v < n; ++v) {
      const float x[3] = {mesh.positions[v * 3], mesh.positions[v * 3 + 1],
                          mesh.positions[v * 3 + 2]};
      float y[3];
      FfdVertex<K>(p, x, y);
      deformed[v] = Vec4f{y[0], y[1], y[2], 0.0f};
    }
    return 0;
  });
  DeformedMesh out;
  if (WantsPositions(outputs)) {
    out.positions.resize(n * 3);
    for (std::size_t v = 0; v < n; ++v) {
      out.positions[v * 3] = deformed[v].x;
      out.positions[v * 3 + 1] = deformed[v].y;
      out.positions[v * 3 + 2] = deformed[v].z;
    }
  }
  if (WantsNormals(outputs)) {
    const VertexFaceAdjacency adjacency = *BuildVertexFaceAdjacency(mesh);
    const std::vector<CornerPair> corners = BuildCornerPairs(mesh, adjacency);
    out.normals.resize(n * 3);
    for (std::size_t v = 0; v < n; ++v) {
      float sum[3] = {0.0f, 0.0f, 0.0f};
      for (std::uint32_t e = adjacency.offsets[v]; e < adjacency.offsets[v + 1]; ++e) {
        AccumulateCorner(deformed[v], deformed[corners[e].next], deformed[corners[e].prev], sum);
      }
      float unit[3];
      NormalizeOrZero(sum, unit);
      for (int a = 0; a < 3; ++a) out.normals[v * 3 + a] = unit[a];
    }
  }
  return out;
}

}  // namespace cuimg::internal

#endif  // CUIMG_KERNELS_SRC_DEFORM_MATH_H_
