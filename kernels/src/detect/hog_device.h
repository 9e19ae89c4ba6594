// Device helpers the detection kernels share (hog_detect.cu, hog_filter.cu). CUDA only.
#ifndef CUIMG_KERNELS_SRC_HOG_DEVICE_H_
#define CUIMG_KERNELS_SRC_HOG_DEVICE_H_

#include <cuda_runtime.h>

#include "cuimg/kernels/hog_detect.h"
#include "hog_scores.h"

namespace cuimg::hog {

// The job a CUDA block belongs to: how many first_block entries are <= block, minus one.
__device__ __forceinline__ int FindJob(const int* first_block, int num_jobs, int block) {
  const int lane = threadIdx.x & 31;
  const unsigned low = __ballot_sync(0xffffffffu, lane < num_jobs && first_block[lane] <= block);
  const unsigned high =
      __ballot_sync(0xffffffffu, lane + 32 < num_jobs && first_block[lane + 32] <= block);
  return __popc(low) + __popc(high) - 1;
}

// Appends hit (level, wx, wy) of `frame` unless its score is below the threshold (the
// reference's test, in double); the record keeps the score as a float.
__device__ __forceinline__ void AppendHit(const ScoresParams& p, const ScoreJob& job, int frame,
                                          int wx, int wy, double score) {
  if (!(score >= p.threshold)) return;
  const unsigned int slot = atomicAdd(p.hit_count, 1u);
  if (slot < p.capacity) {
    p.hits[slot] = DeviceHit{frame * p.levels + job.level, wx, wy, static_cast<float>(score)};
  }
}

}  // namespace cuimg::hog

#endif  // CUIMG_KERNELS_SRC_HOG_DEVICE_H_
