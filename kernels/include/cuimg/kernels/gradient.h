// Gaussian-derivative gradient on the GPU: a plan built once on the host, run asynchronously on a
// stream.
#ifndef CUIMG_KERNELS_GRADIENT_H_
#define CUIMG_KERNELS_GRADIENT_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/gradient_types.h"

namespace cuimg {

// A gradient prepared for one pixel type, extent and spec (gradient_types.h has the definition).
// Run() is ONE fused kernel launch that writes gx and gy (and magnitude / angle when asked) once.
// Radius <= 4 (kernel length <= 9, the default 7 included) on slices taller than the radius: one
// warp per 120x5 output strip, the column then row passes in registers with the halo columns
// shuffled between lanes. Otherwise each block loads a 64x64 tile plus its halo (converted to
// f32, reflected at the borders) into shared memory, runs the row pass into shared memory, then
// the column pass. Volumes are processed slice by slice in the same launch. Copyable and
// immutable.
//
// Contract of Run():
// - Input pixel types u8, u16, i16, f32; one channel; 2D (depth 1) or a volume (each slice alone).
// - `in` is a device pointer to extent.Pixels() elements of the plan's type, densely packed (x
//   fastest); it is only read. `gx`, `gy` are device pointers to extent.Pixels() floats.
//   `magnitude` and `angle` likewise when the spec asks for them, and must be null otherwise
//   (INVALID_ARGUMENT on a mismatch). No output may overlap another output or `in`.
// - No workspace. Asynchronous on `stream`: nothing is synchronized; the caller synchronizes.
// - Results equal GradientReference (float64) to float32 rounding of the f32 taps and sums: the
//   relative error over an image is ~1e-7, each pixel within ~1e-6 of the largest |gradient|.
//   magnitude = sqrtf(gx^2 + gy^2) and angle = atan2f(gy, gx) of the f32 gx, gy.
// - Fastest when width is a multiple of 4 and every pointer is 16-byte aligned (vector loads and
//   stores); any width and alignment of the element size works.
// - Deterministic: the same inputs give the same outputs.
class GradientPlan {
 public:
  // INVALID_ARGUMENT for U32 (CheckFilterPixelType), an invalid spec (ValidateGradientSpec) or an
  // empty extent.
  static absl::StatusOr<GradientPlan> Create(PixelType type, const Extent& extent,
                                             const GradientSpec& spec);

  absl::Status Run(const void* in, float* gx, float* gy, float* magnitude, float* angle,
                   cudaStream_t stream) const;

  // The taps the kernel applies (float32), index j for offset j - radius; see GradientTaps.
  const std::vector<float>& SmoothingTaps() const;
  const std::vector<float>& DerivativeTaps() const;
  // The resolved sigma (spec.sigma, or the default for the length when that is 0).
  double sigma() const;

  PixelType type() const;
  const Extent& extent() const;
  const GradientSpec& spec() const;
  // Kernel launches Run() makes: always 1.
  int LaunchCount() const { return 1; }
  // The kernel (strips or tiles) and radius, for logs and benchmarks.
  std::string Describe() const;

  // Opaque; defined where the kernel is launched.
  struct Impl;

 private:
  GradientPlan() = default;

  std::shared_ptr<const Impl> impl_;
};

}  // namespace cuimg

#endif  // CUIMG_KERNELS_GRADIENT_H_
