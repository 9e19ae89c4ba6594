// The float64 Deform reference against the properties FFD must have (identity, translation,
// affine invariance, corner interpolation, outside vertices untouched) and the normal definition
// (area weighting, open meshes, degenerate faces, isolated vertices); mesh and lattice validation;
// the vertex -> face CSR; the torus generator. CPU only.
#include "cuimg/reference/deform_reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <random>

#include "cuimg/kernels/mesh.h"
#include "cuimg/reference/mesh_generators.h"
#include "tests/testing/mesh_testing.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using testing::AngleBetween;
using testing::BoxLattice;
using testing::ErrorIs;
using ::testing::HasSubstr;
using testing::StatusIs;
using testing::Vec3d;

Mesh Torus(int n, int m, double r_major = 1.0, double r_minor = 0.35) {
  absl::StatusOr<Mesh> mesh = MakeTorus(n, m, r_major, r_minor);
  EXPECT_TRUE(mesh.ok()) << mesh.status();
  return *std::move(mesh);
}

// A lattice enclosing the default torus (|x|, |y| <= 1.35, |z| <= 0.35), a little sheared.
Lattice EnclosingLattice(int cs, int ct, int cu) {
  return Lattice::Identity({-1.6, -1.6, -0.5}, {3.2, 0.1, 0}, {0.2, 3.1, 0}, {0, 0.3, 1.1}, cs, ct,
                           cu);
}

// The rest position of control point (i, j, k).
Vec3d RestPoint(const Lattice& l, int i, int j, int k) {
  Vec3d p;
  for (int a = 0; a < 3; ++a) {
    p[a] = l.origin[a] + static_cast<double>(i) / (l.count_s - 1) * l.s[a] +
           static_cast<double>(j) / (l.count_t - 1) * l.t[a] +
           static_cast<double>(k) / (l.count_u - 1) * l.u[a];
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Validation

TEST(DeformMeshValidation, AcceptsTorusAndEmptyMesh) {
  CUIMG_EXPECT_OK(ValidateMesh(Torus(10, 7)));
  CUIMG_EXPECT_OK(ValidateMesh(Mesh{}));
}

// positions and triangles are bytes fields on the wire: the error names the field, its message
// the index.
TEST(DeformMeshValidation, NamesNonFiniteCoordinate) {
  Mesh mesh = Torus(5, 5);
  mesh.positions[7] = std::nanf("");
  EXPECT_THAT(ValidateMesh(mesh),
              ErrorIs(absl::StatusCode::kInvalidArgument, "VALUE_OUT_OF_RANGE", "mesh.positions"));
  EXPECT_THAT(ValidateMesh(mesh).message(),
              HasSubstr("mesh.positions: float 7 (vertex 2) must be finite"));
  mesh.positions[7] = INFINITY;
  EXPECT_THAT(
      ValidateMesh(mesh, "mesh.mesh"),
      ErrorIs(absl::StatusCode::kInvalidArgument, "VALUE_OUT_OF_RANGE", "mesh.mesh.positions"));
}

TEST(DeformMeshValidation, NamesOutOfRangeIndex) {
  Mesh mesh = Torus(5, 5);
  mesh.triangles[4] = 25;
  EXPECT_THAT(ValidateMesh(mesh),
              ErrorIs(absl::StatusCode::kInvalidArgument, "VALUE_OUT_OF_RANGE", "mesh.triangles"));
  EXPECT_THAT(ValidateMesh(mesh).message(),
              HasSubstr("mesh.triangles: index 4 (triangle 1) is 25, out of range: vertex_count "
                        "is 25"));
}

TEST(DeformMeshValidation, RejectsPartialVerticesAndTriangles) {
  Mesh mesh = Torus(5, 5);
  mesh.positions.push_back(0);
  EXPECT_THAT(ValidateMesh(mesh),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mesh.positions")));
  mesh = Torus(5, 5);
  mesh.triangles.pop_back();
  EXPECT_THAT(ValidateMesh(mesh),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mesh.triangles")));
}

TEST(DeformLatticeValidation, AcceptsValidLatticesOfAllCounts) {
  for (int c = kMinLatticeCount; c <= kMaxLatticeCount; ++c) {
    CUIMG_EXPECT_OK(ValidateLattice(EnclosingLattice(c, 2, kMaxLatticeCount)));
  }
}

TEST(DeformLatticeValidation, NamesCountsOutOfRange) {
  EXPECT_THAT(ValidateLattice(EnclosingLattice(1, 3, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("lattice.count_s: must be in [2, 9], got 1")));
  EXPECT_THAT(ValidateLattice(EnclosingLattice(3, 0, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lattice.count_t")));
  EXPECT_THAT(ValidateLattice(EnclosingLattice(3, 3, 10)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lattice.count_u")));
}

TEST(DeformLatticeValidation, NamesDisplacementSizeAndValues) {
  Lattice l = EnclosingLattice(3, 3, 3);
  l.displacements.pop_back();
  EXPECT_THAT(ValidateLattice(l),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("lattice.displacements: must hold 3 * count_s * count_t * "
                                 "count_u = 81 values, got 80")));
  l = EnclosingLattice(3, 3, 3);
  l.displacements[5] = NAN;
  EXPECT_THAT(ValidateLattice(l), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("lattice.displacements[5]: must be finite")));
}

TEST(DeformLatticeValidation, NamesNonFiniteOriginAndAxes) {
  Lattice l = EnclosingLattice(2, 2, 2);
  l.origin[1] = INFINITY;
  EXPECT_THAT(ValidateLattice(l), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("lattice.origin.y: must be finite")));
  l = EnclosingLattice(2, 2, 2);
  l.u[2] = NAN;
  EXPECT_THAT(ValidateLattice(l, "request.lattice"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("request.lattice.u.z")));
}

TEST(DeformLatticeValidation, RejectsFlatAndZeroAxes) {
  Lattice l = EnclosingLattice(2, 2, 2);
  l.u = {l.s[0] + l.t[0], l.s[1] + l.t[1], l.s[2] + l.t[2]};  // coplanar
  EXPECT_THAT(ValidateLattice(l),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must span a volume")));
  l.u = {0, 0, 0};
  EXPECT_THAT(ValidateLattice(l), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("lattice: s, t and u must span")));
  // Thin but above the 1e-9 sine-volume threshold: allowed (non-orthogonal axes need not be nice).
  l = Lattice::Identity({0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 1e-7}, 2, 2, 2);
  CUIMG_EXPECT_OK(ValidateLattice(l));
  l.u[2] = 1e-10;
  EXPECT_THAT(ValidateLattice(l), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(DeformLatticeValidation, ReferenceRejectsInvalidInputsNamingTheField) {
  const Mesh mesh = Torus(6, 6);
  EXPECT_THAT(DeformReference(mesh.view(), EnclosingLattice(3, 1, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lattice.count_t")));
  Mesh bad = mesh;
  bad.triangles[0] = 1000;
  EXPECT_THAT(DeformReference(bad.view(), EnclosingLattice(3, 3, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mesh.triangles: index 0")));
}

TEST(DeformLatticeGeometry, InverseSolvesForLocalCoordinates) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const Lattice l = testing::RandomLattice(rng, {1, -2, 3}, 2.5);
    const Vec3d local{0.1 + 0.04 * trial, 0.9 - 0.03 * trial, 0.5};
    Vec3d x;
    for (int a = 0; a < 3; ++a) {
      x[a] = l.origin[a] + local[0] * l.s[a] + local[1] * l.t[a] + local[2] * l.u[a];
    }
    const Vec3d got = LatticeLocalCoordinates(l, x);
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(got[a], local[a], 1e-13);
  }
}

// ---------------------------------------------------------------------------------------------
// Vertex -> face CSR

TEST(DeformVertexFaceAdjacency, MatchesBruteForceInAscendingFaceOrder) {
  std::mt19937_64 rng(11);
  const Mesh mesh = testing::RandomSoupMesh(rng, 300, 700, {0, 0, 0}, 1.0);
  absl::StatusOr<VertexFaceAdjacency> adj = BuildVertexFaceAdjacency(mesh.view());
  ASSERT_THAT(adj, testing::IsOk());
  ASSERT_EQ(adj->offsets.size(), mesh.vertex_count() + 1);
  ASSERT_EQ(adj->faces.size(), mesh.triangles.size());
  EXPECT_EQ(adj->offsets.front(), 0u);
  for (std::uint32_t v = 0; v < mesh.vertex_count(); ++v) {
    std::vector<std::uint32_t> want;  // one entry per corner holding v, ascending by face
    for (std::uint32_t f = 0; f < mesh.triangle_count(); ++f) {
      for (int c = 0; c < 3; ++c) {
        if (mesh.triangles[f * 3 + c] == v) want.push_back(f);
      }
    }
    const std::vector<std::uint32_t> got(adj->faces.begin() + adj->offsets[v],
                                         adj->faces.begin() + adj->offsets[v + 1]);
    ASSERT_EQ(got, want) << "vertex " << v;
  }
}

TEST(DeformVertexFaceAdjacency, IsDeterministicAndHandlesIsolatedAndEmpty) {
  Mesh mesh = Torus(7, 5);
  mesh.positions.insert(mesh.positions.end(), {5, 5, 5});  // isolated vertex 35
  const auto a = BuildVertexFaceAdjacency(mesh.view());
  const auto b = BuildVertexFaceAdjacency(mesh.view());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->offsets, b->offsets);
  EXPECT_EQ(a->faces, b->faces);
  EXPECT_EQ(a->offsets[35], a->offsets[36]);
  for (std::uint32_t v = 0; v < 35; ++v) EXPECT_EQ(a->offsets[v + 1] - a->offsets[v], 6u);

  const auto empty = BuildVertexFaceAdjacency(MeshView{});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->offsets, std::vector<std::uint32_t>{0});
  EXPECT_TRUE(empty->faces.empty());
}

TEST(DeformVertexFaceAdjacency, RejectsOutOfRangeIndex) {
  Mesh mesh = Torus(4, 4);
  mesh.triangles[10] = 99;
  EXPECT_THAT(BuildVertexFaceAdjacency(mesh.view()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mesh.triangles[10] = 99")));
}

// ---------------------------------------------------------------------------------------------
// Torus generator

TEST(DeformTorusGenerator, HasTheReferenceSizesAndOutwardWinding) {
  const Mesh seed = Torus(301, 301);
  EXPECT_EQ(seed.vertex_count(), 90601u);
  EXPECT_EQ(seed.triangle_count(), 181202u);
  CUIMG_EXPECT_OK(ValidateMesh(seed));

  const int n = 24, m = 16;
  const Mesh mesh = Torus(n, m);
  const std::vector<float> analytic = TorusNormals(n, m);
  for (std::size_t f = 0; f < mesh.triangle_count(); ++f) {
    const std::uint32_t* t = &mesh.triangles[f * 3];
    const float* p0 = &mesh.positions[t[0] * 3];
    const float* p1 = &mesh.positions[t[1] * 3];
    const float* p2 = &mesh.positions[t[2] * 3];
    const double a[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
    const double b[3] = {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
    const double c[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                         a[0] * b[1] - a[1] * b[0]};
    EXPECT_LT(AngleBetween(c, &analytic[t[0] * 3]), M_PI / 4) << "face " << f;
  }
}

TEST(DeformTorusGenerator, RejectsBadArguments) {
  EXPECT_THAT(MakeTorus(2, 10, 1, 0.3), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(MakeTorus(10, 10, 1, 0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(MakeTorus(10, 10, NAN, 0.3), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(DeformVertexNormals, ConvergeToTheAnalyticTorusNormals) {
  // Area-weighted normals of a regular torus grid converge quadratically: doubling the
  // resolution must at least halve the worst angle.
  double previous = 0;
  for (int n : {30, 60, 120}) {
    const Mesh mesh = Torus(n, n);
    absl::StatusOr<std::vector<float>> normals = VertexNormalsReference(mesh.view());
    ASSERT_TRUE(normals.ok());
    const std::vector<float> analytic = TorusNormals(n, n);
    double worst = 0;
    for (std::size_t v = 0; v < mesh.vertex_count(); ++v) {
      worst = std::max(worst, AngleBetween(&(*normals)[v * 3], &analytic[v * 3]));
      const float* u = &(*normals)[v * 3];
      EXPECT_NEAR(std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]), 1.0, 1e-6);
    }
    if (previous > 0) {
      EXPECT_LT(worst, 0.5 * previous) << "n = " << n;
    }
    previous = worst;
  }
}

// ---------------------------------------------------------------------------------------------
// FFD properties

TEST(DeformReference, IdentityLatticeKeepsPositionsAndNormals) {
  const Mesh mesh = Torus(61, 41);
  const absl::StatusOr<std::vector<float>> own = VertexNormalsReference(mesh.view());
  ASSERT_TRUE(own.ok());
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 6; ++trial) {
    // Identity lattices of random counts and axes that enclose the torus.
    Lattice l = testing::RandomLattice(rng, {0, 0, 0}, 5.0, 2, 9, 0.0);
    const double size = testing::LatticeSize(l);
    absl::StatusOr<DeformedMeshF64> got = DeformReferenceF64(mesh.view(), l);
    ASSERT_TRUE(got.ok()) << got.status();
    for (std::size_t i = 0; i < mesh.positions.size(); ++i) {
      ASSERT_NEAR(got->positions[i], mesh.positions[i], 1e-6 * size) << "coordinate " << i;
    }
    for (std::size_t v = 0; v < mesh.vertex_count(); ++v) {
      ASSERT_LT(AngleBetween(&got->normals[v * 3], &(*own)[v * 3]), 1e-6) << "vertex " << v;
    }
  }
}

TEST(DeformReference, TranslationMovesEveryInsideVertexAndKeepsNormals) {
  const Mesh mesh = Torus(50, 30);
  const absl::StatusOr<std::vector<float>> own = VertexNormalsReference(mesh.view());
  ASSERT_TRUE(own.ok());
  for (int c = kMinLatticeCount; c <= kMaxLatticeCount; ++c) {
    Lattice l = EnclosingLattice(c, kMaxLatticeCount + kMinLatticeCount - c, 2 + c % 3);
    const Vec3d d{0.25, -0.5, 0.125};
    for (std::size_t i = 0; i < l.displacements.size(); ++i) l.displacements[i] = d[i % 3];
    absl::StatusOr<DeformedMeshF64> got = DeformReferenceF64(mesh.view(), l);
    ASSERT_TRUE(got.ok());
    for (std::size_t i = 0; i < mesh.positions.size(); ++i) {
      ASSERT_NEAR(got->positions[i], mesh.positions[i] + d[i % 3], 1e-12) << "count " << c;
    }
    for (std::size_t v = 0; v < mesh.vertex_count(); ++v) {
      ASSERT_LT(AngleBetween(&got->normals[v * 3], &(*own)[v * 3]), 1e-6);
    }
  }
}

// P' = A P + b for every control point gives X' = A X + b, and the area-weighted normals
// become normalize(sign(det A) A^-T n), for rotations, shears, non-uniform scales and mirrors.
TEST(DeformReference, AffineControlPointsMapVerticesAndNormalsAffinely) {
  const Mesh mesh = Torus(40, 24);
  const absl::StatusOr<DeformedMeshF64> rest =
      DeformReferenceF64(mesh.view(), EnclosingLattice(2, 2, 2));
  ASSERT_TRUE(rest.ok());
  const double maps[][9] = {
      {0.8, -0.6, 0, 0.6, 0.8, 0, 0, 0, 1},      // rotation about z
      {1, 0.7, 0.2, 0, 1, -0.4, 0, 0, 1},        // shear
      {2.5, 0, 0, 0, 0.4, 0, 0, 0, 1.7},         // non-uniform scale
      {-1, 0.1, 0, 0.2, 1.3, 0.3, 0.1, 0, 0.9},  // mirror (det < 0) with shear
  };
  const Vec3d b{0.3, -1.2, 2.0};
  for (const auto& a : maps) {
    for (int counts : {2, 3, 5, 9}) {
      Lattice l = EnclosingLattice(counts, counts == 9 ? 4 : counts, counts == 2 ? 7 : counts);
      for (int i = 0; i < l.count_s; ++i) {
        for (int j = 0; j < l.count_t; ++j) {
          for (int k = 0; k < l.count_u; ++k) {
            const Vec3d p = RestPoint(l, i, j, k);
            for (int r = 0; r < 3; ++r) {
              const double mapped = a[r * 3] * p[0] + a[r * 3 + 1] * p[1] + a[r * 3 + 2] * p[2];
              l.displacements[l.ControlPointIndex(i, j, k) * 3 + r] = mapped + b[r] - p[r];
            }
          }
        }
      }
      absl::StatusOr<DeformedMeshF64> got = DeformReferenceF64(mesh.view(), l);
      ASSERT_TRUE(got.ok());
      // Cofactor matrix = det(A) A^-T: cross products transform by it.
      const double cof[9] = {
          a[4] * a[8] - a[5] * a[7], a[5] * a[6] - a[3] * a[8], a[3] * a[7] - a[4] * a[6],
          a[2] * a[7] - a[1] * a[8], a[0] * a[8] - a[2] * a[6], a[1] * a[6] - a[0] * a[7],
          a[1] * a[5] - a[2] * a[4], a[2] * a[3] - a[0] * a[5], a[0] * a[4] - a[1] * a[3]};
      for (std::size_t v = 0; v < mesh.vertex_count(); ++v) {
        const float* x = &mesh.positions[v * 3];
        for (int r = 0; r < 3; ++r) {
          const double want = a[r * 3] * x[0] + a[r * 3 + 1] * x[1] + a[r * 3 + 2] * x[2] + b[r];
          ASSERT_NEAR(got->positions[v * 3 + r], want, 1e-11) << "vertex " << v;
        }
        const double* n = &rest->normals[v * 3];
        const double want_n[3] = {cof[0] * n[0] + cof[1] * n[1] + cof[2] * n[2],
                                  cof[3] * n[0] + cof[4] * n[1] + cof[5] * n[2],
                                  cof[6] * n[0] + cof[7] * n[1] + cof[8] * n[2]};
        ASSERT_LT(AngleBetween(&got->normals[v * 3], want_n), 1e-9) << "vertex " << v;
      }
    }
  }
}

TEST(DeformReference, InterpolatesCornerControlPoints) {
  std::mt19937_64 rng(5);
  const Lattice l = testing::RandomLattice(rng, {0.5, 0.5, 0.5}, 2.0, 2, 9, 0.3);
  for (int corner = 0; corner < 8; ++corner) {
    const int i = (corner & 1) ? l.count_s - 1 : 0;
    const int j = (corner & 2) ? l.count_t - 1 : 0;
    const int k = (corner & 4) ? l.count_u - 1 : 0;
    const Vec3d rest = RestPoint(l, i, j, k);
    const Vec3d got = DeformPointReference(l, rest);
    for (int a = 0; a < 3; ++a) {
      EXPECT_NEAR(got[a], rest[a] + l.displacements[l.ControlPointIndex(i, j, k) * 3 + a], 1e-12)
          << "corner " << corner;
    }
  }
}

TEST(DeformReference, VerticesOnLatticeFacesAreInside) {
  // Axes of 2, 3 and 0.1: local coordinates of face points are 1 up to the rounding of the
  // inverse (1/3, 10), which the inside tolerance absorbs.
  Lattice l = BoxLattice({-1, -1, 0.5}, {2, 3, 0.1}, 3, 4, 2);
  for (std::size_t i = 0; i < l.displacements.size(); ++i) {
    l.displacements[i] = 0.01 * static_cast<double>(i % 7 + 1);
  }
  const Vec3d on_faces[] = {{1, 0, 0.55}, {-1, 0.3, 0.52}, {0.2, 2, 0.53}, {0.2, -1, 0.6},
                            {0, 0, 0.5},  {0.1, 0.1, 0.6}, {1, 2, 0.6},    {-1, -1, 0.5}};
  for (const Vec3d& x : on_faces) {
    const Vec3d local = LatticeLocalCoordinates(l, x);
    EXPECT_TRUE(InsideLattice(local)) << x[0] << "," << x[1] << "," << x[2];
    const Vec3d got = DeformPointReference(l, x);
    EXPECT_GT(std::abs(got[0] - x[0]) + std::abs(got[1] - x[1]) + std::abs(got[2] - x[2]), 1e-3)
        << "a point on a face must move with the face's control points";
  }
  // Just outside a face: unchanged.
  const Vec3d outside[] = {{1 + 1e-9, 0, 0.55}, {0, 0, 0.5 - 1e-9}, {0.2, 2.0000001, 0.53}};
  for (const Vec3d& x : outside) {
    EXPECT_FALSE(InsideLattice(LatticeLocalCoordinates(l, x)));
    EXPECT_EQ(DeformPointReference(l, x), x);
  }
}

TEST(DeformReference, LeavesVerticesOutsideTheLatticeBitForBit) {
  std::mt19937_64 rng(9);
  const Mesh mesh = testing::RandomSoupMesh(rng, 4000, 8000, {0, 0, 0}, 4.0);
  const Lattice l = testing::RandomLattice(rng, {0.3, 0.2, -0.1}, 2.0, 2, 9, 0.3);
  absl::StatusOr<DeformedMesh> got = DeformReference(mesh.view(), l);
  ASSERT_TRUE(got.ok());
  int inside = 0, outside = 0;
  for (std::size_t v = 0; v < mesh.vertex_count(); ++v) {
    const float* x = &mesh.positions[v * 3];
    const bool in = InsideLattice(LatticeLocalCoordinates(l, {x[0], x[1], x[2]}));
    (in ? inside : outside)++;
    if (!in) {
      ASSERT_EQ(std::memcmp(&got->positions[v * 3], x, 3 * sizeof(float)), 0) << "vertex " << v;
    }
  }
  EXPECT_GT(inside, 100);
  EXPECT_GT(outside, 100);
}

// ---------------------------------------------------------------------------------------------
// Normals: open meshes, degenerate faces, isolated vertices

TEST(DeformReference, OpenMeshNormalsIncludingTheBoundary) {
  const Mesh patch = testing::GridPatch(9, 7, 2.0, 1.5);
  absl::StatusOr<std::vector<float>> own = VertexNormalsReference(patch.view());
  ASSERT_TRUE(own.ok());
  for (std::size_t v = 0; v < patch.vertex_count(); ++v) {
    EXPECT_EQ((*own)[v * 3], 0.0f);
    EXPECT_EQ((*own)[v * 3 + 1], 0.0f);
    EXPECT_EQ((*own)[v * 3 + 2], 1.0f);
  }
  // Bend the patch: u = z axis displacement of the middle control points lifts the centre; the
  // boundary normals tilt outward-up and stay unit.
  Lattice l = BoxLattice({-0.1, -0.1, -0.5}, {2.2, 1.7, 1.0}, 3, 3, 2);
  for (int k = 0; k < 2; ++k) l.displacements[l.ControlPointIndex(1, 1, k) * 3 + 2] = 0.8;
  absl::StatusOr<DeformedMesh> got = DeformReference(patch.view(), l);
  ASSERT_TRUE(got.ok());
  for (std::size_t v = 0; v < patch.vertex_count(); ++v) {
    const float* n = &got->normals[v * 3];
    EXPECT_NEAR(std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]), 1.0, 1e-6);
    EXPECT_GT(n[2], 0.3f);
  }
  EXPECT_LT(got->normals[0], 0.0f);  // corner (0, 0) leans towards -x
}

TEST(DeformReference, IsolatedVerticesAndZeroAreaFacesGetTheZeroFallback) {
  Mesh mesh = testing::GridPatch(3, 3, 1.0, 1.0);  // vertices 0..8, normals +z
  const std::uint32_t isolated = 9, lonely = 10, twin_a = 11, twin_b = 12;
  mesh.positions.insert(mesh.positions.end(), {0.5f, 0.5f, 0.5f,  // 9: isolated
                                               0.2f, 0.7f, 0.1f,  // 10: only degenerate faces
                                               0.3f, 0.3f, 0.3f,  // 11 and 12 coincide
                                               0.3f, 0.3f, 0.3f});
  const Mesh clean = mesh;
  const std::uint32_t degenerate[] = {
      lonely, lonely, 4,       // repeated index
      lonely, 4,      lonely,  // repeated index
      twin_a, twin_b, 4,       // coincident corners
      0,      0,      8,       // zero area at vertex 0
  };
  mesh.triangles.insert(mesh.triangles.end(), std::begin(degenerate), std::end(degenerate));
  for (const Lattice& l : {BoxLattice({-1, -1, -1}, {3, 3, 3}, 2, 2, 2),
                           BoxLattice({-1, -1, -1}, {3, 3, 3}, 3, 3, 3)}) {
    Lattice bent = l;
    for (std::size_t i = 2; i < bent.displacements.size(); i += 5) bent.displacements[i] = 0.2;
    absl::StatusOr<DeformedMeshF64> got = DeformReferenceF64(mesh.view(), bent);
    absl::StatusOr<DeformedMeshF64> want = DeformReferenceF64(clean.view(), bent);
    ASSERT_TRUE(got.ok() && want.ok());
    for (std::uint32_t v : {isolated, lonely, twin_a, twin_b}) {
      EXPECT_EQ(got->normals[v * 3], 0.0);
      EXPECT_EQ(got->normals[v * 3 + 1], 0.0);
      EXPECT_EQ(got->normals[v * 3 + 2], 0.0);
    }
    // Zero-area faces add exactly nothing to the other vertices' sums.
    for (std::uint32_t v = 0; v < 9; ++v) {
      for (int a = 0; a < 3; ++a) EXPECT_EQ(got->normals[v * 3 + a], want->normals[v * 3 + a]);
    }
  }
}

TEST(DeformReference, FlippedWindingFlipsNormals) {
  Mesh mesh = Torus(20, 12);
  Mesh flipped = mesh;
  for (std::size_t f = 0; f < flipped.triangle_count(); ++f) {
    std::swap(flipped.triangles[f * 3 + 1], flipped.triangles[f * 3 + 2]);
  }
  Lattice l = EnclosingLattice(3, 3, 3);
  for (std::size_t i = 0; i < l.displacements.size(); ++i) l.displacements[i] = 0.05 * (i % 5);
  absl::StatusOr<DeformedMesh> a = DeformReference(mesh.view(), l);
  absl::StatusOr<DeformedMesh> b = DeformReference(flipped.view(), l);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->positions, b->positions);
  for (std::size_t i = 0; i < a->normals.size(); ++i) {
    EXPECT_NEAR(a->normals[i], -b->normals[i], 1e-6);
  }
}

// ---------------------------------------------------------------------------------------------
// Outputs and determinism

TEST(DeformReference, ReturnsOnlyTheRequestedArrays) {
  const Mesh mesh = Torus(10, 8);
  const Lattice l = EnclosingLattice(3, 3, 3);
  absl::StatusOr<DeformedMesh> both = DeformReference(mesh.view(), l);
  absl::StatusOr<DeformedMesh> positions =
      DeformReference(mesh.view(), l, DeformOutputs::kPositions);
  absl::StatusOr<DeformedMesh> normals = DeformReference(mesh.view(), l, DeformOutputs::kNormals);
  ASSERT_TRUE(both.ok() && positions.ok() && normals.ok());
  EXPECT_EQ(both->positions.size(), mesh.positions.size());
  EXPECT_EQ(both->normals.size(), mesh.positions.size());
  EXPECT_EQ(positions->positions, both->positions);
  EXPECT_TRUE(positions->normals.empty());
  EXPECT_EQ(normals->normals, both->normals);
  EXPECT_TRUE(normals->positions.empty());
}

TEST(DeformReference, IsBitIdenticalAcrossRunsAndThreadCounts) {
  std::mt19937_64 rng(21);
  const Mesh mesh = testing::RandomSoupMesh(rng, 20000, 40000, {0, 0, 0}, 2.0);
  const Lattice l = testing::RandomLattice(rng, {0, 0, 0}, 1.8, 2, 9, 0.3);
  absl::StatusOr<DeformedMeshF64> one = DeformReferenceF64(mesh.view(), l, 1);
  absl::StatusOr<DeformedMeshF64> four = DeformReferenceF64(mesh.view(), l, 4);
  absl::StatusOr<DeformedMeshF64> again = DeformReferenceF64(mesh.view(), l, 4);
  ASSERT_TRUE(one.ok() && four.ok() && again.ok());
  EXPECT_EQ(one->positions, four->positions);
  EXPECT_EQ(one->normals, four->normals);
  EXPECT_EQ(four->normals, again->normals);
}

}  // namespace
}  // namespace cuimg
