// Deform kernels: FFD (one thread per vertex) then normals (one thread per vertex, gathering its
// faces from the CSR), two launches with no atomics. The arithmetic lives in deform_math.h, shared
// with the host emulation; this file is built with -fmad=false (see kernels/CMakeLists.txt) so
// that only the explicit fmas fuse.
//
// Memory layout: the API's packed float32 xyz is read and written through shared memory with
// unit-stride (coalesced) accesses; the deformed positions the normals kernel gathers are a
// float4 copy in the workspace (one 128-bit load per gather); each incidence is the face's two
// other corners (8 bytes), so a normal needs no face -> vertex indirection.
//
// The normals kernel is launched as a programmatic dependent launch (Hopper): it starts while the
// FFD kernel finishes, loads its CSR range and first incidences (topology, written at upload), and
// only then waits for the FFD grid (griddepcontrol.wait: the FFD grid has completed and its writes
// are visible). Without PDL support the wait is a no-op and the stream orders the kernels.
#include "cuimg/kernels/deform.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "deform_math.h"

namespace cuimg {

struct DeviceMesh::Topology {
  std::size_t vertex_count = 0;
  std::size_t triangle_count = 0;
  DeviceBuffer triangles;  // triangle_count * 3 uint32
  DeviceBuffer offsets;    // vertex_count + 1 uint32
  DeviceBuffer corners;    // triangle_count * 3 CornerPair

  std::size_t Bytes() const { return triangles.size() + offsets.size() + corners.size(); }
};

namespace {

using internal::CornerPair;
using internal::FfdParams;
using internal::Vec4f;

constexpr int kFfdThreads = 256;
// Normals: a thread loads kCornerChunk incidences ahead and gathers their 2 * kCornerChunk
// positions at once. 6 covers the common valence (closed triangle meshes average 6 faces per
// vertex) in one round; higher valences take further rounds. 92 registers, no spills: 5 blocks
// of 128 per SM (the 90,601-vertex torus is 708 blocks, 1.07 waves on 132 SMs). Tuning knobs
// to measure: a chunk of 5 fits 80 registers (6 blocks, one wave) at the cost of a second
// round for valence 6.
constexpr int kNormalThreads = 128;
constexpr int kNormalBlocksPerSm = 5;
constexpr int kCornerChunk = 6;

__device__ __forceinline__ void AllowDependentLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void WaitForPrerequisiteGrids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// One thread per vertex. `out` (packed xyz) and `out4` (padded) may each be null.
template <int K>
__global__ void __launch_bounds__(kFfdThreads)
    FfdKernel(const float* __restrict__ in, float* __restrict__ out, Vec4f* __restrict__ out4,
              std::uint32_t n, const __grid_constant__ FfdParams<K> p) {
  __shared__ float tile[3 * kFfdThreads];
  // The dependent normals grid may start loading topology; its wait still covers this grid.
  AllowDependentLaunch();
  const std::uint32_t v0 = blockIdx.x * kFfdThreads;
  const int count = static_cast<int>(min(static_cast<std::uint32_t>(kFfdThreads), n - v0));
  const float* src = in + static_cast<std::size_t>(v0) * 3;
#pragma unroll
  for (int r = 0; r < 3; ++r) {  // 3 coalesced loads per thread, all in flight at once
    const int i = threadIdx.x + r * kFfdThreads;
    if (i < 3 * count) tile[i] = src[i];
  }
  __syncthreads();
  const int t = threadIdx.x;
  if (t < count) {
    const float x[3] = {tile[3 * t], tile[3 * t + 1], tile[3 * t + 2]};
    float y[3];
    internal::FfdVertex<K>(p, x, y);
    if (out4 != nullptr) out4[v0 + t] = Vec4f{y[0], y[1], y[2], 0.0f};
    // Only this thread's slots: no other thread reads them after the barrier above.
    tile[3 * t] = y[0];
    tile[3 * t + 1] = y[1];
    tile[3 * t + 2] = y[2];
  }
  if (out != nullptr) {  // uniform over the grid
    __syncthreads();
    float* dst = out + static_cast<std::size_t>(v0) * 3;
#pragma unroll
    for (int r = 0; r < 3; ++r) {
      const int i = threadIdx.x + r * kFfdThreads;
      if (i < 3 * count) dst[i] = tile[i];
    }
  }
}

__device__ __forceinline__ void LoadCorners(const CornerPair* __restrict__ corners,
                                            std::uint32_t begin, std::uint32_t end,
                                            CornerPair (&c)[kCornerChunk]) {
#pragma unroll
  for (int q = 0; q < kCornerChunk; ++q) {
    if (begin + q < end) c[q] = corners[begin + q];
  }
}

// One thread per vertex: sums the cross products of its faces in ascending face order.
__global__ void __launch_bounds__(kNormalThreads, kNormalBlocksPerSm)
    NormalsKernel(const Vec4f* pos, const std::uint32_t* __restrict__ offsets,
                  const CornerPair* __restrict__ corners, float* __restrict__ out,
                  std::uint32_t n) {
  __shared__ float tile[3 * kNormalThreads];
  const std::uint32_t v0 = blockIdx.x * kNormalThreads;
  const int count = static_cast<int>(min(static_cast<std::uint32_t>(kNormalThreads), n - v0));
  const int t = threadIdx.x;
  const std::uint32_t v = v0 + t;
  std::uint32_t begin = 0, end = 0;
  if (t < count) {
    begin = offsets[v];
    end = offsets[v + 1];
  }
  CornerPair c[kCornerChunk];
  LoadCorners(corners, begin, end, c);
  // Everything above is topology; positions come from the FFD grid.
  WaitForPrerequisiteGrids();
  if (t < count) {
    const Vec4f p = pos[v];
    float sum[3] = {0.0f, 0.0f, 0.0f};
    for (std::uint32_t e = begin;;) {
      Vec4f a[kCornerChunk], b[kCornerChunk];
#pragma unroll
      for (int q = 0; q < kCornerChunk; ++q) {
        if (e + q < end) {
          a[q] = pos[c[q].next];
          b[q] = pos[c[q].prev];
        }
      }
#pragma unroll
      for (int q = 0; q < kCornerChunk; ++q) {
        if (e + q < end) internal::AccumulateCorner(p, a[q], b[q], sum);
      }
      e += kCornerChunk;
      if (e >= end) break;
      LoadCorners(corners, e, end, c);
    }
    float unit[3];
    internal::NormalizeOrZero(sum, unit);
    tile[3 * t] = unit[0];
    tile[3 * t + 1] = unit[1];
    tile[3 * t + 2] = unit[2];
  }
  __syncthreads();
  float* dst = out + static_cast<std::size_t>(v0) * 3;
#pragma unroll
  for (int r = 0; r < 3; ++r) {
    const int i = t + r * kNormalThreads;
    if (i < 3 * count) dst[i] = tile[i];
  }
}

absl::Status LaunchFfd(const Lattice& lattice, const float* in, float* out, Vec4f* out4,
                       std::uint32_t n, cudaStream_t stream) {
  const unsigned blocks = (n + kFfdThreads - 1) / kFfdThreads;
  return internal::VisitLatticeOrder(internal::LatticeOrder(lattice), [&](auto order) {
    constexpr int K = decltype(order)::value;
    const FfdParams<K> params = internal::MakeFfdParams<K>(lattice);
    FfdKernel<K><<<blocks, kFfdThreads, 0, stream>>>(in, out, out4, n, params);
    CUIMG_CUDA_CHECK_LAUNCH(stream, "FfdKernel");
    return absl::OkStatus();
  });
}

absl::Status LaunchNormals(const DeviceMesh::Topology& topo, const Vec4f* pos, float* out,
                           std::uint32_t n, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3((n + kNormalThreads - 1) / kNormalThreads);
  config.blockDim = dim3(kNormalThreads);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  cudaLaunchAttribute attributes[1];
  attributes[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attributes[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attributes;
  config.numAttrs = 1;
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaLaunchKernelEx(&config, NormalsKernel, pos, topo.offsets.As<const std::uint32_t>(),
                         topo.corners.As<const CornerPair>(), out, n),
      "NormalsKernel launch");
  CUIMG_CUDA_CHECK_LAUNCH(stream, "NormalsKernel");
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<DeviceBuffer> UploadArray(const T* host, std::size_t count, cudaStream_t stream,
                                         const char* what) {
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::Allocate(count * sizeof(T)));
  if (count > 0) {
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(buffer.data(), host, count * sizeof(T), cudaMemcpyHostToDevice, stream),
        what);
  }
  return buffer;
}

bool Aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

}  // namespace

absl::StatusOr<DeviceMesh> DeviceMesh::Upload(const MeshView& mesh, cudaStream_t stream) {
  CUIMG_RETURN_IF_ERROR(ValidateMesh(mesh));
  CUIMG_ASSIGN_OR_RETURN(VertexFaceAdjacency adjacency, BuildVertexFaceAdjacency(mesh));
  const std::vector<CornerPair> corners = internal::BuildCornerPairs(mesh, adjacency);
  auto topology = std::make_shared<Topology>();
  topology->vertex_count = mesh.vertex_count;
  topology->triangle_count = mesh.triangle_count;
  CUIMG_ASSIGN_OR_RETURN(topology->triangles, UploadArray(mesh.triangles, mesh.triangle_count * 3,
                                                          stream, "upload mesh triangles"));
  CUIMG_ASSIGN_OR_RETURN(topology->offsets,
                         UploadArray(adjacency.offsets.data(), adjacency.offsets.size(), stream,
                                     "upload mesh adjacency offsets"));
  CUIMG_ASSIGN_OR_RETURN(topology->corners, UploadArray(corners.data(), corners.size(), stream,
                                                        "upload mesh adjacency"));
  DeviceMesh out;
  CUIMG_ASSIGN_OR_RETURN(out.positions_, UploadArray(mesh.positions, mesh.vertex_count * 3, stream,
                                                     "upload mesh positions"));
  out.vertex_count_ = mesh.vertex_count;
  out.topology_ = std::move(topology);
  // The host arrays above die with this call.
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "mesh upload");
  return out;
}

absl::StatusOr<DeviceMesh> DeviceMesh::WithPositions(const float* d_positions,
                                                     cudaStream_t stream) const {
  DeviceMesh out;
  CUIMG_ASSIGN_OR_RETURN(out.positions_, DeviceBuffer::Allocate(vertex_count_ * 3 * sizeof(float)));
  if (vertex_count_ > 0) {
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out.positions_.data(), d_positions, vertex_count_ * 3 * sizeof(float),
                        cudaMemcpyDeviceToDevice, stream),
        "copy resident positions");
  }
  out.vertex_count_ = vertex_count_;
  out.topology_ = topology_;
  return out;
}

std::size_t DeviceMesh::triangle_count() const { return topology_ ? topology_->triangle_count : 0; }

const std::uint32_t* DeviceMesh::triangles() const {
  return topology_ ? topology_->triangles.As<const std::uint32_t>() : nullptr;
}

std::size_t DeviceMesh::DeviceBytes() const {
  return positions_.size() + (topology_ ? topology_->Bytes() : 0);
}

std::size_t DeformWorkspaceBytes(const DeviceMesh& mesh, DeformOutputs outputs) {
  return WantsNormals(outputs) ? mesh.vertex_count() * sizeof(Vec4f) : 0;
}

int DeformLaunchCount(DeformOutputs outputs) { return WantsNormals(outputs) ? 2 : 1; }

absl::Status Deform(const DeviceMesh& mesh, const Lattice& lattice, float* d_positions,
                    float* d_normals, void* d_workspace, cudaStream_t stream) {
  CUIMG_RETURN_IF_ERROR(ValidateLattice(lattice));
  if (d_positions == nullptr && d_normals == nullptr) {
    return absl::InvalidArgumentError("outputs: at least one of positions and normals is needed");
  }
  if (!Aligned(d_positions, alignof(float)) || !Aligned(d_normals, alignof(float))) {
    return absl::InvalidArgumentError("outputs must be 4-byte aligned");
  }
  const std::size_t n = mesh.vertex_count();
  if (n == 0) return absl::OkStatus();
  if (n >= (std::size_t{1} << 32) - kFfdThreads) {
    return absl::InvalidArgumentError(absl::StrCat("mesh: ", n, " vertices is too many"));
  }
  const auto n32 = static_cast<std::uint32_t>(n);
  if (d_normals == nullptr) {
    return LaunchFfd(lattice, mesh.positions(), d_positions, nullptr, n32, stream);
  }
  if (d_workspace == nullptr || !Aligned(d_workspace, alignof(Vec4f))) {
    return absl::InvalidArgumentError(
        "workspace: DeformWorkspaceBytes() bytes of 16-byte aligned device memory are needed");
  }
  auto* deformed = static_cast<Vec4f*>(d_workspace);
  CUIMG_RETURN_IF_ERROR(LaunchFfd(lattice, mesh.positions(), d_positions, deformed, n32, stream));
  return LaunchNormals(*mesh.topology(), deformed, d_normals, n32, stream);
}

absl::StatusOr<DeformedMesh> DeformToHost(const DeviceMesh& mesh, const Lattice& lattice,
                                          DeformOutputs outputs, cudaStream_t stream) {
  CUIMG_RETURN_IF_ERROR(ValidateLattice(lattice));
  const std::size_t floats = mesh.vertex_count() * 3;
  DeviceBuffer d_positions, d_normals;
  if (WantsPositions(outputs)) {
    CUIMG_ASSIGN_OR_RETURN(d_positions, DeviceBuffer::Allocate(floats * sizeof(float)));
  }
  if (WantsNormals(outputs)) {
    CUIMG_ASSIGN_OR_RETURN(d_normals, DeviceBuffer::Allocate(floats * sizeof(float)));
  }
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer workspace,
                         DeviceBuffer::Allocate(DeformWorkspaceBytes(mesh, outputs)));
  DeformedMesh out;
  if (floats == 0) return out;
  CUIMG_RETURN_IF_ERROR(Deform(mesh, lattice, d_positions.As<float>(), d_normals.As<float>(),
                               workspace.data(), stream));
  if (WantsPositions(outputs)) {
    out.positions.resize(floats);
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out.positions.data(), d_positions.data(), floats * sizeof(float),
                        cudaMemcpyDeviceToHost, stream),
        "download positions");
  }
  if (WantsNormals(outputs)) {
    out.normals.resize(floats);
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out.normals.data(), d_normals.data(), floats * sizeof(float),
                        cudaMemcpyDeviceToHost, stream),
        "download normals");
  }
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "deform to host");
  return out;
}

absl::StatusOr<DeformedMesh> DeformMeshOnce(const MeshView& mesh, const Lattice& lattice,
                                            DeformOutputs outputs, cudaStream_t stream) {
  CUIMG_RETURN_IF_ERROR(ValidateLattice(lattice));
  CUIMG_ASSIGN_OR_RETURN(DeviceMesh device_mesh, DeviceMesh::Upload(mesh, stream));
  return DeformToHost(device_mesh, lattice, outputs, stream);
}

}  // namespace cuimg
