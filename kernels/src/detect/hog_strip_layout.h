// The blocks kernel's layout (hog_strip.h): a strip's size in threads and block rows, the launch
// parameters of its levels and frames, the shared memory of a CUDA block and where its column sums
// lie, and which strip of which frame a CUDA block takes. Shared by the kernel (hog_detect.cu), its
// host emulation (hog_emulation.cu) and the plan that fills the parameters (hog_plan.cu).
#ifndef CUIMG_KERNELS_SRC_HOG_STRIP_LAYOUT_H_
#define CUIMG_KERNELS_SRC_HOG_STRIP_LAYOUT_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/hog_types.h"
#include "hog_math.h"
#include "hog_scores.h"
#include "hog_words.h"

namespace cuimg::hog {

inline constexpr int kStripThreads = 128;  // one sampled column each
inline constexpr int kStripBlocksX = 14;   // blocks whose 16 columns lie in threads 1..112
// Block rows a strip: at most 32 (33 periods of vote rows for 32 block rows: the first period's
// rows are the halo that the strip above also samples); the plan gives the last levels fewer so
// that the launch ends in short strips (StripRowsOf in hog_plan.cu). 1080p, 8 frames a launch
// (H200, checkpoint c1 of 2026-12-02): blocks 244.3 -> 237.2 us a frame against 16 at most.
inline constexpr int kStripMaxBlocksY = 32;
inline constexpr int kPeriodRows = kHogBlockStride;                             // rows per barrier
inline constexpr int kStripMaxRows = (kStripMaxBlocksY + 1) * kPeriodRows + 2;  // sampled rows
inline constexpr int kCellSupport = 12;  // a cell's rows (columns)
inline constexpr int kHalfBins = 5;      // a cell thread's bins: 0..4 or 5..8
// Column sums: [block row & 1][cy][bin][column] (SumIndex). The bin stride is 0 mod 32, so a
// vote's lanes write one bank each whatever their bins; the plane stride is 1 mod 32, so the 32
// (block, cell, half) lanes of a warp in HorizontalHalf read 32 banks (see there).
inline constexpr int kSumBinStride = kStripThreads;                   // 0 mod 32
inline constexpr int kSumPlaneStride = kHogBins * kSumBinStride + 1;  // 1153
inline constexpr int kSumRowStride = 2 * kSumPlaneStride;
inline constexpr int kHalfColumns = kCellSupport / 2;  // a cell thread's columns
static_assert(kSumBinStride % 32 == 0 && kSumPlaneStride % 32 == 1, "bank layout");
static_assert(kStripBlocksX * kHogBlockStride + kHogBlockStride + 2 <= kStripThreads,
              "a strip's blocks and their gradient halo fit the threads");
static_assert(kStripBlocksX * 8 <= kStripThreads, "a thread per (block, cell, half)");

// Frames a launch pair takes: their inputs' addresses travel in BlocksParams (8 bytes each).
inline constexpr int kMaxFrames = kMaxDetectFrames;

// One level of the blocks launch, for every frame: frame f's strips are CUDA blocks
// first_block + f * strips .. first_block + (f + 1) * strips - 1 of the level's job.
struct BlockJob {
  double scale_x;  // ResizeScale(input, level): the INTER_LINEAR_EXACT taps' scale
  double scale_y;
  long long feature_offset;  // floats, from the workspace's start
  int width;                 // the level image
  int height;
  int blocks_x;
  int blocks_y;
  int tiles_x;     // strips across
  int strips;      // of one frame: tiles_x times the strips down
  int strip_rows;  // block rows a strip, 1..kStripMaxBlocksY (the last ones down may have fewer)
  int pitch;       // float4s between feature rows: blocks_x rounded up to 32 (FeatureIndex)
  int direct;      // the level has the input's size: its pixels are the input's
};

struct BlocksParams {
  float* features;  // frame f's at features + f * frame_floats
  unsigned int* hit_count;
  long long frame_floats;
  int src_w;
  int src_h;
  int channels;
  int padding;
  int gamma;
  int reset_count;  // the first launch zeroes the hit count
  int num_jobs;
  int first_block[kMaxJobs + 1];
  BlockJob jobs[kMaxJobs];
  // The block's vote weight of pixel (i, j) for cell (cx, cy) is row[cy][i] * column[cx][j]:
  // exp(-(d - 8)^2 / 32) times the bilinear ramp of the cell along that axis (0 off its support).
  float row_weight[2][kHogBlockSize];
  float column_weight[2][kHogBlockSize];
  const std::uint8_t* src[kMaxFrames];  // each frame's input (DetectPlan::Run's `in`)
};

struct StripSmem {
  float rows[3][kPeriodRows][kStripThreads];  // gamma-corrected samples, B, G, R (gray: plane 0)
  float sums[2 * kSumRowStride];              // the open block rows' column sums (SumIndex)
  float lut[256];
  int4 ytap[kStripMaxRows];  // (byte offset of row i0, of row i1, c0, c1)
};

// A thread's registers across the strip.
template <int kPlanes>
struct StripThread {
  int4 xtap;     // its column's (byte offset of i0 in a row, of i1, c0, c1)
  WordTap wtap;  // the same tap for the word path (3 channels, SampleWords; not at direct levels)
  int column;    // in the padded level
  bool simd;     // OpenCV's colour tie rule for the column (MaxChannel)
  float window[kPeriodRows + 2][kPlanes];  // samples of rows 8p - 1 .. 8p + 8
};

// Where StripSmem::sums keeps bin `bin` of cell row cy of block row `row`, column `column`.
CUIMG_HOG_HD int SumIndex(int row, int cy, int bin, int column) {
  return (row & 1) * kSumRowStride + cy * kSumPlaneStride + bin * kSumBinStride + column;
}

// What CUDA block `local` of a level's blocks (its index less the job's first_block) works on.
struct Strip {
  int frame;
  int x;  // in the level's strip grid
  int y;
};

// Frame-major: a frame's strips in the level's row-major order. Two integer divisions, once per
// CUDA block of thousands of instructions a thread.
CUIMG_HOG_HD Strip StripOf(const BlockJob& job, int local) {
  Strip s;
  s.frame = local / job.strips;
  const int tile = local - s.frame * job.strips;
  s.y = tile / job.tiles_x;
  s.x = tile - s.y * job.tiles_x;
  return s;
}

// The strip's block rows: strip_rows, fewer in the level's last strips down, whose periods past
// the level's blocks would compute nothing that is stored (1080p, one frame: 5% of the periods).
// Not skipped: the warps of a level's last strips across that no block needs (another 3.5%):
// the branch around their sampling and votes cost ptxas's hoisted addresses, +75 instructions a
// period for every warp (SASS of sm_90).
CUIMG_HOG_HD int StripRows(const BlockJob& job, const Strip& strip) {
  const int left = job.blocks_y - strip.y * job.strip_rows;
  return left < job.strip_rows ? left : job.strip_rows;
}

}  // namespace cuimg::hog

#endif  // CUIMG_KERNELS_SRC_HOG_STRIP_LAYOUT_H_
