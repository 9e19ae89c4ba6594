// Connected-component labelling with region statistics on the GPU: a plan built once on the
// host, run asynchronously on a stream (label_types.h has the definitions; LabelReference is
// the CPU reference, which this equals bit for bit).
#ifndef CUIMG_KERNELS_LABEL_H_
#define CUIMG_KERNELS_LABEL_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/label_types.h"
#include "cuimg/kernels/segmentation_types.h"

namespace cuimg {

// Called on the host right after the launches of each phase of a labelling are enqueued, with
// the phase's name ("local", "merge", "flatten", "count", "scan", "number", "local roots",
// "resolve"): a profile records an event on the stream there. Empty: nothing is called.
using LabelPhaseMark = std::function<void(const char* phase)>;

// Labelling prepared for one input type, extent, spec and (optional) intensity type. A block
// union-find: each 32x32 (2D) or 32x8x8 (3D) tile is labelled in shared memory, tiles are joined
// across their faces with atomic unions whose roots are the smallest raster index of each
// component, roots are numbered in raster order by a scan and the tile-local roots take their
// root's number (with min_voxels, every pixel is first pointed at its root, which sums the
// counts), and a last pass writes the labels and accumulates the statistics. Work and passes do
// not grow with the shape of the components (a spiral costs what a blob costs, up to the unions'
// path lengths, which path halving keeps short). Copyable and immutable.
//
// Contract of Run():
// - `d_in`: extent.Pixels() elements of the plan's type, densely packed, x fastest; only read.
//   `d_intensity`: null without an intensity type, else extent.Pixels() elements of that type.
// - `d_labels`: extent.Pixels() U32 elements, written (0 = background, 1..N); must not overlap
//   the inputs or the workspace.
// - `workspace`: WorkspaceBytes() bytes of device memory, 256-byte aligned, used exclusively by
//   this call until the stream reaches its end and until ReadRegions has read it; it holds the
//   region count and statistics afterwards.
// - Asynchronous on `stream`: nothing is synchronized. The number of regions and their
//   statistics stay on the device (DeviceRegionCount) until ReadRegions copies them back.
// - Deterministic: labels are the CPU reference's; every statistic is an exact integer
//   accumulation (f32 sums: fixed point over the whole f32 range), so the order of the atomics
//   cannot change a bit.
// - `cancel` is looked at once before the launches (the whole labelling is a few passes over
//   the image).
// - `mark`, when set, is called after each phase's launches (LabelPhaseMark).
class LabelPlan {
 public:
  // INVALID_ARGUMENT for a spec that does not suit the extent (ValidateLabelSpec).
  static absl::StatusOr<LabelPlan> Create(PixelType type, const Extent& extent,
                                          const LabelSpec& spec,
                                          std::optional<PixelType> intensity = std::nullopt);

  // Per-pixel links are written into the labels themselves; the workspace holds the region
  // table (statistics for MaxRegions(extent, connectivity) regions) and the scan's segments.
  std::size_t WorkspaceBytes() const;
  // Kernel launches Run() makes.
  int LaunchCount() const;
  absl::Status Run(const void* d_in, const void* d_intensity, std::uint32_t* d_labels,
                   void* workspace, cudaStream_t stream,
                   const CancelToken& cancel = NeverCancelled(),
                   const LabelPhaseMark& mark = {}) const;

  // The region count N inside `workspace` (device memory), final once the stream has run Run:
  // for callers that size later device work without a round trip to the host.
  const std::uint32_t* DeviceRegionCount(const void* workspace) const;
  // Synchronizes `stream`, then copies N and the regions' statistics back (label k at k - 1).
  absl::StatusOr<std::vector<RegionStats>> ReadRegions(const void* workspace,
                                                       cudaStream_t stream) const;

  PixelType type() const;
  const Extent& extent() const;
  const LabelSpec& spec() const;
  // "2d tiles 32x32 conn 8, min_voxels 0, intensity f32", for logs and benchmarks.
  std::string Describe() const;

  // Opaque; defined where the kernels are launched.
  struct Impl;

 private:
  LabelPlan() = default;

  std::shared_ptr<const Impl> impl_;
};

}  // namespace cuimg

#endif  // CUIMG_KERNELS_LABEL_H_
