// Morphology on the GPU: a plan built once on the host, run asynchronously on a stream.
#ifndef CUIMG_KERNELS_MORPHOLOGY_H_
#define CUIMG_KERNELS_MORPHOLOGY_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/morphology_types.h"

namespace cuimg {

// A morphology chain prepared for one pixel type and extent. Each erosion/dilation runs as
// separable van Herk/Gil-Werman passes when the element is a box (rect, line), else as the
// chord-tile kernel (Urbach-Wilkinson chords in shared memory): cost per pixel never grows with
// the element's area. Copyable and immutable: copies share the prepared tables.
//
// The segmentation steps (MorphOp) run their per-pixel kernels and a ReconstructionPlan
// (reconstruction.h), whose route and rounds depend on the image, so Run synchronizes `stream`
// there and looks at `cancel`; remove_small and keep_largest run the labelling's mask steps
// (mask_steps.h).
//
// Contract of Run():
// - Pixel types u8, u16, i16, f32, and u32 for the steps that take it (StepTakesU32); one
//   channel; 2D (depth 1) or 3D.
// - `in` and `out` are device pointers to extent.Pixels() elements, densely packed (x fastest);
//   `out` must not overlap `in` or the workspace. `in` is only read. Where WritesOutputOnce(),
//   `out` may also be page-locked host memory mapped into the device (MappedDevicePointer).
// - `workspace` is WorkspaceBytes() bytes of device memory, 256-byte aligned, used exclusively
//   by this call until the stream reaches its end.
// - Asynchronous on `stream` for chains without global steps: nothing is synchronized; the
//   caller synchronizes. A global step synchronizes `stream` between its rounds' batches. The
//   plan's host tables are copied from memory the plan owns, so the plan must outlive the queued
//   work.
// - Results equal MorphologyReference bit for bit (integer types; f32 up to the sign of zero).
// - Deterministic: the same inputs give the same outputs.
// - With a `cancel` token other than NeverCancelled(), a chain of several steps on an image of
//   kCancelSyncPixels or more synchronizes `stream` after each step and returns the token's
//   status once it stops (the output is then unspecified): a step costs at least tens of
//   microseconds there, so the synchronizations cost little, and abandoned work ends after the
//   step running when the token stopped instead of after the whole chain.
class MorphologyPlan {
 public:
  // INVALID_ARGUMENT when the type is U32 and a step does not take it (CheckStepPixelType), the
  // chain is empty, an iteration count is < 1, the extent is empty or a step's parameters are out
  // of range (ValidateMorphologyStep, field "steps[i]...").
  static absl::StatusOr<MorphologyPlan> Create(PixelType type, const Extent& extent,
                                               std::vector<MorphologyStep> steps);

  std::size_t WorkspaceBytes() const;
  // Kernel launches Run() makes (for benchmarks and launch-count reporting); a global step counts
  // its first round only (the rest depend on the image).
  int LaunchCount() const;
  // True when Run() is one kernel (a single box pass) that writes each output pixel once and
  // never reads `out`: the output can then go straight to mapped host memory over PCIe.
  bool WritesOutputOnce() const;
  // `d_marker`: the seed of reconstruct_dilate / reconstruct_erode (device memory of the plan's
  // type and extent, only read, not overlapping `out` or the workspace); required when a step
  // uses it (UsesMarker: INVALID_ARGUMENT, FIELD_REQUIRED, field "marker" if null), else ignored.
  absl::Status Run(const void* in, void* out, void* workspace, cudaStream_t stream,
                   const CancelToken& cancel = NeverCancelled(),
                   const void* d_marker = nullptr) const;
  static constexpr std::int64_t kCancelSyncPixels = std::int64_t{1} << 20;

  PixelType type() const;
  const Extent& extent() const;
  // "box" (separable van Herk/Gil-Werman passes) or "chords" per step, for logs and benchmarks;
  // a segmentation step by name, with its reconstruction's method, connectivity and bricks.
  std::string Describe() const;

  // Opaque; defined where the kernels are launched.
  struct Impl;

 private:
  MorphologyPlan() = default;

  std::shared_ptr<const Impl> impl_;
};

}  // namespace cuimg

#endif  // CUIMG_KERNELS_MORPHOLOGY_H_
