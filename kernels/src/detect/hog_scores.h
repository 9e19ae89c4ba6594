// The scores kernel of hog_detect.cu as per-thread functions, compiled for the GPU and for the
// host (DetectPlan::EmulateOnHost), like hog_strip.h's phases.
//
// A CUDA block scores a tile of 32 x kScoreRows windows of one level with one warp per model
// block column sx (up to kScoreMaxWarps at a time, in rounds): lane i of warp sx sums, for the
// windows of column x = 32 tx + i, rows wy0 .. wy0 + kScoreRows - 1, the contributions of their
// blocks in column sx. A plan's frames lie side by side along x (x = frame * windows_x + wx,
// LaneWindowOf): a tile may hold the last columns of one frame and the first of the next, so the
// lanes a level's width leaves idle in its last tile across are few once frames share a launch
// (at 1080p 9.5% of the lanes with one frame, 1% with 8; at 768x576 19% and 2%). Windows one row
// apart share all but `step` of their block rows, so the thread walks the column's block rows once,
// loads each block's 36 features into registers once and dots them with the weights of every window
// that holds the block (window r takes block row r * step + sy as its sy): each feature load serves
// up to kScoreRows windows, and the weights are warp-uniform loads. Lanes read neighbouring blocks'
// quads (FeatureIndex): coalesced 16-byte loads. Warp 0 then adds the columns' sums to the bias in
// sx order.
//
// Measured on the H100 (1080p, all levels; BENCHMARKS run 208): one warp per tile of 32 x 4
// windows took 263-265 us. A warp per column (7 times the warps) took 231; loading quads instead
// of single features, 222-223. ncu then puts the kernel at 80% of the L1's data-stage wavefronts:
// a warp-uniform 16-byte weight load still writes 512 bytes of registers. Not kept: 8 rows a tile
// (264), each lane two to four window columns sharing the weight loads (267-345: the registers
// it takes halve the warps), fused multiply-adds (-9 us, but the reference's arithmetic would
// change), the weights in the kernel parameters (374).
// Run 211: the last kParamQuads quads of each block's weights come from a copy in the kernel's
// parameters (constant-cache loads, which do not pass the L1's data stage) and the kernel holds
// 80 registers so that 3 CUDA blocks share a multiprocessor: 186 us (either alone: 213, 228).
// All weights from the parameters through uniform registers, a warp per tile walking the columns
// (warp-uniform addresses), took 279: constant-cache misses stalled its few warps.
// 2026-12-03 (H200, 1080p, batches of 8; BENCHMARKS "the scores kernel's variants"): 6 windows
// down a lane's column, 162.9 -> 153.4 us: a block's feature loads serve more windows, for a few
// bytes of spills. More quads from the parameters (4, 5, 6) took 189, 208, 300: the constant
// cache then limits. Two window columns a lane, quad by quad (one weight load for both), 201.
//
// The arithmetic is the CPU reference's (hog_reference.cc ScoreWindow): per block four float
// partial sums of rounded products, the two pair sums in float, added in double; per column the
// blocks' doubles summed from 0 with sy rising; the window's score the bias plus the columns' sums
// with sx rising (OpenCV adds every block to one double in that order: this differs from it in
// double rounding only). Given the same features, a window's score is the reference's double, bit
// for bit.
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

inline constexpr int kMaxJobs = 64;       // levels per launch: found by two warp ballots
inline constexpr int kScoreLanes = 32;    // window columns per tile, one per lane
inline constexpr int kScoreRows = 6;      // windows down each lane's column (see above)
inline constexpr int kScoreMaxWarps = 7;  // model block columns at a time (3 CUDA blocks an SM)
// The per-window kernel of issue 5 (kept for detect_bench's comparison): 32 x 4 windows.
inline constexpr int kWindowScoreX = 32;
inline constexpr int kWindowScoreY = 4;
inline constexpr int kWindowScoreThreads = kWindowScoreX * kWindowScoreY;
inline constexpr std::size_t kHitsHeader = 16;
inline constexpr int kFeatureQuads = kHogBlockFeatures / 4;  // float4s of a block's features

// Where a tile of the scores launch sits: its coordinates in the level's tile grid.
struct TilePos {
  int x;
  int y;
};

// Where feature f of block (bx, by) lies in its level's features: in quads, features 4k .. 4k + 3
// of a block side by side (one 16-byte load), quad k of the blocks of a row in a row of `pitch`
// float4s (DetectPlan::FeaturePlane). A warp reading one quad of 32 neighbouring blocks loads 512
// contiguous bytes: 4 or 5 L1 wavefronts where 4 planar rows took 8.
CUIMG_HOG_HD long long FeatureIndex(long long pitch, int bx, int by, int f) {
  return ((static_cast<long long>(by) * kFeatureQuads + f / 4) * pitch + bx) * 4 + f % 4;
}

// One level of the scores launch, every frame: its tiles are tiles_x wide (of either kernel's
// tile shape) over the frames' windows_x columns side by side.
struct ScoreJob {
  long long feature_offset;  // floats from the frame's features
  int pitch;                 // float4s between feature rows
  int windows_x;             // of one frame
  int windows_y;
  int tiles_x;
  int level;
};

// Where tile `tile` (its CUDA block's index less the job's first_block) sits in its level's
// tiles: row-major.
CUIMG_HOG_HD TilePos TileOf(const ScoreJob& job, int tile) {
  const int y = tile / job.tiles_x;  // once per CUDA block
  return TilePos{tile - y * job.tiles_x, y};
}

struct ScoresParams {
  const float* features;  // frame f's at features + f * frame_floats
  const float* weights;
  unsigned int* hit_count;
  DeviceHit* hits;
  long long frame_floats;
  unsigned int capacity;  // records `hits` holds: the plan's windows, every frame's
  int frames;
  int levels;  // of one frame: a hit's DeviceHit::level is frame * levels + level
  double threshold;
  float bias;
  int step;  // win_stride / 8: blocks between neighbouring windows
  int model_blocks_x;
  int model_blocks_y;
  int num_jobs;
  int first_block[kMaxJobs + 1];
  ScoreJob jobs[kMaxJobs];
};

// Weight quads kParamFrom.. of every model block travel in the kernel's parameters, for models
// of at most kParamBlocks blocks (the 64 x 128 people model has 105, the 48 x 96 one 55; 16 KB
// of the 32 KB a launch may carry); larger models read every quad from global memory.
inline constexpr int kParamQuads = 3;
inline constexpr int kParamFrom = kFeatureQuads - kParamQuads;
inline constexpr int kParamFloats = kParamQuads * 4;  // of one block
inline constexpr int kParamBlocks = 336;

// The scores kernel's parameters: the launch's, and quads kParamFrom.. of the model's blocks
// (block sx * model_blocks_y + sy at [block * kParamFloats]) when it has at most kParamBlocks.
struct ScoresKernelParams {
  ScoresParams s;
  alignas(16) float weight_quads[kParamBlocks * kParamFloats];
};

// One quad of a model's weights, the same for the whole warp: a broadcast global load, or from
// the kernel's parameters (a constant-cache load).
template <bool kFromParams>
CUIMG_HOG_HD float4 WeightQuad(const float* w) {
  const float4* q = reinterpret_cast<const float4*>(w);
  if constexpr (kFromParams) {
    return *q;
  } else {
    return CUIMG_HOG_LDG(q);
  }
}

// bias-free: the reference's contribution of one block, (double)(p0 + p1) + (double)(p2 + p3)
// with p_l = sum over k of v[4k + l] * w[4k + l] in float, k rising, every product rounded.
// The block's weights: quads below kFirst at `global` (its 36), the others at `params` (its
// kParamFloats in ScoresKernelParams::weight_quads): kFirst is kParamFrom, or kFeatureQuads for
// none.
template <int kFirst>
CUIMG_HOG_HD double BlockDot(const float (&v)[kHogBlockFeatures], const float* global,
                             const float* params) {
  float p0 = 0.f;
  float p1 = 0.f;
  float p2 = 0.f;
  float p3 = 0.f;
  CUIMG_HOG_UNROLL
  for (int q = 0; q < kFeatureQuads; ++q) {
    const float4 wq = q < kFirst ? WeightQuad<false>(global + 4 * q)
                                 : WeightQuad<true>(params + 4 * (q - kFirst));
    if (q == 0) {  // the reference starts from the first products
      p0 = wq.x * v[0];
      p1 = wq.y * v[1];
      p2 = wq.z * v[2];
      p3 = wq.w * v[3];
    } else {
      p0 = p0 + v[4 * q] * wq.x;
      p1 = p1 + v[4 * q + 1] * wq.y;
      p2 = p2 + v[4 * q + 2] * wq.z;
      p3 = p3 + v[4 * q + 3] * wq.w;
    }
  }
  const float t0 = p0 + p1;
  const float t1 = p2 + p3;
  return static_cast<double>(t0) + static_cast<double>(t1);
}

// The window column of lane x of a tile row (x = tile_x * 32 + lane): the frame and its column
// wx. Lanes past the last frame's last column take that column, and `valid` false (the caller
// reports nothing for them).
struct LaneWindow {
  int frame;
  int wx;
  bool valid;
};
CUIMG_HOG_HD LaneWindow LaneWindowOf(const ScoresParams& p, const ScoreJob& job, int x) {
  const int last = p.frames * job.windows_x - 1;
  const int xc = x < last ? x : last;
  const int frame = xc / job.windows_x;  // once per lane and CUDA block
  return LaneWindow{frame, xc - frame * job.windows_x, x <= last};
}

// The features of the level of `job` in frame `frame`.
CUIMG_HOG_HD const float* LevelFeatures(const ScoresParams& p, const ScoreJob& job, int frame) {
  return p.features + frame * p.frame_floats + job.feature_offset;
}

// Lane work of the scores kernel: part[r] = the sum, from 0 with sy rising, of the contributions
// of blocks (sx, sy) of windows (wx, wy0 + r), r < kScoreRows, of the level of `job` whose
// features are at `level` (LevelFeatures; 0 <= wx < job.windows_x), with the weights of
// p.weights and, from quad kFirst on (BlockDot), of `weight_quads` (ScoresKernelParams'). Rows
// past the level's windows are not computed (their sums stay 0).
template <int kFirst>
CUIMG_HOG_HD void ScoreColumnPart(const ScoresParams& p, const float* weight_quads,
                                  const ScoreJob& job, const float* level, int wx, int wy0, int sx,
                                  double (&part)[kScoreRows]) {
  const int rows = std::min(int{kScoreRows}, job.windows_y - wy0);  // >= 1, the same for the warp
  const int step = p.step;
  const int nby = p.model_blocks_y;
  const long long pitch = job.pitch;
  const float4* column =
      reinterpret_cast<const float4*>(level + FeatureIndex(pitch, wx * step + sx, wy0 * step, 0));
  const int column_block = sx * nby;  // the model block (sx, 0)
  CUIMG_HOG_UNROLL
  for (int r = 0; r < kScoreRows; ++r) part[r] = 0.0;
  // The block rows the column's windows cover: window r takes rows r * step .. r * step + nby - 1.
  const int block_rows = (rows - 1) * step + nby;
  for (int b = 0; b < block_rows; ++b) {
    // Block (column, wy0 * step + b): its 9 quads are rows of quads, `pitch` apart.
    const float4* row = column + static_cast<long long>(b) * kFeatureQuads * pitch;
    float v[kHogBlockFeatures];
    CUIMG_HOG_UNROLL
    for (int q = 0; q < kFeatureQuads; ++q) {
      const float4 f = CUIMG_HOG_LDG(row + q * pitch);
      v[4 * q] = f.x;
      v[4 * q + 1] = f.y;
      v[4 * q + 2] = f.z;
      v[4 * q + 3] = f.w;
    }
    CUIMG_HOG_UNROLL
    for (int r = 0; r < kScoreRows; ++r) {
      const int sy = b - r * step;  // this block's place in window r
      if (r < rows && sy >= 0 && sy < nby) {
        const int block = column_block + sy;
        const float* quads =  // none (maybe null) when every quad is global
            kFirst < kFeatureQuads ? weight_quads + block * kParamFloats : weight_quads;
        part[r] += BlockDot<kFirst>(
            v, p.weights + static_cast<long long>(block) * kHogBlockFeatures, quads);
      }
    }
  }
}

// The per-window scorer of issue 5 (one thread per window, one fused float chain over the whole
// descriptor, not the reference's order: within float rounding of it), kept so that
// detect_bench measures the old scores kernel beside the new one in the same run. `level` is the
// frame's (LevelFeatures), 0 <= wx < job.windows_x; a row past the level's computes its last.
CUIMG_HOG_HD float ScoreWindowPerThread(const ScoresParams& p, const ScoreJob& job,
                                        const float* level, int wx, int wy) {
  const int bx = wx * p.step;
  const int by = std::min(wy, job.windows_y - 1) * p.step;
  const float4* w = reinterpret_cast<const float4*>(p.weights);
  float acc = 0.f;
  for (int sx = 0; sx < p.model_blocks_x; ++sx) {
    for (int sy = 0; sy < p.model_blocks_y; ++sy) {
      const float4* f =
          reinterpret_cast<const float4*>(level + FeatureIndex(job.pitch, bx + sx, by + sy, 0));
      float part = 0.f;
      CUIMG_HOG_UNROLL
      for (int q = 0; q < kFeatureQuads; ++q) {
        const float4 wq = CUIMG_HOG_LDG(w + q);
        const float4 v = CUIMG_HOG_LDG(f + q * job.pitch);
        part = fmaf(wq.x, v.x, part);
        part = fmaf(wq.y, v.y, part);
        part = fmaf(wq.z, v.z, part);
        part = fmaf(wq.w, v.w, part);
      }
      acc += part;
      w += kHogBlockFeatures / 4;
    }
  }
  return acc + p.bias;
}

}  // namespace cuimg::hog

#endif  // CUIMG_KERNELS_SRC_HOG_SCORES_H_
