// The blocks kernel of hog_detect.cu as per-thread phase functions over a per-thread state,
// compiled for the GPU and for the host: the kernel calls them between barriers with the state in
// registers, and DetectPlan::EmulateOnHost calls them for every thread of every CUDA block in
// turn, so CPU tests exercise the kernel's own indexing, shared-memory layout and arithmetic.
// The layout and the launch parameters are in hog_strip_layout.h.
//
// A CUDA block of 128 threads takes a strip of its level in one frame: kStripBlocksX = 14 HOG
// blocks across (112 columns), BlockJob::strip_rows (up to kStripMaxBlocksY = 32) down, fewer at
// the level's bottom (StripRows). Thread t owns one column of the padded level, X0 - 1 + t, and
// walks down it:
//   - it samples its column (INTER_LINEAR_EXACT from the input) once per row and keeps the last
//     rows in registers for the vertical gradient; the horizontal neighbours come from a row
//     buffer in shared memory, written for 8 rows at a time (one barrier);
//   - its votes go, weighted, into its own column of shared-memory sums: a block's Gaussian x
//     bilinear weight is the product of a row factor and a column factor (both
//     exp(-d^2 / 2 sigma^2) times a linear ramp), so a column's vertical sums over a cell's 12
//     rows (2 cells x 2 block rows open at a time) are private to its thread. A vote touches its
//     two bins only (a read and a write each); sums in registers cost a select and a multiply-add
//     for each of the 9 bins of every open sum (run 210: with the division's slow path gone,
//     398 -> 330 us at 1080p);
//   - each time a block row is complete, 112 threads (per block, cell and half of the cell's
//     columns) take the horizontal sums over the cell's 12 columns, a lane pair adds its halves,
//     and 8 lanes a block the L2-Hys normalization and the store.
// Shared-memory traffic per pixel is a dozen conflict-free accesses, where the tiled kernel it
// replaced scattered 8 per (pixel, cell) pair. The weights differ from OpenCV's per-pixel float
// products in the last bit and the sums run in another order; hog_detect_emulation_test and
// detect_gpu_test hold the scores within 1e-4 of the CPU reference's (OpenCV's order).
#ifndef CUIMG_KERNELS_SRC_HOG_STRIP_H_
#define CUIMG_KERNELS_SRC_HOG_STRIP_H_

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/hog_types.h"
#include "hog_math.h"
#include "hog_scores.h"
#include "hog_strip_layout.h"
#include "hog_words.h"

namespace cuimg::hog {

CUIMG_HOG_HD float Fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// The input pixel at byte offset `at` of a row: B, G, R (or gray), one word for BGRA.
template <int kChannels>
CUIMG_HOG_HD void LoadPixel(const std::uint8_t* at, std::uint32_t (&v)[kChannels == 1 ? 1 : 3]) {
  if constexpr (kChannels == 4) {
    std::uint32_t w;
#if defined(__CUDA_ARCH__)
    w = __ldg(reinterpret_cast<const unsigned int*>(at));
#else
    std::memcpy(&w, at, sizeof(w));  // little endian, as the device
#endif
    v[0] = w & 0xffu;
    v[1] = (w >> 8) & 0xffu;
    v[2] = (w >> 16) & 0xffu;
  } else {
    for (int c = 0; c < (kChannels == 1 ? 1 : 3); ++c) v[c] = CUIMG_HOG_LDG(at + c);
  }
}

// Phase 0, thread t: the gamma table, the strip's row taps, and the thread's column tap.
template <int kChannels, bool kWords>
CUIMG_HOG_HD void StartStrip(const BlocksParams& p, const BlockJob& job, const Strip& strip, int t,
                             StripSmem& s, StripThread<kChannels == 1 ? 1 : 3>& th) {
  const int x0 = strip.x * kStripBlocksX * kHogBlockStride;  // padded column of thread 1
  const int y0 = strip.y * job.strip_rows * kHogBlockStride;
  th.column = x0 - 1 + t;
  th.simd = th.column < ((job.width + 2 * p.padding) & ~3);
  const int lx = Reflect101(th.column - p.padding, job.width);
  ExactTap tap{lx, lx, 256u, 0u};
  if (!job.direct) tap = LinearExactTap(lx, job.scale_x, p.src_w);
  th.xtap = make_int4(tap.i0 * kChannels, tap.i1 * kChannels, static_cast<int>(tap.c0),
                      static_cast<int>(tap.c1));
  if constexpr (kWords) th.wtap = MakeWordTap(tap);
  const int row_bytes = p.src_w * kChannels;  // the plan keeps the input under 2 GiB
  const int rows = (StripRows(job, strip) + 1) * kPeriodRows + 2;  // 1 above, 1 below
  for (int r = t; r < rows; r += kStripThreads) {
    const int ly = Reflect101(y0 - 1 + r - p.padding, job.height);
    ExactTap ty{ly, ly, 256u, 0u};
    if (!job.direct) ty = LinearExactTap(ly, job.scale_y, p.src_h);
    s.ytap[r] = make_int4(ty.i0 * row_bytes, ty.i1 * row_bytes, static_cast<int>(ty.c0),
                          static_cast<int>(ty.c1));
  }
  for (int i = t; i < 256; i += kStripThreads) s.lut[i] = GammaLut(i, p.gamma != 0);
}

// The gamma-corrected sample of strip row r (0 = the row above the first vote row) in the
// thread's column, INTER_LINEAR_EXACT from the frame's input `src`, or with kDirect (the level
// has the input's size: job.direct) the input's own pixel.
template <int kChannels, bool kWords, bool kDirect, int kPlanes>
CUIMG_HOG_HD void SampleRow(const std::uint8_t* src, const StripSmem& s,
                            const StripThread<kPlanes>& th, int r, float (&out)[kPlanes]) {
  const int4 ty = s.ytap[r];
  if constexpr (kWords && !kDirect) {
    static_assert(kChannels == 3, "the word path reads 3 channels");
    std::uint32_t g0;
    std::uint32_t g1;
    const std::uint32_t br0 =
        WordRow(src + static_cast<unsigned>(ty.x) + th.wtap.offset, th.wtap, &g0);
    const std::uint32_t br1 =
        WordRow(src + static_cast<unsigned>(ty.y) + th.wtap.offset, th.wtap, &g1);
    const auto c0 = static_cast<std::uint32_t>(ty.z);
    const auto c1 = static_cast<std::uint32_t>(ty.w);
    out[0] = s.lut[WordColumn(br0 & 0xffffu, br1 & 0xffffu, c0, c1)];
    out[1] = s.lut[WordColumn(g0, g1, c0, c1)];
    out[2] = s.lut[WordColumn(br0 >> 16, br1 >> 16, c0, c1)];
    return;
  }
  const std::uint8_t* row0 = src + static_cast<unsigned>(ty.x);
  std::uint32_t a[kPlanes];
  LoadPixel<kChannels>(row0 + th.xtap.x, a);
  if constexpr (kDirect) {
    for (int c = 0; c < kPlanes; ++c) out[c] = s.lut[a[c]];
    return;
  }
  const std::uint8_t* row1 = src + static_cast<unsigned>(ty.y);
  std::uint32_t b[kPlanes];
  std::uint32_t d[kPlanes];
  std::uint32_t e[kPlanes];
  LoadPixel<kChannels>(row0 + th.xtap.y, b);
  LoadPixel<kChannels>(row1 + th.xtap.x, d);
  LoadPixel<kChannels>(row1 + th.xtap.y, e);
  const ExactTap hx{0, 0, static_cast<std::uint32_t>(th.xtap.z),
                    static_cast<std::uint32_t>(th.xtap.w)};
  const ExactTap hy{0, 0, static_cast<std::uint32_t>(ty.z), static_cast<std::uint32_t>(ty.w)};
  for (int c = 0; c < kPlanes; ++c) {
    out[c] = s.lut[ExactColumn(ExactRow(a[c], b[c], hx), ExactRow(d[c], e[c], hx), hy)];
  }
}

// Phase 1 of period p, thread t: samples rows 8p + 1 .. 8p + 8 of its column (at p = 0 also the
// two rows above) of the frame's input `src` into its window, and rows 8p .. 8p + 7 into the
// shared row buffer. kDirect is job.direct, decided once a period by the caller: a test in each
// row split the period's samples into blocks that ptxas could not interleave.
template <int kChannels, bool kWords, bool kDirect, int kPlanes>
CUIMG_HOG_HD void SamplePeriod(const std::uint8_t* src, int period, int t, StripSmem& s,
                               StripThread<kPlanes>& th) {
  if (period == 0) {
    SampleRow<kChannels, kWords, kDirect>(src, s, th, 0, th.window[0]);
    SampleRow<kChannels, kWords, kDirect>(src, s, th, 1, th.window[1]);
  } else {
    for (int c = 0; c < kPlanes; ++c) {
      th.window[0][c] = th.window[kPeriodRows][c];
      th.window[1][c] = th.window[kPeriodRows + 1][c];
    }
  }
  CUIMG_HOG_UNROLL
  for (int q = 0; q < kPeriodRows; ++q) {
    SampleRow<kChannels, kWords, kDirect>(src, s, th, period * kPeriodRows + q + 2,
                                          th.window[q + 2]);
  }
  CUIMG_HOG_UNROLL
  for (int q = 0; q < kPeriodRows; ++q) {
    for (int c = 0; c < kPlanes; ++c) s.rows[c][q][t] = th.window[q + 1][c];
  }
}

// Where the vote's sums lie: a 32-bit shared-memory byte address on the GPU, a pointer on the host
// (the emulation).
#if defined(__CUDA_ARCH__)
using SumAddress = unsigned;
inline constexpr int kSumUnit = sizeof(float);  // address units a float
#else
using SumAddress = float*;
inline constexpr int kSumUnit = 1;
#endif

// One vote's sum for one bin of block row p or p - 1 (cell row 0; cell row 1 lies kSumPlaneStride
// floats further). On the GPU ptxas turned every float index into its own address (a multiply-add
// and a LEA onto the shared window: ~9 instructions a pixel for the vote's 4 sums); explicit
// addresses with the planes' offsets as immediates take 4.
struct SumRef {
  SumAddress at;
  template <int kCellRow>
  CUIMG_HOG_HD float Load() const {
#if defined(__CUDA_ARCH__)
    float v;
    asm volatile("ld.shared.f32 %0, [%1+%2];"
                 : "=f"(v)
                 : "r"(at), "n"(kCellRow * kSumPlaneStride * kSumUnit));
    return v;
#else
    return at[kCellRow * kSumPlaneStride];
#endif
  }
  template <int kCellRow>
  CUIMG_HOG_HD void Store(float v) const {
#if defined(__CUDA_ARCH__)
    asm volatile("st.shared.f32 [%0+%1], %2;" ::"r"(at), "n"(kCellRow * kSumPlaneStride * kSumUnit),
                 "f"(v)
                 : "memory");
#else
    at[kCellRow * kSumPlaneStride] = v;
#endif
  }
};

// The open sums of a thread's column at bin 0, cell row 0: block row p's, and the offset to block
// row p - 1's; Cur and Prev move to a bin.
struct SumColumn {
  SumAddress cur;
  int to_prev;  // address units
  CUIMG_HOG_HD SumRef Cur(int bin) const { return SumRef{cur + bin * (kSumBinStride * kSumUnit)}; }
  CUIMG_HOG_HD SumRef Prev(int bin) const {
    return SumRef{cur + bin * (kSumBinStride * kSumUnit) + to_prev};
  }
};

CUIMG_HOG_HD SumColumn SumColumnOf(StripSmem& s, int period, int t) {
  float* const cur = s.sums + SumIndex(period, 0, 0, t);
  const int to_prev = SumIndex(period - 1, 0, 0, 0) - SumIndex(period, 0, 0, 0);  // floats
#if defined(__CUDA_ARCH__)
  return SumColumn{static_cast<unsigned>(__cvta_generic_to_shared(cur)), to_prev * kSumUnit};
#else
  return SumColumn{cur, to_prev};
#endif
}

// Row q of a period's votes into the open sums: row q + 8 of block row p - 1 (cell 0 covers rows
// 0..11, cell 1 rows 4..15; `prev0`, `prev1` for the vote's two bins) when has_prev, row q of
// block row p (`cur0`, `cur1`) when has_cur; each sum += vote * the row's weight. The up to 6
// sums are distinct (the bins differ, the planes too), so every load goes out before the first
// store: one shared-memory round trip where one sum after the other made a chain of six.
CUIMG_HOG_HD void AddRowVotes(const BlocksParams& p, int q, bool has_prev, bool has_cur,
                              const SumRef& prev0, const SumRef& prev1, const SumRef& cur0,
                              const SumRef& cur1, const Vote& v) {
  const bool prev_cell0 = has_prev && q + kPeriodRows < kCellSupport;
  const bool cur_cell1 = has_cur && q >= kHogBlockSize - kCellSupport;
  float a0 = 0.f, a1 = 0.f, b0 = 0.f, b1 = 0.f, c0 = 0.f, c1 = 0.f, d0 = 0.f, d1 = 0.f;
  if (prev_cell0) {
    a0 = prev0.Load<0>();
    a1 = prev1.Load<0>();
  }
  if (has_prev) {
    b0 = prev0.Load<1>();
    b1 = prev1.Load<1>();
  }
  if (has_cur) {
    c0 = cur0.Load<0>();
    c1 = cur1.Load<0>();
  }
  if (cur_cell1) {
    d0 = cur0.Load<1>();
    d1 = cur1.Load<1>();
  }
  const int qp = q + kPeriodRows;  // the row in block row p - 1
  if (prev_cell0) {
    prev0.Store<0>(Fma(v.w0, p.row_weight[0][qp], a0));
    prev1.Store<0>(Fma(v.w1, p.row_weight[0][qp], a1));
  }
  if (has_prev) {
    prev0.Store<1>(Fma(v.w0, p.row_weight[1][qp], b0));
    prev1.Store<1>(Fma(v.w1, p.row_weight[1][qp], b1));
  }
  if (has_cur) {
    cur0.Store<0>(Fma(v.w0, p.row_weight[0][q], c0));
    cur1.Store<0>(Fma(v.w1, p.row_weight[0][q], c1));
  }
  if (cur_cell1) {
    cur0.Store<1>(Fma(v.w0, p.row_weight[1][q], d0));
    cur1.Store<1>(Fma(v.w1, p.row_weight[1][q], d1));
  }
}

// Phase 2 of period p, thread t: the votes of rows 8p .. 8p + 7 of its column, summed into its
// column of block rows p - 1 (its rows 8..15) and p (rows 0..7, whose sums it zeroes first: block
// row p - 2 was there, read by phase 3 of period p - 1) with the row weights. The strip has
// `rows` block rows (StripRows): its first period closes none, its last opens none. kMiddle:
// the caller knows 0 < period < rows (both block rows open), so the rows' votes are code without
// branches that ptxas interleaves (the tests around each row's sums split them into blocks).
template <bool kMiddle, int kPlanes>
CUIMG_HOG_HD void VotePeriod(const BlocksParams& p, int rows, int period, int t, StripSmem& s,
                             const StripThread<kPlanes>& th) {
  const int left = t > 0 ? t - 1 : 0;  // threads 0 and 127 vote for no block: any neighbour
  const int right = t + 1 < kStripThreads ? t + 1 : t;
  const bool has_prev = kMiddle || period > 0;
  const bool has_cur = kMiddle || period < rows;
  const SumColumn sums = SumColumnOf(s, period, t);
  if (has_cur) {
    CUIMG_HOG_UNROLL
    for (int k = 0; k < kHogBins; ++k) {
      float* const cur = s.sums + SumIndex(period, 0, k, t);
      cur[0] = 0.f;
      cur[kSumPlaneStride] = 0.f;
    }
  }
  CUIMG_HOG_UNROLL
  for (int q = 0; q < kPeriodRows; ++q) {
    float dx;
    float dy;
    float mag2;
    if constexpr (kPlanes == 1) {
      dx = s.rows[0][q][right] - s.rows[0][q][left];
      dy = th.window[q + 2][0] - th.window[q][0];
      mag2 = dx * dx + dy * dy;
    } else {
      float cdx[3];
      float cdy[3];
      for (int c = 0; c < 3; ++c) {
        cdx[c] = s.rows[c][q][right] - s.rows[c][q][left];
        cdy[c] = th.window[q + 2][c] - th.window[q][c];
      }
      mag2 = PickChannel(cdx, cdy, th.simd, &dx, &dy);
    }
    const Vote v = VoteOfMagnitude(dx, dy, mag2);
    AddRowVotes(p, q, has_prev, has_cur, sums.Prev(v.bin0), sums.Prev(v.bin1), sums.Cur(v.bin0),
                sums.Cur(v.bin1), v);
  }
}

// Phase 3a of period p >= 1, thread t: the 9 bins of cell (t >> 1) & 3 of strip block t >> 3 in
// block row p - 1, summed with the column weights over half (t & 1) of the cell's 12 columns
// (threads past the strip's blocks give zeros). Lanes (block b, cell cx cy, half) read column
// 8b + 4cx + 6 half + j + 1 of plane cy: banks 8b + 4cx + 6 half + cy + j + 1, 32 different ones.
CUIMG_HOG_HD void HorizontalHalf(const BlocksParams& p, int period, int t, const StripSmem& s,
                                 float (&part)[kHogBins]) {
  const int b = t >> 3;
  const int cx = (t >> 2) & 1;
  const int cy = (t >> 1) & 1;
  const int half = t & 1;
  for (int k = 0; k < kHogBins; ++k) part[k] = 0.f;
  if (b >= kStripBlocksX) return;
  // The cell's first column in the block, then this half's.
  const int first = (kHogBlockSize - kCellSupport) * cx + kHalfColumns * half;
  const float* plane = s.sums + SumIndex(period - 1, cy, 0, b * kHogBlockStride + first + 1);
  CUIMG_HOG_UNROLL
  for (int j = 0; j < kHalfColumns; ++j) {
    const float w = p.column_weight[cx][first + j];
    CUIMG_HOG_UNROLL
    for (int k = 0; k < kHogBins; ++k) part[k] = Fma(plane[k * kSumBinStride + j], w, part[k]);
  }
}

// Phase 3b, thread t: its cell's sums h = part + the other half's part, kept for the half
// (t & 1) of the bins it stores (0..4 or 5..8; the others zeroed), with their sum of squares.
CUIMG_HOG_HD float CellHalf(int t, float (&h)[kHogBins]) {
  const bool upper = (t & 1) != 0;
  float ss = 0.f;
  CUIMG_HOG_UNROLL
  for (int k = 0; k < kHogBins; ++k) {
    if ((k >= kHalfBins) != upper) h[k] = 0.f;
    ss += h[k] * h[k];  // a zeroed bin adds 0 exactly
  }
  return ss;
}

// L2-Hys, given the block's sums of squares (its 4 cells' sums added pairwise: (a + b) + (c + d)).
// First: v = min(v / (|v| + 3.6), 0.2), returning the new sum of squares; then v / (|v| + 1e-3).
CUIMG_HOG_HD float ClipCell(float (&h)[kHogBins], float block_sum_squares) {
  const float scale =
      ReciprocalInRange(SqrtOfNonNegative(block_sum_squares) + kHogBlockFeatures * 0.1f);
  float ss = 0.f;
  for (int k = 0; k < kHogBins; ++k) {
    h[k] = fminf(h[k] * scale, kHogL2HysThreshold);
    ss += h[k] * h[k];
  }
  return ss;
}
CUIMG_HOG_HD float RenormScale(float block_sum_squares) {
  return ReciprocalInRange(SqrtOfNonNegative(block_sum_squares) + 1e-3f);
}

// Phase 4, thread t: its half of its cell's 9 features (FeatureIndex) for block row p - 1 of its
// frame, unless the block lies past the strip's or the level's.
CUIMG_HOG_HD void StoreCell(const BlocksParams& p, const BlockJob& job, const Strip& strip,
                            int period, int t, const float (&h)[kHogBins], float scale) {
  const int b = t >> 3;
  const int cell = (t >> 1) & 3;
  const bool upper = (t & 1) != 0;
  const int bx = strip.x * kStripBlocksX + b;
  const int by = strip.y * job.strip_rows + period - 1;
  if (b >= kStripBlocksX || bx >= job.blocks_x || by >= job.blocks_y) return;
  const int first = cell * kHogBins + (upper ? kHalfBins : 0);
  // Feature f lies (f / 4) * pitch * 4 + f % 4 floats past the block's feature 0 (FeatureIndex),
  // so the thread's i-th lies i + ((first % 4 + i) / 4) * (pitch * 4 - 4) past its first: one
  // 64-bit address, then 32-bit offsets, and no branch around a store (their address arithmetic
  // and branches took ~95 instructions a block row and thread, now ~57: sm_90 SASS).
  float* at = p.features + strip.frame * p.frame_floats + job.feature_offset +
              FeatureIndex(job.pitch, bx, by, first);
  const int skip = job.pitch * 4 - 4;
  const int lane = first & 3;
  CUIMG_HOG_UNROLL
  for (int i = 0; i < kHogBins - kHalfBins; ++i) {  // the upper half has 4 bins (5..8), the lower 5
    at[i + ((lane + i) >> 2) * skip] = (upper ? h[i + kHalfBins] : h[i]) * scale;
  }
  constexpr int kLast = kHalfBins - 1;  // the lower half's fifth bin
  if (!upper) at[kLast + ((lane + kLast) >> 2) * skip] = h[kLast] * scale;
}

// Whether the blocks kernel samples the plan's `frames` inputs (p.src) from 32-bit words
// (hog_words.h): 3 channels, rows of a whole number of words and every input 4-byte aligned, so
// that every word it loads lies in its input.
inline bool SampleWords(const BlocksParams& p, int frames) {
  if (p.channels != 3 || (p.src_w * 3) % 4 != 0) return false;
  for (int f = 0; f < frames; ++f) {
    if (reinterpret_cast<std::uintptr_t>(p.src[f]) % 4 != 0) return false;
  }
  return true;
}

// The weight tables of BlocksParams (host): OpenCV's block Gaussian (sigma 4) and its bilinear
// cell ramps (HOGCache::init), one axis at a time.
inline void FillAxisWeights(float (&w)[2][kHogBlockSize]) {
  const float scale = 1.f / (4.f * 4.f * 2);
  for (int i = 0; i < kHogBlockSize; ++i) {
    float d = static_cast<float>(i) - kHogBlockSize * 0.5f;
    d *= d;
    const float gauss = std::exp(-d * scale);
    const float cell = (i + 0.5f) / kHogCellSize - 0.5f;
    const int c0 = static_cast<int>(std::floor(cell));
    const float frac = cell - static_cast<float>(c0);
    for (int c = 0; c < 2; ++c) {
      const float ramp = c == c0 ? 1.f - frac : (c == c0 + 1 ? frac : 0.f);
      w[c][i] = gauss * ramp;
    }
  }
}

}  // namespace cuimg::hog

#endif  // CUIMG_KERNELS_SRC_HOG_STRIP_H_
