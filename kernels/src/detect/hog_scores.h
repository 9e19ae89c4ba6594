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
// Issue 50: a block row is dotted quad by quad with every window that holds it (DotBlockRow),
// not block by block with its 36 features in registers: the same products and sums in the same
// order per window, but 16 independent float chains a lane instead of 4, and 36 fewer registers.
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
inline constexpr int kScoreRows = 4;      // windows down each lane's column
inline constexpr int kScoreMaxWarps = 7;  // model block columns at a time (3 CUDA blocks an SM)
// Window columns a lane scores, 32 apart: a tile is kScoreLanes * kScoreLaneColumns windows wide.
inline constexpr int kScoreLaneColumns = 1;
inline constexpr int kScoreTileWidth = kScoreLanes * kScoreLaneColumns;
inline constexpr int kScoreMinBlocks = 3;  // CUDA blocks an SM the kernel's registers allow
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

// The contributions of block row b of a lane's kCols window columns (rows[c]: the row's first
// quad in column c) to the windows r < kScoreRows of each column that hold it, as the reference
// computes one block's (ScoreWindow): (double)(p0 + p1) + (double)(p2 + p3) with p_l the float
// sum over quads q rising of feature 4q + l times weight 4q + l, every product rounded, from the
// first products. Window r takes the block as its model block (sx, b - r * step) = model block
// block0 - r * step; its weights are quads below kFirst at p.weights and the others at
// `weight_quads` (ScoresKernelParams': kFirst is kParamFrom, or kFeatureQuads for none). kAll:
// every window holds the block, else window r does when ok[r]. Quad by quad: a feature quad is
// loaded once for the 4 windows, a weight quad once for the kCols columns, and the 4 x kCols
// windows' 4 partial sums each are independent chains (a block's 36 features in registers dotted
// window after window gave 4 chains and held 36 registers).
template <int kFirst, bool kAll, int kCols>
CUIMG_HOG_HD void DotBlockRow(const ScoresParams& p, const float* weight_quads,
                              const float4* const (&rows)[kCols], long long pitch, int block0,
                              int step, const bool (&ok)[kScoreRows],
                              double (&part)[kCols][kScoreRows]) {
  float acc[kCols][kScoreRows][4] = {};  // each set by quad 0 before it is read
  CUIMG_HOG_UNROLL
  for (int q = 0; q < kFeatureQuads; ++q) {
    float4 f[kCols];
    CUIMG_HOG_UNROLL
    for (int c = 0; c < kCols; ++c) f[c] = CUIMG_HOG_LDG(rows[c] + q * pitch);
    CUIMG_HOG_UNROLL
    for (int r = 0; r < kScoreRows; ++r) {
      if (!kAll && !ok[r]) continue;
      const int block = block0 - r * step;
      const float4 wq =
          q < kFirst ? WeightQuad<false>(p.weights +
                                         static_cast<long long>(block) * kHogBlockFeatures + 4 * q)
                     : WeightQuad<true>(weight_quads + block * kParamFloats + 4 * (q - kFirst));
      CUIMG_HOG_UNROLL
      for (int c = 0; c < kCols; ++c) {
        if (q == 0) {  // the reference starts from the first products, weight times feature
          acc[c][r][0] = wq.x * f[c].x;
          acc[c][r][1] = wq.y * f[c].y;
          acc[c][r][2] = wq.z * f[c].z;
          acc[c][r][3] = wq.w * f[c].w;
        } else {
          acc[c][r][0] = acc[c][r][0] + f[c].x * wq.x;
          acc[c][r][1] = acc[c][r][1] + f[c].y * wq.y;
          acc[c][r][2] = acc[c][r][2] + f[c].z * wq.z;
          acc[c][r][3] = acc[c][r][3] + f[c].w * wq.w;
        }
      }
    }
  }
  CUIMG_HOG_UNROLL
  for (int c = 0; c < kCols; ++c) {
    CUIMG_HOG_UNROLL
    for (int r = 0; r < kScoreRows; ++r) {
      if (!kAll && !ok[r]) continue;
      const float t0 = acc[c][r][0] + acc[c][r][1];
      const float t1 = acc[c][r][2] + acc[c][r][3];
      part[c][r] += static_cast<double>(t0) + static_cast<double>(t1);
    }
  }
}

// Lane work of the scores kernel: part[c][r] = the sum, from 0 with sy rising, of the
// contributions of blocks (sx, sy) of windows (wx[c], wy0 + r), r < kScoreRows, c < kCols, of
// the level of `job` whose features in column c's frame are at level[c] (LevelFeatures;
// 0 <= wx[c] < job.windows_x), with the weights of p.weights and, from quad kFirst on, of
// `weight_quads` (DotBlockRow). Rows past the level's windows are not computed (their sums stay
// 0).
template <int kFirst, int kCols>
CUIMG_HOG_HD void ScoreColumnPart(const ScoresParams& p, const float* weight_quads,
                                  const ScoreJob& job, const float* const (&level)[kCols],
                                  const int (&wx)[kCols], int wy0, int sx,
                                  double (&part)[kCols][kScoreRows]) {
  const int rows = std::min(int{kScoreRows}, job.windows_y - wy0);  // >= 1, the same for the warp
  const int step = p.step;
  const int nby = p.model_blocks_y;
  const long long pitch = job.pitch;
  const float4* column[kCols];
  CUIMG_HOG_UNROLL
  for (int c = 0; c < kCols; ++c) {
    column[c] = reinterpret_cast<const float4*>(
        level[c] + FeatureIndex(pitch, wx[c] * step + sx, wy0 * step, 0));
    CUIMG_HOG_UNROLL
    for (int r = 0; r < kScoreRows; ++r) part[c][r] = 0.0;
  }
  const int column_block = sx * nby;  // the model block (sx, 0)
  // The block rows the columns' windows cover: window r takes rows r * step .. r * step + nby - 1;
  // rows [lo, hi) belong to every window of a full tile (none otherwise).
  const int block_rows = (rows - 1) * step + nby;
  const int lo = rows == kScoreRows ? std::min((kScoreRows - 1) * step, block_rows) : block_rows;
  const int hi = rows == kScoreRows ? std::max(lo, nby) : block_rows;
  const bool all[kScoreRows] = {true, true, true, true};
  static_assert(kScoreRows == 4, "all[]");
  for (int b = 0; b < block_rows; ++b) {
    // Block (column, wy0 * step + b): its 9 quads are rows of quads, `pitch` apart.
    const float4* row[kCols];
    CUIMG_HOG_UNROLL
    for (int c = 0; c < kCols; ++c) {
      row[c] = column[c] + static_cast<long long>(b) * kFeatureQuads * pitch;
    }
    if (b >= lo && b < hi) {
      DotBlockRow<kFirst, true, kCols>(p, weight_quads, row, pitch, column_block + b, step, all,
                                       part);
    } else {
      bool ok[kScoreRows];
      CUIMG_HOG_UNROLL
      for (int r = 0; r < kScoreRows; ++r) {
        const int sy = b - r * step;  // this block's place in window r
        ok[r] = r < rows && sy >= 0 && sy < nby;
      }
      DotBlockRow<kFirst, false, kCols>(p, weight_quads, row, pitch, column_block + b, step, ok,
                                        part);
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
