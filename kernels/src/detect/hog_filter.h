// The scores launch of issue 50 as a filter and an exact pass, per-lane functions compiled for the
// GPU and for the host (DetectPlan::EmulateOnHost), like hog_scores.h.
//
// Nearly every window scores far below the threshold (vtest at 1080p: median -4.2, 0.06% of the
// windows within 0.5 of 0), so the exact arithmetic is needed only near it:
//  1. filter: a TF32 tensor-core sweep gives every window an approximate score s~ and lists the
//     windows with s~ >= threshold - margin as candidates. The margin bounds |s~ - s| (below), so
//     every window with s >= threshold is listed;
//  2. exact: a CUDA block per candidate computes its score s in the reference's order (BlockDot per
//     block, columns summed in double from 0 with sy rising, then the bias plus the columns with sx
//     rising: hog_reference.cc ScoreWindow) and reports it when s >= threshold. So the hits and
//     their scores are the reference arithmetic's bit for bit, as with HogScoresKernel.
//
// The sweep: a CUDA block takes a tile of kFilterColumns x kFilterRows windows of one level of one
// frame with a warp per model block column sx; its threads stage the block rows in shared memory
// kFilterStageRows ahead (cp.async), so that several rows' loads are in flight. Per block row
// Y the warp multiplies A (16 window columns x 40 feature slots: row i holds block (wx_i + sx, Y),
// 36 features and 4 zeros) by B (40 slots x 16 model block rows sy: W(sx, sy)) with 5 x 2
// mma.m16n8k8 per m16 half. D[i][sy] belongs to window (wx_i, Y - sy); the accumulators are a
// shift register: before each row, column sy takes column sy - 1's sum (FilterShift) and column 0
// starts at 0, so column sy holds window (wx_i, Y - sy)'s sum over model rows 0..sy and column
// ny - 1 a finished column sum, which goes to shared memory. Feature slot order: step s < 4 of a
// lane (tig = lane % 4) holds quad 4 (s / 2) + tig's x, y (s even) or z, w (s odd); step 4 quad
// 8's component tig. A and B follow it alike, so a lane loads whole quads (FilterRow).
//
// The margin: a feature a in [0, 1] enters truncated to TF32 (relative error < 2^-10), a weight b
// rounded to nearest (< 2^-11): |a~ b~ - a b| < 2^-9.4 |a||b|. The float sums (the tensor cores'
// and the columns') add < 2^-22 of the running magnitude each, about 4,000 of them a window:
// ~2^-10 |a||b| summed. Since a block's features have norm <= 1 (L2-Hys), the sum of |a||b| over
// a window is at most S = sum over model blocks of |W(sx, sy)|_2, so |s~ - s| < 2^-8.6 S. The plan
// takes margin = S / 128 (2^-7 S: 3x that), 0.37 for the people model (FilterMargin).
#ifndef CUIMG_KERNELS_SRC_HOG_FILTER_H_
#define CUIMG_KERNELS_SRC_HOG_FILTER_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "hog_scores.h"

namespace cuimg::hog {

inline constexpr int kFilterColumns = 32;              // window columns a tile: two m16 halves
inline constexpr int kFilterRows = 32;                 // window rows a tile
inline constexpr int kFilterMaxWarps = 7;              // model block columns at a time
inline constexpr int kFilterMaxModelRows = 16;         // the two n8 tiles of B
inline constexpr int kFilterSteps = 5;                 // k8 steps over a block's 36 features
inline constexpr int kFilterSlots = 2 * kFilterSteps;  // a lane's A (or B) values a row
inline constexpr int kExactThreads = 128;    // a CUDA block per candidate: its blocks' dots
inline constexpr int kExactMaxBlocks = 256;  // model blocks the exact pass holds (dots)

inline constexpr std::size_t kCandidatesHeader = 16;  // the count, then the records

// A candidate window: job index (in its chunk), frame, column and row.
struct Candidate {
  int job;
  int frame;
  int wx;
  int wy;
};

// The filter and exact launches: the scores launch's fields (its jobs tiled kFilterColumns x
// kFilterRows) and the candidate list, which lies in the workspace past the frames' features:
// a uint32 count, then from byte 16 the records (at most s.capacity: every window).
struct FilterParams {
  ScoresParams s;
  unsigned int* candidate_count;
  Candidate* candidates;
  float low;  // threshold - margin, rounded down: windows with s~ >= low are candidates
};

// A float's TF32 value, its low 13 mantissa bits dropped (truncated: features, which are >= 0)
// or rounded to nearest, ties away from zero (weights; cvt.rna.tf32.f32). Finite inputs.
CUIMG_HOG_HD std::uint32_t FloatBits(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof(u));
  return u;
#endif
}
CUIMG_HOG_HD float BitsFloat(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float v;
  std::memcpy(&v, &u, sizeof(v));
  return v;
#endif
}
inline constexpr std::uint32_t kTf32Mask = 0xffffe000u;
CUIMG_HOG_HD std::uint32_t Tf32Truncated(float v) { return FloatBits(v) & kTf32Mask; }
CUIMG_HOG_HD std::uint32_t Tf32Rounded(float v) { return (FloatBits(v) + 0x1000u) & kTf32Mask; }

// Whether a plan's scores take the filter: one block between windows (win_stride 8) and a model
// of at most 16 block rows (B's two n8 tiles) and kExactMaxBlocks blocks.
CUIMG_HOG_HD bool FilterApplies(int step, int model_blocks_x, int model_blocks_y) {
  return step == 1 && model_blocks_y <= kFilterMaxModelRows &&
         model_blocks_x * model_blocks_y <= kExactMaxBlocks;
}

// Block rows staged ahead in shared memory (cp.async), and a staged row's block columns: the
// tile's 32 plus 6 for a round of 7 warps (model block columns sx0 .. sx0 + 6). A row is 9 rows
// of 38 quads: 608 bytes apart, 96 mod 128, so each 8-lane phase of FilterRow's 16-byte loads
// (4 quad rows x 2 columns) falls on 8 distinct 16-byte bank groups.
inline constexpr int kFilterStageRows = 4;
inline constexpr int kFilterStageColumns = kFilterColumns + kFilterMaxWarps - 1;
inline constexpr int kFilterStageQuads = kFeatureQuads * kFilterStageColumns;

// A filter tile: its frame and place in the level's tiles of that frame (a tile holds one
// frame's windows, so its blocks are one level's columns side by side).
struct FilterTile {
  int frame;
  int x;
  int y;
};
CUIMG_HOG_HD int FilterTilesY(const ScoreJob& job) {
  return (job.windows_y + kFilterRows - 1) / kFilterRows;
}
CUIMG_HOG_HD FilterTile FilterTileOf(const ScoreJob& job, int local) {
  const int per_frame = job.tiles_x * FilterTilesY(job);
  const int frame = local / per_frame;  // once per CUDA block
  const int t = local - frame * per_frame;
  const int y = t / job.tiles_x;
  return FilterTile{frame, t - y * job.tiles_x, y};
}

// Staged quad i (< kFilterStageQuads) of block row y: quad i / 38 of block column
// bx0 + i % 38 (the last column past the level's), from the frame's level features `level`.
CUIMG_HOG_HD const float4* FilterStageSource(const float* level, const ScoreJob& job, int blocks_x,
                                             int bx0, int y, int i) {
  const int q = i / kFilterStageColumns;
  const int bx = bx0 + (i - q * kFilterStageColumns);
  return reinterpret_cast<const float4*>(level) +
         (static_cast<long long>(y) * kFeatureQuads + q) * job.pitch +
         (bx < blocks_x ? bx : blocks_x - 1);
}

// Lane `lane`'s A values of one staged block row for the window column whose block is staged
// column `column` (a pointer into the row: its quad 0): a[2 s] is k-slot tig of step s,
// a[2 s + 1] slot tig + 4 (the slot order above). Two quad loads and one float.
CUIMG_HOG_HD void FilterRow(const float4* column, int lane, float (&a)[kFilterSlots]) {
  const int tig = lane & 3;
  CUIMG_HOG_UNROLL
  for (int p = 0; p < 2; ++p) {
    const float4 f = column[(4 * p + tig) * kFilterStageColumns];
    a[4 * p] = f.x;
    a[4 * p + 1] = f.y;
    a[4 * p + 2] = f.z;
    a[4 * p + 3] = f.w;
  }
  a[8] = reinterpret_cast<const float*>(column + 8 * kFilterStageColumns)[tig];
  a[9] = 0.f;
}

// Lane `lane`'s B values of n8 tile `tile` for model block column sx, in FilterRow's slot order:
// model block row sy = 8 tile + lane / 4 (zeros past the model's rows).
CUIMG_HOG_HD void FilterWeights(const float* weights, int model_blocks_y, int sx, int tile,
                                int lane, float (&b)[kFilterSlots]) {
  const int sy = 8 * tile + (lane >> 2);
  const int tig = lane & 3;
  for (int i = 0; i < kFilterSlots; ++i) b[i] = 0.f;
  if (sy >= model_blocks_y) return;
  const float* block =
      weights + static_cast<long long>(sx * model_blocks_y + sy) * kHogBlockFeatures;
  CUIMG_HOG_UNROLL
  for (int p = 0; p < 2; ++p) {
    const float4 w = CUIMG_HOG_LDG(reinterpret_cast<const float4*>(block) + 4 * p + tig);
    b[4 * p] = w.x;
    b[4 * p + 1] = w.y;
    b[4 * p + 2] = w.z;
    b[4 * p + 3] = w.w;
  }
  b[8] = CUIMG_HOG_LDG(block + 32 + tig);
}

// The shift register's step for one accumulator row of a lane: its columns 2 tig, 2 tig + 1 of
// n8 tiles 0 and 1 (c[tile][0..1]) take columns 2 tig - 1, 2 tig; `from0`, `from1` are column
// 2 tig' + 1 of tiles 0 and 1 in lane tig' = (tig + 3) % 4 of the same group (FilterShiftSource):
// column 2 tig - 1, or for tig = 0 column 7 (tile 0's into tile 1's column 8; tile 0's column 0
// starts at 0).
CUIMG_HOG_HD int FilterShiftSource(int lane) { return (lane & ~3) | ((lane + 3) & 3); }
CUIMG_HOG_HD void FilterShift(int lane, float (&c)[2][2], float from0, float from1) {
  const bool first = (lane & 3) == 0;
  c[1][1] = c[1][0];
  c[1][0] = first ? from0 : from1;
  c[0][1] = c[0][0];
  c[0][0] = first ? 0.f : from0;
}

// Where column ny - 1 (a finished column sum) lies: n8 tile, the lanes' tig, and c0 or c1.
struct FilterDone {
  int tile;
  int tig;
  int reg;
};
CUIMG_HOG_HD FilterDone FilterDoneOf(int model_blocks_y) {
  const int col = model_blocks_y - 1;
  return FilterDone{col >> 3, (col & 7) >> 1, col & 1};
}

// The exact pass: model block b (= sx * ny + sy) of window (wx, wy) at `level` (LevelFeatures), the
// reference's BlockDot of the block's features with its weights.
CUIMG_HOG_HD double ExactBlockDot(const ScoresParams& p, const ScoreJob& job, const float* level,
                                  int wx, int wy, int b) {
  const int sx = b / p.model_blocks_y;
  const int sy = b - sx * p.model_blocks_y;
  const float4* quads =
      reinterpret_cast<const float4*>(level + FeatureIndex(job.pitch, wx + sx, wy + sy, 0));
  float v[kHogBlockFeatures];
  CUIMG_HOG_UNROLL
  for (int q = 0; q < kFeatureQuads; ++q) {
    const float4 f = CUIMG_HOG_LDG(quads + q * static_cast<long long>(job.pitch));
    v[4 * q] = f.x;
    v[4 * q + 1] = f.y;
    v[4 * q + 2] = f.z;
    v[4 * q + 3] = f.w;
  }
  return BlockDot<kFeatureQuads>(v, p.weights + static_cast<long long>(b) * kHogBlockFeatures,
                                 nullptr);
}

// Column sx's sum of a window's dots (dots[sx * ny + sy]), from 0 with sy rising.
CUIMG_HOG_HD double ExactColumn(const ScoresParams& p, const double* dots, int sx) {
  double column = 0.0;
  for (int sy = 0; sy < p.model_blocks_y; ++sy) column += dots[sx * p.model_blocks_y + sy];
  return column;
}

}  // namespace cuimg::hog

#endif  // CUIMG_KERNELS_SRC_HOG_FILTER_H_
