// The cuCIM-class reconstruction, reconstruction_bench's anchor: repeat one pass of
// r = min(max of r over the pixel and its neighbours, mask) (dilation; erosion: the dual) until a
// pass changes nothing. This is cuCIM's default GPU path of skimage.morphology.reconstruction
// (grayreconstruct.py: ndi.maximum_filter and a clamp, convergence checked every 4 to 64 passes);
// its pass count is the longest geodesic path.
#ifndef CUIMG_BENCHMARKS_CLAMPED_FILTER_LOOP_H_
#define CUIMG_BENCHMARKS_CLAMPED_FILTER_LOOP_H_

#include <cuda_runtime_api.h>

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/segmentation_types.h"

namespace cuimg::bench {

struct LoopResult {
  int passes = 0;          // passes run, the last of them changing nothing when converged
  bool converged = false;  // false: stopped at max_passes
};

// Runs passes on u8 or i16 images from `d_r` (the clamped marker; the result on return) under
// (`dilate`) or over `d_mask`, neighbours by `connectivity`, ping-ponging through `d_scratch`
// (the image's size). Looks for a pass without change every 16 passes, synchronizing `stream`,
// and stops unconverged after `max_passes` or once `max_seconds` of wall time have gone by.
absl::StatusOr<LoopResult> ClampedFilterLoop(PixelType type, const Extent& extent, bool dilate,
                                             Connectivity connectivity, const void* d_mask,
                                             void* d_r, void* d_scratch, int max_passes,
                                             double max_seconds, cudaStream_t stream);

}  // namespace cuimg::bench

#endif  // CUIMG_BENCHMARKS_CLAMPED_FILTER_LOOP_H_
