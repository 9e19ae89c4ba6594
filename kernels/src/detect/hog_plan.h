// DetectPlan's internals, shared by its construction (hog_plan.cu), its launches (hog_detect.cu)
// and their host emulation (hog_emulation.cu).
#ifndef CUIMG_KERNELS_SRC_HOG_PLAN_H_
#define CUIMG_KERNELS_SRC_HOG_PLAN_H_

#include <algorithm>
#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "cuimg/kernels/detect_geometry.h"
#include "cuimg/kernels/hog_detect.h"
#include "hog_filter.h"
#include "hog_strip.h"

namespace cuimg {

// One launch pair: up to 64 levels, every frame. The kernels' parameters leave the frames'
// addresses (BlocksParams::src), the buffers and the per-call fields to Run.
struct DetectChunk {
  hog::BlocksParams blocks{};
  hog::ScoresParams scores{};
  hog::ScoresParams per_window_scores{};  // issue 5's tiling, for ScoresPath::kPerWindow
  hog::FilterParams filter{};             // the filter's tiling (hog_filter.h), when Impl::filter
  int block_grid = 0;
  int score_grid = 0;
  int per_window_grid = 0;
  int filter_grid = 0;
  int exact_grid = 0;
};

struct DetectPlan::Impl {
  DetectGeometry geometry;  // of one frame
  int channels = 1;
  int frames = 1;
  std::size_t frame_bytes = 0;  // of one frame's features, a multiple of 256
  // The workspace's features, every frame's; the filter's candidate list starts there.
  std::size_t feature_bytes() const { return frames * frame_bytes; }
  // Whether RunScores takes the filter and the exact pass (hog::FilterApplies); their candidate
  // list then follows the frames' features in the workspace (candidate_bytes).
  bool filter = false;
  std::size_t candidate_bytes = 0;
  std::vector<DetectChunk> chunks;
  // Quads kParamFrom.. of the model's blocks for the scores kernel's parameters
  // (ScoresKernelParams::weight_quads); empty when it has more than kParamBlocks blocks.
  std::vector<float> weight_quads;
};

// CUDA blocks of the blocks kernel resident at once on the device current at the first call
// (hog_detect.cu; an H100's 132 x 6 where there is no device).
int ResidentStrips();

// The filter's launches for one chunk (hog_filter.cu): its candidate count zeroed, the filter and
// the exact pass, with the scores launch's buffers `p` (features, weights, hits) and the candidate
// list at `candidates` (DetectPlan::Impl::candidate_bytes past the frames' features).
absl::Status LaunchFilter(const DetectChunk& chunk, const hog::ScoresParams& p, void* candidates,
                          cudaStream_t stream);

namespace hog {

// CUDA threads of a scores block: a warp per model block column, at most kScoreMaxWarps.
inline int ScoreThreads(const ScoresParams& p) {
  return std::min(p.model_blocks_x, kScoreMaxWarps) * kScoreLanes;
}

}  // namespace hog
}  // namespace cuimg

#endif  // CUIMG_KERNELS_SRC_HOG_PLAN_H_
