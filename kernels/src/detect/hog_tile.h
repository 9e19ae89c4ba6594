// The two HOG kernels of hog_detect.cu as per-thread phase functions, compiled for the GPU and for
// the host: the kernels call them between barriers, and DetectPlan::EmulateOnHost calls them for
// every thread of every CUDA block in turn, so CPU tests exercise the kernels' own indexing,
// shared-memory layout and arithmetic without a GPU.
//
// Blocks kernel, per CUDA block: a tile of 8 x 8 HOG blocks (72 x 72 pixels of the padded level
// plus a one-pixel border for the gradient), 256 threads:
//   LoadTaps -> LoadSamples -> ComputeVotes -> AccumulateCell -> ClipCell -> RenormScale (L2-Hys,
//   each with the sum of squares over the block's 4 threads) -> StoreCell.
// The scores kernel's thread is hog_scores.h's ScoreColumn.
#ifndef CUIMG_KERNELS_SRC_HOG_TILE_H_
#define CUIMG_KERNELS_SRC_HOG_TILE_H_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/hog_types.h"
#include "hog_math.h"
#include "hog_scores.h"

namespace cuimg::hog {

inline constexpr int kTile = 8;  // HOG blocks per tile side
inline constexpr int kTilePixels = kTile * kHogBlockStride + kHogBlockStride;  // 72
inline constexpr int kSamples = kTilePixels + 2;                               // 74
inline constexpr int kBlockThreads = kTile * kTile * 4;  // one per (block, cell)
inline constexpr int kCellSupport = 12;  // a cell collects the 12 x 12 pixels around it
inline constexpr int kCellPixels = kCellSupport * kCellSupport;
inline constexpr int kCellStride = kCellPixels + 1;  // odd: the 4 cells' tables in other banks
static_assert(kBlockThreads == 256, "one thread per gamma table entry");
static_assert(kSamples <= 128, "tap threads: columns from thread 0, rows from thread 128");

// One level of the blocks launch.
struct BlockJob {
  double scale_x;  // ResizeScale(input, level): the INTER_LINEAR_EXACT taps' scale
  double scale_y;
  long long feature_offset;  // floats, from the workspace's start
  int width;                 // the level image
  int height;
  int blocks_x;
  int blocks_y;
  int tiles_x;
  float inv_tiles_x;
  int pitch;   // floats between feature rows: blocks_x rounded up to 32
  int direct;  // the level has the input's size: its pixels are the input's
};

struct BlocksParams {
  const std::uint8_t* src;
  float* features;
  unsigned int* hit_count;
  int src_w;
  int src_h;
  int channels;
  int padding;
  int gamma;
  int reset_count;  // the first launch zeroes the hit count
  int num_jobs;
  int first_block[kMaxJobs + 1];
  BlockJob jobs[kMaxJobs];
  // Weight (gaussian x bilinear, OpenCV's float products) of pixel (ii, jj) of cell c's 12 x 12
  // support, which starts at (4 cy, 4 cx) of the block; c = cx * 2 + cy.
  float cell_weights[4][kCellPixels];
};

struct BlocksSmem {
  float w0[kTilePixels][kTilePixels];
  float w1[kTilePixels][kTilePixels];
  float lut[256];
  float cell_weights[4][kCellStride];
  int4 xtap[kSamples];  // (byte offset of i0 in a row, of i1, c0, c1)
  int4 ytap[kSamples];  // (row i0, row i1, c0, c1)
  union {
    std::uint8_t samples[3][kSamples][kSamples];  // B, G, R (or gray in plane 0)
    float hist[kHogBins][kBlockThreads];          // after the votes: one column per thread
  } u;
  std::uint8_t bin[kTilePixels][kTilePixels];
};

// Where a tile sits: its tile coordinates in the level's tile grid.
struct TilePos {
  int x;
  int y;
};

// Phase 1, thread t: taps of the tile's sample columns (threads 0..73) and rows (128..201), the
// gamma table and the cell weights.
CUIMG_HOG_HD void LoadTaps(const BlocksParams& p, const BlockJob& job, TilePos tile, int t,
                           BlocksSmem& s) {
  const int px0 = tile.x * kTile * kHogBlockStride;  // padded-level coordinates of the tile
  const int py0 = tile.y * kTile * kHogBlockStride;
  const int cn = p.channels;
  if (t < kSamples) {
    const int lx = Reflect101(px0 - 1 + t - p.padding, job.width);
    ExactTap tap{lx, lx, 256u, 0u};
    if (!job.direct) tap = LinearExactTap(lx, job.scale_x, p.src_w);
    s.xtap[t] =
        make_int4(tap.i0 * cn, tap.i1 * cn, static_cast<int>(tap.c0), static_cast<int>(tap.c1));
  } else if (t >= 128 && t < 128 + kSamples) {
    const int ly = Reflect101(py0 - 1 + (t - 128) - p.padding, job.height);
    ExactTap tap{ly, ly, 256u, 0u};
    if (!job.direct) tap = LinearExactTap(ly, job.scale_y, p.src_h);
    s.ytap[t - 128] = make_int4(tap.i0, tap.i1, static_cast<int>(tap.c0), static_cast<int>(tap.c1));
  }
  s.lut[t] = GammaLut(t, p.gamma != 0);
  for (int i = t; i < 4 * kCellPixels; i += kBlockThreads) {
    const int c = i / kCellPixels;
    const int k = i - c * kCellPixels;
    s.cell_weights[c][k] = p.cell_weights[c][k];
  }
}

// Phase 2, thread t: its share of the level's pixels under the tile, INTER_LINEAR_EXACT from the
// input (or the input's own pixels at its size). Colour keeps B, G, R; BGRA's alpha is skipped.
CUIMG_HOG_HD void LoadSamples(const BlocksParams& p, const BlockJob& job, int t, BlocksSmem& s) {
  const int cn = p.channels;
  const int planes = cn == 1 ? 1 : 3;
  const std::size_t row_bytes = static_cast<std::size_t>(p.src_w) * cn;
  for (int i = t; i < kSamples * kSamples; i += kBlockThreads) {
    const int r = i / kSamples;
    const int c = i - r * kSamples;
    const int4 ty = s.ytap[r];
    const int4 tx = s.xtap[c];
    const std::uint8_t* row0 = p.src + static_cast<std::size_t>(ty.x) * row_bytes;
    if (job.direct) {
      for (int ch = 0; ch < planes; ++ch) s.u.samples[ch][r][c] = CUIMG_HOG_LDG(row0 + tx.x + ch);
      continue;
    }
    const std::uint8_t* row1 = p.src + static_cast<std::size_t>(ty.y) * row_bytes;
    const ExactTap hx{0, 0, static_cast<std::uint32_t>(tx.z), static_cast<std::uint32_t>(tx.w)};
    const ExactTap hy{0, 0, static_cast<std::uint32_t>(ty.z), static_cast<std::uint32_t>(ty.w)};
    for (int ch = 0; ch < planes; ++ch) {
      const std::uint32_t h0 =
          ExactRow(CUIMG_HOG_LDG(row0 + tx.x + ch), CUIMG_HOG_LDG(row0 + tx.y + ch), hx);
      const std::uint32_t h1 =
          ExactRow(CUIMG_HOG_LDG(row1 + tx.x + ch), CUIMG_HOG_LDG(row1 + tx.y + ch), hx);
      s.u.samples[ch][r][c] = ExactColumn(h0, h1, hy);
    }
  }
}

// Phase 3, thread t: its share of the tile's 72 x 72 votes. OpenCV's colour rule depends on the
// column's place in the padded row (see MaxChannel).
CUIMG_HOG_HD void ComputeVotes(const BlocksParams& p, const BlockJob& job, TilePos tile, int t,
                               BlocksSmem& s) {
  const int px0 = tile.x * kTile * kHogBlockStride;
  const int simd_end = (job.width + 2 * p.padding) & ~3;
  for (int i = t; i < kTilePixels * kTilePixels; i += kBlockThreads) {
    const int r = i / kTilePixels;
    const int c = i - r * kTilePixels;
    float dx;
    float dy;
    if (p.channels == 1) {
      dx = s.lut[s.u.samples[0][r + 1][c + 2]] - s.lut[s.u.samples[0][r + 1][c]];
      dy = s.lut[s.u.samples[0][r + 2][c + 1]] - s.lut[s.u.samples[0][r][c + 1]];
    } else {
      float cdx[3];
      float cdy[3];
      for (int ch = 0; ch < 3; ++ch) {
        cdx[ch] = s.lut[s.u.samples[ch][r + 1][c + 2]] - s.lut[s.u.samples[ch][r + 1][c]];
        cdy[ch] = s.lut[s.u.samples[ch][r + 2][c + 1]] - s.lut[s.u.samples[ch][r][c + 1]];
      }
      MaxChannel(cdx, cdy, px0 + c < simd_end, &dx, &dy);
    }
    const Vote v = VoteOf(dx, dy);
    s.w0[r][c] = v.w0;
    s.w1[r][c] = v.w1;
    s.bin[r][c] = static_cast<std::uint8_t>(v.bin0);
  }
}

// Phase 4, thread t: cell (t & 3) of tile block (t >> 2), summed over its 144 pixels into the
// thread's own column of `hist` (nothing shared, no atomics), returned in h with the sum of
// squares. Lanes start their column walk at different offsets so that a warp's loads of the vote
// planes (pitch 72) hit 32 different banks.
CUIMG_HOG_HD float AccumulateCell(int t, BlocksSmem& s, float (&h)[kHogBins]) {
  const int b = t >> 2;
  const int cell = t & 3;
  const int cx = cell >> 1;
  const int cy = cell & 1;
  const int bxl = b & (kTile - 1);
  const int byl = b / kTile;
  for (int k = 0; k < kHogBins; ++k) s.u.hist[k][t] = 0.f;
  const int r0 = byl * kHogBlockStride + 4 * cy;
  const int c0 = bxl * kHogBlockStride + 4 * cx;
  const int stagger = 2 * cy + (bxl >> 2);
  const float* weights = s.cell_weights[cell];
  for (int ii = 0; ii < kCellSupport; ++ii) {
    for (int j = 0; j < kCellSupport; ++j) {
      int jj = j + stagger;
      jj -= jj >= kCellSupport ? kCellSupport : 0;
      const float w = weights[ii * kCellSupport + jj];
      const float a0 = s.w0[r0 + ii][c0 + jj];
      const float a1 = s.w1[r0 + ii][c0 + jj];
      const int h0 = s.bin[r0 + ii][c0 + jj];
      const int h1 = h0 + 1 < kHogBins ? h0 + 1 : 0;
      s.u.hist[h0][t] += a0 * w;
      s.u.hist[h1][t] += a1 * w;
    }
  }
  float ss = 0.f;
  for (int k = 0; k < kHogBins; ++k) {
    h[k] = s.u.hist[k][t];
    ss += h[k] * h[k];
  }
  return ss;
}

// L2-Hys, given the block's sums of squares (its 4 cells' sums added pairwise: (a + b) + (c + d)).
// First: v = min(v / (|v| + 3.6), 0.2), returning the new sum of squares; then v / (|v| + 1e-3).
CUIMG_HOG_HD float ClipCell(float (&h)[kHogBins], float block_sum_squares) {
  const float scale = 1.f / (sqrtf(block_sum_squares) + kHogBlockFeatures * 0.1f);
  float ss = 0.f;
  for (int k = 0; k < kHogBins; ++k) {
    h[k] = fminf(h[k] * scale, kHogL2HysThreshold);
    ss += h[k] * h[k];
  }
  return ss;
}
CUIMG_HOG_HD float RenormScale(float block_sum_squares) {
  return 1.f / (sqrtf(block_sum_squares) + 1e-3f);
}

// Phase 5, thread t: its cell's 9 features (feature-planar: row by * 36 + f, column bx), unless
// the block lies past the level's.
CUIMG_HOG_HD void StoreCell(const BlocksParams& p, const BlockJob& job, TilePos tile, int t,
                            const float (&h)[kHogBins], float scale) {
  const int b = t >> 2;
  const int cell = t & 3;
  const int bx = tile.x * kTile + (b & (kTile - 1));
  const int by = tile.y * kTile + b / kTile;
  if (bx >= job.blocks_x || by >= job.blocks_y) return;
  float* out = p.features + job.feature_offset +
               (static_cast<long long>(by) * kHogBlockFeatures + cell * kHogBins) * job.pitch + bx;
  for (int k = 0; k < kHogBins; ++k) out[static_cast<long long>(k) * job.pitch] = h[k] * scale;
}

}  // namespace cuimg::hog

#endif  // CUIMG_KERNELS_SRC_HOG_TILE_H_
