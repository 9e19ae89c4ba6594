// The mask steps of a Morphology chain on the GPU, built on the labelling's union-find:
// remove_small, keep_largest, and binary reconstruction (hole filling of masks, marker
// seeding). Definitions in label_reference.h; each equals its CPU reference bit for bit.
//
// Common contract:
// - One channel, any pixel type (U32 included), 2D or 3D, 1..kMaxLabelPixels pixels; `d_in` and
//   `d_out` hold extent.Pixels() elements of `type`, densely packed, x fastest. `d_out` may be
//   `d_in` itself (the steps read each input pixel before writing its output) but must not
//   otherwise overlap it, nor the workspace.
// - `workspace`: MaskStepWorkspaceBytes(extent) bytes of device memory, 256-byte aligned, used
//   exclusively by the call until the stream reaches its end.
// - Asynchronous on `stream`; nothing is synchronized. Deterministic. Four to six launches,
//   none of whose work grows with the components' shapes.
// - INVALID_ARGUMENT (the field named as the validators of label_types.h name it) for a spec that
//   does not suit the extent.
#ifndef CUIMG_KERNELS_MASK_STEPS_H_
#define CUIMG_KERNELS_MASK_STEPS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/label_types.h"

namespace cuimg {

// 4 bytes a pixel (the union-find's links) and 256 more.
std::size_t MaskStepWorkspaceBytes(const Extent& extent);

// remove_small (RemoveSmallReference). min_voxels >= 0.
absl::Status RemoveSmallOnDevice(PixelType type, const Extent& extent, Connectivity connectivity,
                                 std::int64_t min_voxels, const void* d_in, void* d_out,
                                 void* workspace, cudaStream_t stream);

// keep_largest (KeepLargestReference).
absl::Status KeepLargestOnDevice(PixelType type, const Extent& extent, Connectivity connectivity,
                                 const void* d_in, void* d_out, void* workspace,
                                 cudaStream_t stream);

// Binary reconstruction (FillUnseededComponentsReference). With spec.seed_marker, `d_marker`
// holds extent.Pixels() elements of `marker_type`, all read before any output is written (so it
// may be any buffer, `d_out` included); otherwise it is not read and may be null.
absl::Status FillUnseededComponentsOnDevice(PixelType type, const Extent& extent,
                                            const SeededFillSpec& spec, const void* d_in,
                                            const void* d_marker, PixelType marker_type,
                                            void* d_out, void* workspace, cudaStream_t stream);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_MASK_STEPS_H_
