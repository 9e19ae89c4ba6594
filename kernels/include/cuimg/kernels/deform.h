// Deform on the GPU: free-form deformation (Sederberg-Parry, Bernstein basis) of a mesh resident
// in device memory, with deterministic area-weighted vertex normals. Semantics are those of
// deform.proto and the CPU reference (cuimg/reference/deform_reference.h).
#ifndef CUIMG_KERNELS_DEFORM_H_
#define CUIMG_KERNELS_DEFORM_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/kernels/mesh.h"

namespace cuimg {

// A mesh in device memory: packed float32 positions and uint32 triangles as uploaded, plus what
// the normals kernel gathers over, built once at upload: the vertex -> face CSR offsets and, per
// incidence (ascending face order), the face's other two corners in winding order.
// Device memory: 12 B per vertex for positions + 4 B per vertex for offsets + 12 B per triangle
// + 24 B per triangle for the incidences. Move-only. Copies made by WithPositions share the
// topology (triangles, CSR); it is freed with the last mesh using it.
class DeviceMesh {
 public:
  DeviceMesh() = default;

  // Validates the mesh (INVALID_ARGUMENT naming the field: see ValidateMesh), builds the CSR on
  // the host, copies everything on `stream` and synchronizes it before returning (the host
  // staging memory is then released). RESOURCE_EXHAUSTED when device memory runs out.
  static absl::StatusOr<DeviceMesh> Upload(const MeshView& mesh, cudaStream_t stream);

  // A new resident mesh with this mesh's topology and positions copied from `d_positions`
  // (vertex_count() * 3 floats of device memory, e.g. a Deform output): keep_resident.
  // Asynchronous on `stream`: d_positions must stay valid until the stream reaches the copy.
  absl::StatusOr<DeviceMesh> WithPositions(const float* d_positions, cudaStream_t stream) const;

  std::size_t vertex_count() const { return vertex_count_; }
  std::size_t triangle_count() const;
  // Device pointers: vertex_count() * 3 floats and triangle_count() * 3 indices.
  const float* positions() const { return positions_.As<const float>(); }
  const std::uint32_t* triangles() const;
  // Device bytes this mesh holds, its shared topology included (for byte budgets).
  std::size_t DeviceBytes() const;

  // Opaque; defined where the kernels are launched.
  struct Topology;
  const Topology* topology() const { return topology_.get(); }

 private:
  std::shared_ptr<const Topology> topology_;
  DeviceBuffer positions_;
  std::size_t vertex_count_ = 0;
};

// Device workspace bytes Deform needs: 16 per vertex when normals are computed (the deformed
// positions, padded for 128-bit gathers), else 0.
std::size_t DeformWorkspaceBytes(const DeviceMesh& mesh, DeformOutputs outputs);
// Kernel launches of one Deform: 1 for positions only, 2 when normals are computed.
int DeformLaunchCount(DeformOutputs outputs);

// Deforms `mesh` by `lattice` into d_positions (vertex_count * 3 floats: X' inside the lattice,
// the original bits outside) and d_normals (vertex_count * 3 floats: area-weighted unit normals of
// the deformed mesh, (0, 0, 0) where the sum of face cross products is zero).
//
// Contract:
// - Either output may be null (positions only: 1 launch; normals only or both: 2 launches), not
//   both. Outputs are 4-byte aligned device memory; `d_workspace` is DeformWorkspaceBytes()
//   bytes, 16-byte aligned, used exclusively by this call until the stream reaches its end (null
//   when that is 0). Outputs must not overlap each other, the mesh or the workspace.
// - Validates the lattice (INVALID_ARGUMENT naming "lattice.<field>"); the mesh was validated at
//   upload. The lattice is copied into the launch (kernel parameters): it may be destroyed when
//   the call returns, and concurrent Deforms on other streams, even of the same mesh, do not
//   interfere.
// - Asynchronous on `stream`; nothing is allocated or synchronized.
// - Accuracy vs the float64 reference: positions within the float32 rounding of the coordinates
//   plus ~1e-7 x the displacements (identity lattice: bit for bit; measured <= 6e-7 x lattice
//   size), normals within ~2e-5 rad on well-shaped meshes (issue 6 asks 1e-5 x size, 1e-3 rad).
// - Kernel parameters carry the lattice: up to 8.8 KB for 9 x 9 x 9 (CUDA >= 12.1 drivers).
// - Deterministic: the same inputs give bit-identical outputs (no atomics; each normal sums its
//   faces in ascending order).
absl::Status Deform(const DeviceMesh& mesh, const Lattice& lattice, float* d_positions,
                    float* d_normals, void* d_workspace, cudaStream_t stream);

// Convenience for small meshes and tests: Deform with buffers allocated for this call, results
// copied to the host; synchronizes `stream`. Returns the arrays `outputs` asks for.
absl::StatusOr<DeformedMesh> DeformToHost(const DeviceMesh& mesh, const Lattice& lattice,
                                          DeformOutputs outputs, cudaStream_t stream);
// The stateless Deform of an inline mesh: Upload (validates the mesh), then DeformToHost.
absl::StatusOr<DeformedMesh> DeformMeshOnce(const MeshView& mesh, const Lattice& lattice,
                                            DeformOutputs outputs, cudaStream_t stream);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_DEFORM_H_
