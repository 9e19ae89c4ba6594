// GPU Deform: bit for bit equal to the host emulation of its arithmetic (deform_math.h), within
// issue 6's tolerances of the float64 reference (1e-5 x lattice size, 1e-3 rad) on the torus and
// on random meshes with non-orthogonal lattices of every count, on meshes over 4 MiB;
// deterministic; the output modes, inline meshes, resident copies and sizes 0, 1, odd. Labelled
// `gpu`; skips without a device.
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/kernels/deform.h"
#include "cuimg/reference/deform_reference.h"
#include "cuimg/reference/mesh_generators.h"
#include "kernels/src/deform/deform_math.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/mesh_testing.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

constexpr double kPositionTolerance = 1e-5;  // x lattice size
constexpr double kAngleTolerance = 1e-3;     // radians
constexpr double kMaxConditioning = 1e2;     // see NormalConditioning

Mesh Torus(int n, int m) {
  absl::StatusOr<Mesh> mesh = MakeTorus(n, m, 1.0, 0.35);
  EXPECT_TRUE(mesh.ok());
  return *std::move(mesh);
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string FirstDifference(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) {
    return "sizes " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      return "vertex " + std::to_string(i / 3) + " axis " + std::to_string(i % 3) + ": " +
             std::to_string(got[i]) + " vs " + std::to_string(want[i]);
    }
  }
  return "none";
}

class DeformGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CUIMG_SKIP_IF_NO_GPU();
    absl::StatusOr<CudaStream> stream = CudaStream::Create();
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = *std::move(stream);
  }

  DeviceMesh Upload(const Mesh& mesh) {
    absl::StatusOr<DeviceMesh> d = DeviceMesh::Upload(mesh.view(), stream_.get());
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *std::move(d) : DeviceMesh();
  }

  DeformedMesh Run(const DeviceMesh& mesh, const Lattice& lattice,
                   DeformOutputs outputs = DeformOutputs::kPositionsAndNormals) {
    absl::StatusOr<DeformedMesh> got = DeformToHost(mesh, lattice, outputs, stream_.get());
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? *std::move(got) : DeformedMesh();
  }

  // GPU == host emulation bit for bit, and both within tolerance of the float64 reference.
  void ExpectMatches(const Mesh& mesh, const DeviceMesh& d_mesh, const Lattice& lattice,
                     const std::string& what) {
    const DeformedMesh got = Run(d_mesh, lattice);
    const DeformedMesh emulated =
        internal::EmulateDeformOnHost(mesh.view(), lattice, DeformOutputs::kPositionsAndNormals);
    EXPECT_TRUE(SameBits(got.positions, emulated.positions))
        << what << " positions: " << FirstDifference(got.positions, emulated.positions);
    EXPECT_TRUE(SameBits(got.normals, emulated.normals))
        << what << " normals: " << FirstDifference(got.normals, emulated.normals);

    absl::StatusOr<DeformedMeshF64> want = DeformReferenceF64(mesh.view(), lattice);
    ASSERT_TRUE(want.ok()) << want.status();
    const testing::Deviation d =
        testing::Compare(got.positions, got.normals, want->positions, want->normals,
                         testing::NormalConditioning(want->positions, mesh), kMaxConditioning);
    const double size = testing::LatticeSize(lattice);
    EXPECT_LE(d.max_position, kPositionTolerance * size) << what << " vertex " << d.worst_vertex;
    EXPECT_LE(d.max_angle, kAngleTolerance) << what;
    EXPECT_GT(d.compared_normals, mesh.vertex_count() / 2) << what;
  }

  CudaStream stream_;
};

TEST_F(DeformGpuTest, TorusMatchesReference) {
  const Mesh mesh = Torus(301, 301);
  const DeviceMesh d_mesh = Upload(mesh);
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 3; ++trial) {
    ExpectMatches(mesh, d_mesh, testing::RandomLattice(rng, {0, 0, 0}, 3.5, 3, 3, 0.2),
                  "torus 3x3x3 #" + std::to_string(trial));
  }
  ExpectMatches(mesh, d_mesh, testing::RandomLattice(rng, {0, 0, 0}, 3.5, 5, 5, 0.2),
                "torus 5x5x5");
}

TEST_F(DeformGpuTest, RandomMeshesWithLatticesOfEveryCountMatchReference) {
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 24; ++trial) {
    // Vertex counts around block boundaries: 1, 255, 256, 257, odd, larger.
    const std::size_t sizes[] = {1, 255, 256, 257, 1001, 4099, 20000, 65537};
    const std::size_t v = sizes[trial % 8];
    const testing::Vec3d center{3.0 * (trial % 4), -1.0, 0.5 * trial};
    const Mesh mesh = testing::RandomSoupMesh(rng, v, v == 1 ? 0 : 2 * v, center, 3.0);
    const DeviceMesh d_mesh = Upload(mesh);
    Lattice l = testing::RandomLattice(rng, center, 2.5, 2, 9, 0.4);
    // Make sure every count appears on every axis.
    l.count_s = 2 + trial % 8;
    l.count_t = 2 + (trial + 3) % 8;
    l.count_u = 2 + (trial * 5) % 8;
    l.displacements.resize(3 * l.ControlPointCount());
    for (double& x : l.displacements) x = 0.4 * std::uniform_real_distribution<double>(-1, 1)(rng);
    ExpectMatches(mesh, d_mesh, l, "random #" + std::to_string(trial));
  }
}

TEST_F(DeformGpuTest, MeshesOverFourMebibytes) {
  const Mesh mesh = Torus(700, 700);  // 490,000 vertices: 5.9 MB positions, 11.8 MB triangles
  ASSERT_GT(mesh.positions.size() * sizeof(float), std::size_t{4} << 20);
  const DeviceMesh d_mesh = Upload(mesh);
  std::mt19937_64 rng(3);
  ExpectMatches(mesh, d_mesh, testing::RandomLattice(rng, {0, 0, 0}, 3.5, 2, 9, 0.2), "700x700");
}

TEST_F(DeformGpuTest, IdentityLatticeReturnsPositionsBitForBitAndOwnNormals) {
  const Mesh mesh = Torus(301, 301);
  const DeviceMesh d_mesh = Upload(mesh);
  const Lattice l = Lattice::Identity({-2, -2, -1}, {4, 0, 0}, {0, 4, 0}, {0, 0, 2}, 4, 4, 4);
  const DeformedMesh got = Run(d_mesh, l);
  EXPECT_TRUE(SameBits(got.positions, mesh.positions));
  const absl::StatusOr<std::vector<float>> own = VertexNormalsReference(mesh.view());
  ASSERT_TRUE(own.ok());
  for (std::size_t v = 0; v < mesh.vertex_count(); ++v) {
    ASSERT_LT(testing::AngleBetween(&got.normals[v * 3], &(*own)[v * 3]), 1e-5) << v;
  }
}

TEST_F(DeformGpuTest, IsBitIdenticalAcrossRunsAndStreams) {
  const Mesh mesh = Torus(301, 301);
  const DeviceMesh d_mesh = Upload(mesh);
  std::mt19937_64 rng(4);
  const Lattice l = testing::RandomLattice(rng, {0, 0, 0}, 3.5, 2, 9, 0.3);
  const DeformedMesh a = Run(d_mesh, l);
  const DeformedMesh b = Run(d_mesh, l);
  absl::StatusOr<CudaStream> other = CudaStream::Create();
  ASSERT_TRUE(other.ok());
  absl::StatusOr<DeformedMesh> c =
      DeformToHost(d_mesh, l, DeformOutputs::kPositionsAndNormals, other->get());
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(SameBits(a.positions, b.positions));
  EXPECT_TRUE(SameBits(a.normals, b.normals));
  EXPECT_TRUE(SameBits(a.positions, c->positions));
  EXPECT_TRUE(SameBits(a.normals, c->normals));
}

TEST_F(DeformGpuTest, PositionsOnlyAndNormalsOnlyEqualTheCombinedRun) {
  std::mt19937_64 rng(5);
  const Mesh mesh = testing::RandomSoupMesh(rng, 30001, 60000, {0, 0, 0}, 2.0);
  const DeviceMesh d_mesh = Upload(mesh);
  const Lattice l = testing::RandomLattice(rng, {0, 0, 0}, 1.8, 2, 9, 0.3);
  const DeformedMesh both = Run(d_mesh, l);
  const DeformedMesh positions = Run(d_mesh, l, DeformOutputs::kPositions);
  const DeformedMesh normals = Run(d_mesh, l, DeformOutputs::kNormals);
  EXPECT_TRUE(SameBits(positions.positions, both.positions));
  EXPECT_TRUE(positions.normals.empty());
  EXPECT_TRUE(SameBits(normals.normals, both.normals));
  EXPECT_TRUE(normals.positions.empty());
}

TEST_F(DeformGpuTest, InlineMeshEqualsResidentMesh) {
  const Mesh mesh = Torus(64, 48);
  std::mt19937_64 rng(6);
  const Lattice l = testing::RandomLattice(rng, {0, 0, 0}, 3.5, 2, 9, 0.3);
  absl::StatusOr<DeformedMesh> inline_result =
      DeformMeshOnce(mesh.view(), l, DeformOutputs::kPositionsAndNormals, stream_.get());
  ASSERT_TRUE(inline_result.ok()) << inline_result.status();
  const DeformedMesh resident = Run(Upload(mesh), l);
  EXPECT_TRUE(SameBits(inline_result->positions, resident.positions));
  EXPECT_TRUE(SameBits(inline_result->normals, resident.normals));
}

TEST_F(DeformGpuTest, KeptResidentMeshDeformsFromTheDeformedPositions) {
  const Mesh mesh = Torus(90, 70);
  const DeviceMesh d_mesh = Upload(mesh);
  std::mt19937_64 rng(7);
  const Lattice l = testing::RandomLattice(rng, {0, 0, 0}, 3.5, 3, 5, 0.3);
  // Deform into device buffers, keep the result resident, then deform it by the identity.
  const std::size_t floats = mesh.positions.size();
  absl::StatusOr<DeviceBuffer> d_positions = DeviceBuffer::Allocate(floats * sizeof(float));
  absl::StatusOr<DeviceBuffer> workspace =
      DeviceBuffer::Allocate(DeformWorkspaceBytes(d_mesh, DeformOutputs::kPositions));
  ASSERT_TRUE(d_positions.ok() && workspace.ok());
  CUIMG_ASSERT_OK(
      Deform(d_mesh, l, d_positions->As<float>(), nullptr, workspace->data(), stream_.get()));
  absl::StatusOr<DeviceMesh> kept = d_mesh.WithPositions(d_positions->As<float>(), stream_.get());
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->vertex_count(), d_mesh.vertex_count());
  EXPECT_EQ(kept->triangle_count(), d_mesh.triangle_count());
  EXPECT_EQ(kept->triangles(), d_mesh.triangles());  // shared topology
  EXPECT_GT(kept->DeviceBytes(), floats * sizeof(float));
  const DeformedMesh first = Run(d_mesh, l);
  const DeformedMesh again =
      Run(*kept, Lattice::Identity({-2, -2, -1}, {4, 0, 0}, {0, 4, 0}, {0, 0, 2}, 2, 2, 2));
  EXPECT_TRUE(SameBits(again.positions, first.positions));
  EXPECT_TRUE(SameBits(again.normals, first.normals));
}

TEST_F(DeformGpuTest, EmptyMeshAndIsolatedVertices) {
  const DeviceMesh empty = Upload(Mesh{});
  EXPECT_EQ(empty.vertex_count(), 0u);
  const Lattice l = Lattice::Identity({0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, 3, 3, 3);
  const DeformedMesh none = Run(empty, l);
  EXPECT_TRUE(none.positions.empty());

  Mesh points;  // vertices only: every normal is the zero fallback
  points.positions = {0.5f, 0.5f, 0.5f, 2.0f, 2.0f, 2.0f, 0.1f, 0.9f, 0.3f};
  Lattice bent = l;
  for (double& d : bent.displacements) d = 0.1;
  const DeformedMesh got = Run(Upload(points), bent);
  ASSERT_EQ(got.normals.size(), 9u);
  for (float n : got.normals) EXPECT_EQ(n, 0.0f);
  EXPECT_FLOAT_EQ(got.positions[0], 0.6f);  // inside: moved by the uniform displacement
  EXPECT_EQ(got.positions[3], 2.0f);        // outside: unchanged
}

TEST_F(DeformGpuTest, RejectsMissingWorkspaceAndBadLattice) {
  const Mesh mesh = Torus(8, 8);
  const DeviceMesh d_mesh = Upload(mesh);
  absl::StatusOr<DeviceBuffer> out = DeviceBuffer::Allocate(mesh.positions.size() * 4);
  ASSERT_TRUE(out.ok());
  const Lattice l = Lattice::Identity({0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, 3, 3, 3);
  EXPECT_THAT(Deform(d_mesh, l, nullptr, out->As<float>(), nullptr, stream_.get()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("workspace")));
  Lattice flat = l;
  flat.u = {1, 1, 0};
  EXPECT_THAT(Deform(d_mesh, flat, out->As<float>(), nullptr, nullptr, stream_.get()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("lattice: s, t and u must span a volume")));
}

}  // namespace
}  // namespace cuimg
