// The scores kernel of hog_detect.cu as a per-thread function, compiled for the GPU and for the
// host (DetectPlan::EmulateOnHost), like hog_strip.h's phases.
//
// A warp scores a tile of 32 x kScoreRows windows of one level: lane i takes the column of windows
// wx = 32 tx + i, rows wy0 .. wy0 + kScoreRows - 1. Windows one row apart share all but `step` of
// their block rows, so the thread walks the column's block rows once, loads each block's 36
// features into registers once and dots them with the weights of every window of the column that
// holds the block (a window takes its block (sx, sy) at block row wy * step + sy): each feature
// load serves up to kScoreRows windows instead of 1, and the weights are warp-uniform loads (one L1
// wavefront). Lanes read neighbouring block columns: coalesced, feature-planar.
//
// Why 4 rows (run 196, H100): a 1080p frame has ~1200 tiles of 32 x 8 windows, 9 warps an SM, too
// few to hide the loads; 32 x 4 doubles the warps and the kernel took 264-268 us against 310-325
// (768x576: 116 against 189-191). 3 rows ran like 4, 2 rows (368-370 us) and 5-6 rows (322-334)
// slower.
//
// The arithmetic is the CPU reference's (hog_reference.cc ScoreWindow; OpenCV's
// HOGDescriptor::detect per block): per block four float partial sums of rounded products, the
// two pair sums in float, then added in double to the window's sum, which starts at the bias,
// blocks row by row (sy outer, sx inner; OpenCV runs sx outer, which differs in double rounding
// only); each window visits its blocks in that order because b rises. Given the same features, a
// window's score is the reference's double, bit for bit.
#ifndef CUIMG_KERNELS_SRC_HOG_SCORES_H_
#define CUIMG_KERNELS_SRC_HOG_SCORES_H_

#include <cuda_runtime.h>

#include <algorithm>

#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/hog_types.h"
#include "hog_math.h"

#if defined(__CUDA_ARCH__)
#define CUIMG_HOG_LDG(p) __ldg(p)
#define CUIMG_HOG_UNROLL _Pragma("unroll")
#else
#define CUIMG_HOG_LDG(p) (*(p))
#define CUIMG_HOG_UNROLL
#endif

namespace cuimg::hog {

inline constexpr int kMaxJobs = 64;                // levels per launch: found by two warp ballots
inline constexpr int kScoreLanes = 32;             // window columns per warp tile, one per lane
inline constexpr int kScoreRows = 4;               // windows down each lane's column
inline constexpr int kScoreThreads = kScoreLanes;  // one warp tile per CUDA block
// The per-window kernel of issue 5 (kept for detect_bench's comparison): 32 x 4 windows.
inline constexpr int kWindowScoreX = 32;
inline constexpr int kWindowScoreY = 4;
inline constexpr int kWindowScoreThreads = kWindowScoreX * kWindowScoreY;
inline constexpr std::size_t kHitsHeader = 16;

// One level of the scores launch: its tiles are tiles_x wide (of either kernel's tile shape).
struct ScoreJob {
  long long feature_offset;
  int pitch;
  int windows_x;
  int windows_y;
  int tiles_x;
  float inv_tiles_x;
  int level;
};

struct ScoresParams {
  const float* features;
  const float* weights;
  unsigned int* hit_count;
  DeviceHit* hits;
  unsigned int capacity;  // records `hits` holds: the plan's windows
  double threshold;
  float bias;
  int step;  // win_stride / 8: blocks between neighbouring windows
  int model_blocks_x;
  int model_blocks_y;
  int num_jobs;
  int first_block[kMaxJobs + 1];
  ScoreJob jobs[kMaxJobs];
};

// bias-free: the reference's contribution of one block, (double)(p0 + p1) + (double)(p2 + p3)
// with p_l = sum over k of v[4k + l] * w[4k + l] in float, k rising, every product rounded.
CUIMG_HOG_HD double BlockDot(const float (&v)[kHogBlockFeatures], const float* weights) {
  const float4* w = reinterpret_cast<const float4*>(weights);
  float4 wq = CUIMG_HOG_LDG(w);  // one address for the whole warp: a broadcast
  float p0 = wq.x * v[0];
  float p1 = wq.y * v[1];
  float p2 = wq.z * v[2];
  float p3 = wq.w * v[3];
  CUIMG_HOG_UNROLL
  for (int q = 1; q < kHogBlockFeatures / 4; ++q) {
    wq = CUIMG_HOG_LDG(w + q);
    p0 = p0 + v[4 * q] * wq.x;
    p1 = p1 + v[4 * q + 1] * wq.y;
    p2 = p2 + v[4 * q + 2] * wq.z;
    p3 = p3 + v[4 * q + 3] * wq.w;
  }
  const float t0 = p0 + p1;
  const float t1 = p2 + p3;
  return static_cast<double>(t0) + static_cast<double>(t1);
}

// Lane work of the scores kernel: the scores of windows (wx, wy0 + r), r < kScoreRows, of `job`.
// Rows past the level's windows are not computed (their entries keep the bias); a column past
// them computes the level's last column (the caller reports nothing for it).
CUIMG_HOG_HD void ScoreColumn(const ScoresParams& p, const ScoreJob& job, int wx, int wy0,
                              double (&score)[kScoreRows]) {
  const int rows = std::min(int{kScoreRows}, job.windows_y - wy0);  // >= 1, the same for the warp
  const int step = p.step;
  const int nby = p.model_blocks_y;
  const long long pitch = job.pitch;
  const float* column = p.features + job.feature_offset +
                        static_cast<long long>(wy0) * step * kHogBlockFeatures * pitch +
                        static_cast<long long>(std::min(wx, job.windows_x - 1)) * step;
  CUIMG_HOG_UNROLL
  for (int r = 0; r < kScoreRows; ++r) score[r] = static_cast<double>(p.bias);
  // The block rows the column's windows cover: window r takes rows r * step .. r * step + nby - 1.
  // Row by row, the model's columns inner: the 7 blocks of a row share the L1 lines of its
  // feature rows (lane i reads column wx + sx), which a walk over all rows per column would evict.
  const int block_rows = (rows - 1) * step + nby;
  for (int b = 0; b < block_rows; ++b) {
    const float* row = column + static_cast<long long>(b) * kHogBlockFeatures * pitch;
    for (int sx = 0; sx < p.model_blocks_x; ++sx) {
      // Block (column + sx, wy0 * step + b): its 36 features are rows of the plane, `pitch` apart.
      float v[kHogBlockFeatures];
      CUIMG_HOG_UNROLL
      for (int q = 0; q < kHogBlockFeatures; ++q) v[q] = CUIMG_HOG_LDG(row + sx + q * pitch);
      const float* weights = p.weights + static_cast<long long>(sx) * nby * kHogBlockFeatures;
      CUIMG_HOG_UNROLL
      for (int r = 0; r < kScoreRows; ++r) {
        const int sy = b - r * step;  // this block's place in window r
        if (r < rows && sy >= 0 && sy < nby) {
          score[r] += BlockDot(v, weights + static_cast<long long>(sy) * kHogBlockFeatures);
        }
      }
    }
  }
}

// The per-window scorer of issue 5 (one thread per window, one fused float chain over the whole
// descriptor, not the reference's order: within float rounding of it), kept so that
// detect_bench measures the old scores kernel beside the new one in the same run.
CUIMG_HOG_HD float ScoreWindowPerThread(const ScoresParams& p, const ScoreJob& job, int wx,
                                        int wy) {
  const long long bx = static_cast<long long>(std::min(wx, job.windows_x - 1)) * p.step;
  const long long by = static_cast<long long>(std::min(wy, job.windows_y - 1)) * p.step;
  const long long pitch = job.pitch;
  const float* window = p.features + job.feature_offset + by * kHogBlockFeatures * pitch + bx;
  const float4* w = reinterpret_cast<const float4*>(p.weights);
  float acc = 0.f;
  for (int sx = 0; sx < p.model_blocks_x; ++sx) {
    for (int sy = 0; sy < p.model_blocks_y; ++sy) {
      const float* f = window + static_cast<long long>(sy) * kHogBlockFeatures * pitch + sx;
      float part = 0.f;
      CUIMG_HOG_UNROLL
      for (int q = 0; q < kHogBlockFeatures / 4; ++q) {
        const float4 wq = CUIMG_HOG_LDG(w + q);
        part = fmaf(wq.x, CUIMG_HOG_LDG(f + (4 * q) * pitch), part);
        part = fmaf(wq.y, CUIMG_HOG_LDG(f + (4 * q + 1) * pitch), part);
        part = fmaf(wq.z, CUIMG_HOG_LDG(f + (4 * q + 2) * pitch), part);
        part = fmaf(wq.w, CUIMG_HOG_LDG(f + (4 * q + 3) * pitch), part);
      }
      acc += part;
      w += kHogBlockFeatures / 4;
    }
  }
  return acc + p.bias;
}

}  // namespace cuimg::hog

#endif  // CUIMG_KERNELS_SRC_HOG_SCORES_H_
