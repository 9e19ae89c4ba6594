// The Deform kernels' arithmetic (kernels/src/deform/deform_math.h), run on the host, against the
// float64 reference: the accuracy the GPU must reach is checked here, without a GPU, because the
// kernels execute exactly this code (deform_gpu_test checks the GPU equals this emulation bit for
// bit). Also the kernels' incidence layout and the host-side checks of the GPU entry points. CPU
// only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cuimg/kernels/deform.h"
#include "cuimg/kernels/mesh.h"
#include "cuimg/reference/deform_reference.h"
#include "cuimg/reference/mesh_generators.h"
#include "kernels/src/deform/deform_math.h"
#include "tests/testing/mesh_testing.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

// Issue 6's accuracy targets for the GPU: 1e-5 x lattice size, 1e-3 rad.
constexpr double kPositionTolerance = 1e-5;
constexpr double kAngleTolerance = 1e-3;
// Normals are compared where rounding of the positions is amplified less than this (see
// NormalConditioning); well-shaped meshes are ~1.
constexpr double kMaxConditioning = 1e2;

Mesh Torus(int n, int m) {
  absl::StatusOr<Mesh> mesh = MakeTorus(n, m, 1.0, 0.35);
  EXPECT_TRUE(mesh.ok());
  return *std::move(mesh);
}

testing::Deviation EmulationVsReference(const Mesh& mesh, const Lattice& lattice) {
  const DeformedMesh got =
      internal::EmulateDeformOnHost(mesh.view(), lattice, DeformOutputs::kPositionsAndNormals);
  absl::StatusOr<DeformedMeshF64> want = DeformReferenceF64(mesh.view(), lattice);
  EXPECT_TRUE(want.ok()) << want.status();
  const std::vector<double> kappa = testing::NormalConditioning(want->positions, mesh);
  return testing::Compare(got.positions, got.normals, want->positions, want->normals, kappa,
                          kMaxConditioning);
}

TEST(DeformKernelMath, BernsteinWeightsMatchTheBinomialFormula) {
  for (int degree = 1; degree <= 8; ++degree) {
    for (double s : {0.0, 1e-7, 0.1, 0.25, 0.5, 0.7, 0.999999, 1.0}) {
      float w[kMaxLatticeCount];
      internal::BernsteinWeights<kMaxLatticeCount>(s, degree, w);
      double binomial = 1;
      for (int i = 0; i < kMaxLatticeCount; ++i) {
        if (i > degree) {
          EXPECT_EQ(w[i], 0.0f);
          continue;
        }
        const double want = binomial * std::pow(s, i) * std::pow(1 - s, degree - i);
        EXPECT_NEAR(w[i], want, 4e-7) << "degree " << degree << " i " << i << " s " << s;
        binomial = binomial * (degree - i) / (i + 1);
      }
    }
  }
}

TEST(DeformKernelMath, IdentityLatticeReturnsPositionsBitForBit) {
  const Mesh mesh = Torus(101, 67);
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 4; ++trial) {
    const Lattice l = testing::RandomLattice(rng, {0, 0, 0}, 3.5, 2, 9, 0.0);
    const DeformedMesh got =
        internal::EmulateDeformOnHost(mesh.view(), l, DeformOutputs::kPositions);
    ASSERT_EQ(std::memcmp(got.positions.data(), mesh.positions.data(),
                          mesh.positions.size() * sizeof(float)),
              0);
  }
}

TEST(DeformKernelMath, TorusThreeCubedMatchesReference) {
  const Mesh mesh = Torus(301, 301);
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 3; ++trial) {
    Lattice l = testing::RandomLattice(rng, {0, 0, 0}, 3.5, 3, 3, 0.2);
    const testing::Deviation d = EmulationVsReference(mesh, l);
    const double size = testing::LatticeSize(l);
    EXPECT_LE(d.max_position, kPositionTolerance * size);
    EXPECT_LE(d.max_angle, kAngleTolerance);
    // Only triangles straddling the lattice boundary (where a displaced lattice face tears the
    // mesh) are ill-conditioned.
    EXPECT_GT(d.compared_normals, mesh.vertex_count() * 99 / 100);
    std::printf("torus 3x3x3: max position error %.3g (%.3g x lattice size), max angle %.3g rad\n",
                d.max_position, d.max_position / size, d.max_angle);
  }
}

TEST(DeformKernelMath, RandomMeshesAndLatticesOfAllCountsMatchReference) {
  std::mt19937_64 rng(3);
  double worst_rel = 0, worst_angle = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const testing::Vec3d center{10.0 * (trial % 3), -5.0, 2.0 * (trial % 5)};
    const Mesh mesh = testing::RandomSoupMesh(rng, 3000, 6000, center, 3.0);
    // Counts 2..9 per axis, non-orthogonal axes, displacements up to 40 % of the size.
    const Lattice l = testing::RandomLattice(rng, center, 2.5, 2, 9, 0.4);
    const testing::Deviation d = EmulationVsReference(mesh, l);
    const double size = testing::LatticeSize(l);
    EXPECT_LE(d.max_position, kPositionTolerance * size) << "trial " << trial;
    EXPECT_LE(d.max_angle, kAngleTolerance) << "trial " << trial;
    EXPECT_GT(d.compared_normals, mesh.vertex_count() / 2);
    worst_rel = std::max(worst_rel, d.max_position / size);
    worst_angle = std::max(worst_angle, d.max_angle);
  }
  std::printf("random meshes: worst position error %.3g x lattice size, worst angle %.3g rad\n",
              worst_rel, worst_angle);
}

TEST(DeformKernelMath, FarFromTheOriginStaysAccurate) {
  // A lattice 1000 units from the origin: local coordinates in float64 keep the error at the
  // float32 rounding of the positions themselves.
  std::mt19937_64 rng(4);
  const testing::Vec3d center{1000, -2000, 500};
  const Mesh mesh = testing::RandomSoupMesh(rng, 2000, 4000, center, 3.0);
  const Lattice l = testing::RandomLattice(rng, center, 2.5, 2, 9, 0.3);
  const testing::Deviation d = EmulationVsReference(mesh, l);
  // float32 spacing at 2000 is 1.2e-4: the output rounding alone is 6e-5.
  EXPECT_LE(d.max_position, 1.3e-4);
}

TEST(DeformKernelMath, CornerPairsAreRotationsOfTheFaces) {
  std::mt19937_64 rng(5);
  const Mesh mesh = testing::RandomSoupMesh(rng, 200, 500, {0, 0, 0}, 1.0);
  const VertexFaceAdjacency adj = *BuildVertexFaceAdjacency(mesh.view());
  const std::vector<internal::CornerPair> pairs = internal::BuildCornerPairs(mesh.view(), adj);
  ASSERT_EQ(pairs.size(), adj.faces.size());
  for (std::uint32_t v = 0; v < mesh.vertex_count(); ++v) {
    int repeat = 0;  // the how-many-th corner of the same face holding v
    for (std::uint32_t e = adj.offsets[v]; e < adj.offsets[v + 1]; ++e) {
      repeat = (e > adj.offsets[v] && adj.faces[e - 1] == adj.faces[e]) ? repeat + 1 : 0;
      const std::uint32_t* t = &mesh.triangles[adj.faces[e] * 3];
      int corner = -1;
      for (int c = 0, seen = 0; c < 3; ++c) {
        if (t[c] == v && seen++ == repeat) corner = c;
      }
      ASSERT_GE(corner, 0);
      EXPECT_EQ(pairs[e].next, t[(corner + 1) % 3]);
      EXPECT_EQ(pairs[e].prev, t[(corner + 2) % 3]);
    }
  }
}

TEST(DeformKernelMath, ZeroSumNormalsAreZero) {
  float zero[3] = {0, 0, 0}, out[3] = {1, 1, 1};
  internal::NormalizeOrZero(zero, out);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 0.0f);
  // Tiny and huge sums normalize without underflow or overflow.
  float tiny[3] = {1e-40f, 0, 0}, huge[3] = {3e38f, 3e38f, 0};
  internal::NormalizeOrZero(tiny, out);
  EXPECT_EQ(out[0], 1.0f);
  internal::NormalizeOrZero(huge, out);
  EXPECT_NEAR(out[0], std::sqrt(0.5), 1e-7);
}

TEST(DeformKernelMath, KernelParametersPadTheDisplacements) {
  std::mt19937_64 rng(6);
  Lattice l = testing::RandomLattice(rng, {0, 0, 0}, 1.0, 2, 9, 0.3);
  l.count_s = 2;
  l.count_t = 5;
  l.count_u = 3;
  l.displacements.resize(3 * l.ControlPointCount(), 0.5);
  for (std::size_t i = 0; i < l.displacements.size(); ++i) l.displacements[i] = 0.001 * i;
  const auto p = internal::MakeFfdParams<5>(l);
  EXPECT_EQ(p.degree[0], 1);
  EXPECT_EQ(p.degree[1], 4);
  EXPECT_EQ(p.degree[2], 2);
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 5; ++j) {
      for (int k = 0; k < 5; ++k) {
        for (int a = 0; a < 3; ++a) {
          const float got = p.displacement[((i * 5 + j) * 5 + k) * 3 + a];
          const bool real = i < l.count_s && j < l.count_t && k < l.count_u;
          const float want =
              real ? static_cast<float>(l.displacements[l.ControlPointIndex(i, j, k) * 3 + a])
                   : 0.0f;
          ASSERT_EQ(got, want) << i << j << k << a;
        }
      }
    }
  }
}

// The GPU entry points check what they can before touching the device.
TEST(DeformHostChecks, UploadRejectsInvalidMeshNamingTheField) {
  Mesh mesh = Torus(5, 5);
  mesh.triangles[3] = 25;
  EXPECT_THAT(DeviceMesh::Upload(mesh.view(), nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("mesh.triangles: index 3 (triangle 1)")));
  mesh = Torus(5, 5);
  mesh.positions[2] = NAN;
  EXPECT_THAT(DeformMeshOnce(mesh.view(),
                             Lattice::Identity({0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, 3, 3, 3),
                             DeformOutputs::kPositionsAndNormals, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("mesh.positions: float 2 (vertex 0)")));
}

TEST(DeformHostChecks, DeformRejectsInvalidLatticeAndOutputs) {
  const DeviceMesh empty;
  Lattice bad = Lattice::Identity({0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, 3, 11, 3);
  float dummy[3];
  EXPECT_THAT(Deform(empty, bad, dummy, nullptr, nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lattice.count_t")));
  const Lattice good = Lattice::Identity({0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, 3, 3, 3);
  EXPECT_THAT(Deform(empty, good, nullptr, nullptr, nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("outputs")));
  EXPECT_EQ(DeformWorkspaceBytes(empty, DeformOutputs::kPositionsAndNormals), 0u);
  EXPECT_EQ(DeformLaunchCount(DeformOutputs::kPositions), 1);
  EXPECT_EQ(DeformLaunchCount(DeformOutputs::kNormals), 2);
}

}  // namespace
}  // namespace cuimg
