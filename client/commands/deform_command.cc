// `cuimg deform`: deforms a mesh file (or a generated torus) by a lattice and writes the result
// with smooth normals; --animate uploads the mesh once and sends a sequence of lattices against
// its handle, reporting frames per second. `cuimg mesh torus` writes the reference test mesh.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "client/commands/command_requests.h"
#include "client/commands/commands.h"
#include "client/io/mesh_file.h"
#include "client/io/volume_file.h"
#include "client/lattice_spec.h"
#include "client/request_building.h"
#include "cuimg/reference/mesh_generators.h"
#include "cuimg/v1/imaging_service.grpc.pb.h"
#include "proto/wire_contract.h"

namespace cuimg {
namespace {

int Usage(const std::string& message) {
  std::fprintf(stderr, "usage: %s\n", message.c_str());
  return kExitUsage;
}

std::vector<float> Floats(const std::string& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

// Uploads `mesh` in 1 MiB chunks; returns its handle.
absl::StatusOr<std::string> UploadMesh(v1::Imaging::Stub& stub, const ConnectionOptions& connection,
                                       const Mesh& mesh) {
  grpc::ClientContext context;
  PrepareContext(connection, &context);
  v1::UploadResponse response;
  auto writer = stub.Upload(&context, &response);
  std::string bytes(reinterpret_cast<const char*>(mesh.positions.data()),
                    mesh.positions.size() * 4);
  bytes.append(reinterpret_cast<const char*>(mesh.triangles.data()), mesh.triangles.size() * 4);
  v1::UploadRequest first;
  first.mutable_mesh()->set_vertex_count(static_cast<std::uint32_t>(mesh.vertex_count()));
  first.mutable_mesh()->set_triangle_count(static_cast<std::uint32_t>(mesh.triangle_count()));
  bool ok = writer->Write(first);
  constexpr std::size_t kChunk = 1 << 20;
  for (std::size_t off = 0; ok && off < bytes.size(); off += kChunk) {
    v1::UploadRequest chunk;
    chunk.set_chunk(bytes.substr(off, kChunk));
    ok = writer->Write(chunk);
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (!status.ok()) {
    return FromGrpcStatus(status);
  }
  return response.object().handle();
}

}  // namespace

int RunDeform(const ConnectionOptions& connection, const DeformCommand& c) {
  if (c.input.empty() || (c.output.empty() && c.animate == 0)) {
    return Usage(
        "cuimg deform --input MESH|torus:N,M --output OUT.obj|.ply|.stl "
        "[--lattice_file L.json | --lattice_counts 3x3x3 --twist DEG --bulge F] "
        "[--animate FRAMES]");
  }
  absl::StatusOr<Mesh> mesh = LoadMeshInput(c.input);
  if (!mesh.ok()) return ReportCommandError(mesh.status());
  absl::StatusOr<Lattice> lattice = DeformLattice(c, *mesh);
  if (!lattice.ok()) return ReportCommandError(lattice.status());
  auto stub = v1::Imaging::NewStub(MakeChannel(connection));

  if (c.animate > 0) {
    absl::StatusOr<std::string> handle = UploadMesh(*stub, connection, *mesh);
    if (!handle.ok()) {
      return ReportRpcError(handle.status());
    }
    const auto start = std::chrono::steady_clock::now();
    double kernel_us = 0;
    std::vector<double> frame_ms;  // round trip per frame
    frame_ms.reserve(static_cast<std::size_t>(c.animate));
    for (int f = 0; f < c.animate; ++f) {
      LatticeControls frame = c.controls;
      frame.twist_degrees = c.controls.twist_degrees * std::sin(2 * M_PI * f / c.animate);
      absl::StatusOr<Lattice> l = LatticeAroundMesh(*mesh, frame);
      if (!l.ok()) return Usage(std::string(l.status().message()));
      v1::DeformRequest request;
      request.mutable_mesh()->set_handle(*handle);
      ToProtoLattice(*l, request.mutable_lattice());
      grpc::ClientContext context;
      PrepareContext(connection, &context);
      v1::DeformResponse response;
      const auto sent = std::chrono::steady_clock::now();
      const grpc::Status status = stub->Deform(&context, request, &response);
      frame_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - sent)
              .count());
      if (!status.ok()) return ReportRpcError(status);
      kernel_us += std::max(0.0, ParseTimingTrailer(TimingTrailerText(context)).kernel_us);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    grpc::ClientContext context;
    v1::ReleaseRequest release;
    release.set_handle(*handle);
    v1::ReleaseResponse released;
    (void)stub->Release(&context, release, &released);
    std::sort(frame_ms.begin(), frame_ms.end());
    auto percentile = [&](double q) {
      return frame_ms[std::min(frame_ms.size() - 1, static_cast<std::size_t>(q * frame_ms.size()))];
    };
    std::printf(
        "%d frames of %zu vertices / %zu triangles in %.3f s: %.1f frames/s, round trip "
        "p50 %.3f ms p99 %.3f ms (server kernel %.1f us/frame mean)\n",
        c.animate, mesh->vertex_count(), mesh->triangle_count(), seconds, c.animate / seconds,
        percentile(0.5), percentile(0.99), kernel_us / c.animate);
    return kExitOk;
  }

  v1::DeformRequest request;
  ToProtoMesh(*mesh, request.mutable_mesh()->mutable_mesh());
  ToProtoLattice(*lattice, request.mutable_lattice());
  grpc::ClientContext context;
  PrepareContext(connection, &context);
  v1::DeformResponse response;
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = stub->Deform(&context, request, &response);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) return ReportRpcError(status);
  Mesh deformed{Floats(response.positions()), mesh->triangles};
  if (absl::Status s = WriteMeshFile(c.output, deformed, Floats(response.normals())); !s.ok()) {
    return Usage(std::string(s.message()));
  }
  std::printf("wrote %s (%zu vertices, %zu triangles, with normals) in %.2f ms; server: %s\n",
              c.output.c_str(), deformed.vertex_count(), deformed.triangle_count(), ms,
              TimingTrailerText(context).c_str());
  return kExitOk;
}

int RunMeshTorus(const MeshCommand& c) {
  if (c.output.empty() || c.n < 3 || c.m < 3) {
    return Usage("cuimg mesh torus --n 301 --m 301 --output torus.ply");
  }
  absl::StatusOr<Mesh> mesh = MakeTorus(c.n, c.m, 1.0, 0.35);
  if (!mesh.ok()) return Usage(std::string(mesh.status().message()));
  if (absl::Status s = WriteMeshFile(c.output, *mesh, TorusNormals(c.n, c.m)); !s.ok()) {
    return Usage(std::string(s.message()));
  }
  std::printf("wrote %s: %zu vertices, %zu triangles\n", c.output.c_str(), mesh->vertex_count(),
              mesh->triangle_count());
  return kExitOk;
}

}  // namespace cuimg
