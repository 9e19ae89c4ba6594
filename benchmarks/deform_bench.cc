// Kernel-time benchmark of Deform (FFD + smooth normals) on resident meshes, issue 6's workloads:
// median of >= 20 event-timed calls after warm-up, rotating among 3 lattices, with the memory
// floor (compulsory bytes over the measured copy bandwidth) and the time per call of 20 calls
// queued back to back. The float64 CPU reference runs on 16 threads (and 1) on the same machine
// as anchors, and paper 003's published figures are printed alongside. Before timing, the torus
// output is checked bit for bit against the host emulation of the kernels.
// Usage: deform_bench [--quick] [--filter SUBSTRING] [--no-cpu]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "bench_main.h"
#include "bench_util.h"
#include "cuimg/kernels/deform.h"
#include "cuimg/reference/deform_reference.h"
#include "cuimg/reference/mesh_generators.h"
#include "kernels/src/deform/deform_math.h"

namespace cuimg::bench {
namespace {

struct Workload {
  std::string name;
  int torus_n;  // torus_n x torus_n vertices
  int count;    // control points per axis
  DeformOutputs outputs;
  bool cpu_anchor;
  bool check;  // compare with the host emulation before timing
};

std::vector<Workload> Workloads() {
  return {
      {"deform_torus301_3x3x3_ffd_normals", 301, 3, DeformOutputs::kPositionsAndNormals, true,
       true},
      {"deform_torus301_3x3x3_positions", 301, 3, DeformOutputs::kPositions, false, false},
      {"deform_torus301_9x9x9_ffd_normals", 301, 9, DeformOutputs::kPositionsAndNormals, false,
       true},
      {"deform_torus1000_5x5x5_ffd_normals", 1000, 5, DeformOutputs::kPositionsAndNormals, true,
       false},
  };
}

// A lattice around the unit torus (R = 1, r = 0.35), sheared a little, with random displacements
// of up to 15 % of its size; the seed picks one of the rotating lattices.
Lattice TorusLattice(int count, std::uint64_t seed) {
  Lattice l = Lattice::Identity({-1.6, -1.6, -0.5}, {3.2, 0.1, 0}, {0.2, 3.1, 0}, {0, 0.3, 1.1},
                                count, count, count);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(-0.45, 0.45);
  for (double& x : l.displacements) x = d(rng);
  return l;
}

// Compulsory DRAM traffic of one call: positions in, positions out, normals out, the CSR offsets
// and incidences (8 B each, 3 per triangle). The float4 scratch normally stays in L2.
std::size_t BytesMoved(std::size_t v, std::size_t f, DeformOutputs outputs) {
  std::size_t bytes = 12 * v;
  if (WantsPositions(outputs)) bytes += 12 * v;
  if (WantsNormals(outputs)) bytes += 12 * v + 4 * (v + 1) + 24 * f;
  return bytes;
}

template <typename Fn>
double MedianWallUs(int runs, const Fn& fn) {
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn(i);
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

absl::Status Run(const Workload& w, double bandwidth, int runs, bool cpu, cudaStream_t stream) {
  CUIMG_ASSIGN_OR_RETURN(Mesh mesh, MakeTorus(w.torus_n, w.torus_n, 1.0, 0.35));
  CUIMG_ASSIGN_OR_RETURN(DeviceMesh d_mesh, DeviceMesh::Upload(mesh.view(), stream));
  constexpr int kLattices = 3;
  std::vector<Lattice> lattices;
  for (int i = 0; i < kLattices; ++i) lattices.push_back(TorusLattice(w.count, 100 + i));

  const std::size_t floats = mesh.positions.size();
  DeviceBuffer d_positions, d_normals;
  if (WantsPositions(w.outputs)) {
    CUIMG_ASSIGN_OR_RETURN(d_positions, DeviceBuffer::Allocate(floats * sizeof(float)));
  }
  if (WantsNormals(w.outputs)) {
    CUIMG_ASSIGN_OR_RETURN(d_normals, DeviceBuffer::Allocate(floats * sizeof(float)));
  }
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer workspace,
                         DeviceBuffer::Allocate(DeformWorkspaceBytes(d_mesh, w.outputs)));
  auto call = [&](int i) {
    return Deform(d_mesh, lattices[i % kLattices], d_positions.As<float>(), d_normals.As<float>(),
                  workspace.data(), stream);
  };

  std::string checked = "not checked";
  if (w.check) {
    CUIMG_ASSIGN_OR_RETURN(DeformedMesh got, DeformToHost(d_mesh, lattices[0], w.outputs, stream));
    const DeformedMesh want = internal::EmulateDeformOnHost(mesh.view(), lattices[0], w.outputs);
    checked = SameBits(got.positions, want.positions) && SameBits(got.normals, want.normals)
                  ? "bit-identical to host emulation"
                  : "MISMATCH vs host emulation";
  }

  CUIMG_ASSIGN_OR_RETURN(Timing t, TimeOnStream(stream, 5, runs, call));
  // 20 calls queued back to back: the launch gaps overlap (per-call throughput).
  constexpr int kBatch = 20;
  CUIMG_ASSIGN_OR_RETURN(Timing batch, TimeOnStream(stream, 1, 5, [&](int i) -> absl::Status {
                           for (int k = 0; k < kBatch; ++k) CUIMG_RETURN_IF_ERROR(call(i + k));
                           return absl::OkStatus();
                         }));
  const std::size_t bytes = BytesMoved(mesh.vertex_count(), mesh.triangle_count(), w.outputs);
  const double floor_us = bytes / bandwidth * 1e6;
  PrintJson(absl::StrFormat(
      "\"impl\":\"cuimg\",\"workload\":\"%s\",\"median_us\":%.2f,\"p10_us\":%.2f,"
      "\"p90_us\":%.2f,\"runs\":%d,\"launches\":%d,\"bytes_moved\":%zu,\"floor_us\":%.2f,"
      "\"x_floor\":%.2f,\"batched_us_per_call\":%.2f,\"vertices\":%zu,\"triangles\":%zu,"
      "\"plan\":\"FFD %dx%dx%d (float64 local coords, float32 Bernstein, %d control points) + "
      "%s; %s\"",
      w.name, t.median_us, t.p10_us, t.p90_us, t.runs, DeformLaunchCount(w.outputs), bytes,
      floor_us, t.median_us / floor_us, batch.median_us / kBatch, mesh.vertex_count(),
      mesh.triangle_count(), w.count, w.count, w.count, w.count * w.count * w.count,
      WantsNormals(w.outputs) ? "CSR-gather normals (programmatic dependent launch)" : "no normals",
      checked));
  if (absl::StrContains(checked, "MISMATCH")) {
    return absl::InternalError(w.name + ": GPU output differs from the host emulation");
  }

  if (cpu && w.cpu_anchor) {
    // The float64 reference with the adjacency built once (the CPU's "resident" mesh).
    CUIMG_ASSIGN_OR_RETURN(VertexFaceAdjacency adjacency, BuildVertexFaceAdjacency(mesh.view()));
    for (int threads : {16, 1}) {
      if (threads == 1 && w.torus_n > 301) continue;  // seconds per run
      const int cpu_runs = threads == 1 ? 3 : 7;
      (void)DeformReferenceF64(mesh.view(), adjacency, lattices[0], threads);  // warm-up
      const double us = MedianWallUs(cpu_runs, [&](int i) {
        (void)DeformReferenceF64(mesh.view(), adjacency, lattices[i % kLattices], threads);
      });
      PrintJson(absl::StrFormat(
          "\"anchor\":\"cpu%d\",\"workload\":\"cpu%d_%s\",\"median_us\":%.1f,\"runs\":%d,"
          "\"threads\":%d,\"note\":\"float64 reference, std::thread ParallelFor\"",
          threads, threads, w.name, us, cpu_runs, threads));
    }
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace cuimg::bench

int main(int argc, char** argv) {
  using namespace cuimg;
  bench::BenchArgs args;
  if (!bench::ParseBenchArgs(argc, argv, "deform_bench", true, &args)) return 2;
  absl::StatusOr<bench::BenchDevice> device = bench::StartBench();
  if (!device.ok()) {
    std::fprintf(stderr, "deform_bench: %s\n", device.status().ToString().c_str());
    return 1;
  }
  // Paper 003 (Izu et al.), for comparison: 90,633 V / 179,801 T, 3x3x3 lattice, FFD + normals
  // with the mesh kept on the GPU ("GPU2").
  bench::PrintJson(
      "\"impl\":\"paper\",\"workload\":\"deform_torus301_3x3x3_ffd_normals\","
      "\"source\":\"paper 003, 90,633 V / 179,801 T, 3x3x3\",\"gpu_us\":7610,"
      "\"gpu_hardware\":\"GeForce 9600GT (mesh resident)\",\"cpu1_us\":1323000,"
      "\"cpu4_us\":335000");
  return bench::RunWorkloads(bench::Workloads(), args.filter, [&](const auto& w) {
    return bench::Run(w, device->bandwidth, args.runs(), args.cpu, device->stream.get());
  });
}
