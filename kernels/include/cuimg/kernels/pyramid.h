// Bilinear image pyramid on the GPU: a plan built once on the host, run asynchronously on a
// stream, writing every level into one packed buffer.
#ifndef CUIMG_KERNELS_PYRAMID_H_
#define CUIMG_KERNELS_PYRAMID_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/pyramid_types.h"

namespace cuimg {

// A pyramid prepared for one input type and 2D extent (pyramid_types.h has the level list and
// the spec). Pixels are OpenCV cv::resize INTER_LINEAR samples (half-pixel centres, clamped at the
// borders, PyramidReference has the exact rule) computed in float32; a level of the source's size
// is a copy. OpenCV itself uses 11-bit fixed point for 8-bit images, so u8 results differ from
// cv::resize by at most 1 while f32 ones agree to float rounding.
// FROM_BASE: ONE launch samples every level from the input (a block per rectangle of 128 columns
// and 24-32 rows of the input, the rows chosen so that the blocks spread evenly over the current
// device's SMs; it stages its rectangle once and writes every level's outputs from it; above 64
// levels, one launch per 64).
// CASCADED: level i needs level i-1 complete, so the first launch writes levels 0 and 1 (both from
// the input) and each later level is one launch reading the previous level's f32 values (from the
// output when it is f32, else from a two-level ping-pong in the workspace).
// Copyable and immutable.
//
// Contract of Run():
// - Input pixel types u8, u16, i16, f32; one channel; 2D. Output type f32 or the input type.
// - `in`: device pointer to extent.Pixels() elements, densely packed; only read. `out`: device
//   pointer to OutputBytes() bytes, 256-byte aligned; level i is Levels()[i].width x height
//   elements of the output type, densely packed, at Levels()[i].offset_bytes. Bytes between
//   levels are left alone. `out` must not overlap `in` or the workspace.
// - `workspace`: WorkspaceBytes() bytes of device memory, 256-byte aligned (may be null when 0),
//   used exclusively by this call until the stream reaches its end. Non-zero only for CASCADED
//   with an integer output type and at least 3 levels.
// - Asynchronous on `stream`; the caller synchronizes. Kernel parameters are copied at launch, so
//   the plan may be destroyed once Run() returns.
// - Results equal PyramidReference bit for bit (f32 up to the sign of zero) for finite inputs.
//   Non-finite f32 inputs follow IEEE arithmetic of the same formula, where a tap of weight 0
//   still multiplies its pixel (inf * 0 is NaN).
// - Deterministic: the same inputs give the same outputs.
class PyramidPlan {
 public:
  // The errors of PlanPyramidLevels (INVALID_ARGUMENT).
  static absl::StatusOr<PyramidPlan> Create(PixelType type, const Extent& extent,
                                            const PyramidSpec& spec);

  const std::vector<PyramidLevel>& Levels() const;
  std::size_t OutputBytes() const;
  std::size_t WorkspaceBytes() const;
  absl::Status Run(const void* in, void* out, void* workspace, cudaStream_t stream) const;

  PixelType type() const;
  const Extent& extent() const;
  const PyramidSpec& spec() const;
  // Kernel launches Run() makes (1 for FROM_BASE up to 64 levels).
  int LaunchCount() const;
  // Mode, levels and blocks, for logs and benchmarks.
  std::string Describe() const;

  // Opaque; defined where the kernels are launched.
  struct Impl;

 private:
  PyramidPlan() = default;

  std::shared_ptr<const Impl> impl_;
};

}  // namespace cuimg

#endif  // CUIMG_KERNELS_PYRAMID_H_
