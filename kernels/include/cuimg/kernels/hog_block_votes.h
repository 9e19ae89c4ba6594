// The vote weights of a HOG block's pixels (OpenCV's HOGCache::init), the same table for the CPU
// reference and the CUDA kernels.
#ifndef CUIMG_KERNELS_HOG_BLOCK_VOTES_H_
#define CUIMG_KERNELS_HOG_BLOCK_VOTES_H_

#include <array>

#include "cuimg/kernels/hog_types.h"

namespace cuimg {

// How one pixel of a HOG block votes (OpenCV's HOGCache::init, "PixData"): into `cells` of the
// block's 4 cells (cell index cx * 2 + cy), each with weight gaussian * bilinear, computed in
// float exactly as OpenCV does.
struct HogPixelVote {
  int row = 0;  // within the block, 0..15
  int col = 0;
  int cells = 0;  // 1, 2 or 4
  std::array<int, 4> cell{};
  std::array<float, 4> weight{};  // gradWeight * histWeight (float product)
};

// All 256 pixels of a block in OpenCV's accumulation order (pixels voting into one cell, then two,
// then four; each group by column, then row).
const std::array<HogPixelVote, kHogBlockPixels>& HogBlockVotes();

}  // namespace cuimg

#endif  // CUIMG_KERNELS_HOG_BLOCK_VOTES_H_
