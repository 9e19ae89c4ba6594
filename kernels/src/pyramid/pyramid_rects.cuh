// The FROM_BASE pyramid kernel: each block owns a rectangle of the SOURCE, kRectW columns by
// RectRows() rows (pyramid_rect_rows.h), and writes, for every level of the launch, the outputs
// whose first tap falls in that rectangle. The rectangle is converted to float once and staged in
// shared memory (see kHalfStaged), so the levels read the source from L2 once instead of once each
// (the output-tile kernel in pyramid.cu was bound by those re-reads), and each output is one or two
// 8-byte shared loads, four float operations (BilinearSample's, with the horizontal differences
// staged) and one store. Each warp writes whole levels, taking the next one (largest first) from a
// shared counter when it is done, so the block's warps finish close together (levels dealt up front
// by pixel count left the warps 12% apart); a level's bounds and taps are computed once per
// rectangle, and the one barrier is the staging's.
#ifndef CUIMG_KERNELS_SRC_PYRAMID_RECTS_CUH_
#define CUIMG_KERNELS_SRC_PYRAMID_RECTS_CUH_

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pyramid_device.cuh"
#include "pyramid_rect_rows.h"

namespace cuimg::pyramid {

constexpr int kRectThreads = 128;
constexpr int kRectWarps = kRectThreads / 32;
constexpr int kRectLevels = 64;  // levels per launch (kernel parameters stay below 4 KiB)
// Row taps per pass: a level's rows in one rectangle number about kRectH / scale + 2; larger
// counts (sides beyond 2^15, where float coordinates get coarse) take more passes.
constexpr int kRowCap = kRectH + 32;

struct RectLevel {
  void* out;       // the level's first element in the packed output
  double scale_x;  // ResizeScale(source width, level width)
  double scale_y;
  int width;
  int height;
  int copy;  // the level has the source's size: its pixels are copied, not weighted
};

template <typename S>
struct RectParams {
  const S* src;
  int src_w;
  int src_h;
  int rects_x;     // rectangles per source row band
  int rect_h;      // source rows per rectangle, <= kRectH
  int num_levels;  // levels, largest first
  RectLevel levels[kRectLevels];
};

// The number of outputs d in [0, dst) whose first tap ResolveAxis(d).i0 is below `edge`, i.e. the
// first output owned by the rectangle starting at source coordinate `edge`. i0 is non-decreasing
// in d (a floor of a rounded increasing value, then clamped), so searching from the estimate is
// exact; the (float) estimate is a step or two off except on huge sides.
__device__ inline int FirstOwned(int edge, double scale, int src, int dst) {
  if (edge <= 0) return 0;
  int d = static_cast<int>(floorf(__fdividef(edge + 0.5f, static_cast<float>(scale)) - 0.5f));
  d = max(0, min(dst, d));
  while (d > 0 && ResolveAxis(d - 1, scale, src).i0 >= edge) --d;
  while (d < dst && ResolveAxis(d, scale, src).i0 < edge) ++d;
  return d;
}

// Shared-memory loads by 32-bit shared address: the compiler otherwise rebuilds the generic
// window base in the output loop.
__device__ __forceinline__ uint2 LoadShared(unsigned address) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(address));
  return v;
}

// How a rectangle is staged: an 8-byte entry per row and column. Float (pixel, right neighbour -
// pixel) pairs, the next row's one staged row further; or, for 8-bit sources with integer
// outputs, the pair as a half2 (exact: integers up to 2048 are) for the row and another for the
// next row, so that one 8-byte load fetches both rows' taps. The gathers of a warp (lanes a
// `scale` apart) conflict on banks, and halving their traffic took u8 -> u8 from 35.9 to 31.5 us
// at 1080p; with f32 outputs the same staging measured slower (40.8 against 36.8 us), so float
// outputs keep the float pairs.
template <typename S, typename O>
constexpr bool kHalfStaged = std::is_same_v<S, std::uint8_t> && !std::is_same_v<O, float>;

// Float outputs are stored evict-first (st.global.cs): this kernel never reads them back, and
// 1080p's 85 MB of them pass through a 50 MB L2 (36.8 against 38.6 us).
template <typename O>
__device__ __forceinline__ void StoreOut(O* at, O v) {
  if constexpr (std::is_same_v<O, float>) {
    __stcs(at, v);
  } else {
    *at = v;
  }
}

__device__ __forceinline__ unsigned PackHalf2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  unsigned bits;
  memcpy(&bits, &h, sizeof(bits));
  return bits;
}
__device__ __forceinline__ float2 UnpackHalf2(unsigned bits) {
  __half2 h;
  memcpy(&h, &bits, sizeof(bits));
  return __half22float2(h);
}

// One output's staged entries as loaded: the tap rows' (pixel, difference) pairs, `top` alone for
// half staging (it holds both rows) and for copies (its first word is the pixel).
struct Entries {
  uint2 top;
  uint2 bottom;
};
template <bool kCopy, bool kHalf>
__device__ __forceinline__ Entries Fetch(unsigned address) {
  Entries e;
  e.top = LoadShared(address);
  e.bottom = (kCopy || kHalf) ? make_uint2(0, 0) : LoadShared(address + kRectW * sizeof(uint2));
  return e;
}

// The output from its entries: the copied pixel, or the bilinear sample (BilinearSample's rounding
// with the horizontal differences staged: four float operations).
template <bool kCopy, bool kHalf>
__device__ __forceinline__ float Sample(const Entries& e, float wx1, float wy1) {
  if constexpr (kCopy) return kHalf ? UnpackHalf2(e.top.x).x : __uint_as_float(e.top.x);
  const float2 top = kHalf ? UnpackHalf2(e.top.x)
                           : make_float2(__uint_as_float(e.top.x), __uint_as_float(e.top.y));
  const float2 bottom = kHalf
                            ? UnpackHalf2(e.top.y)
                            : make_float2(__uint_as_float(e.bottom.x), __uint_as_float(e.bottom.y));
  const float upper = Lerp(top.x, top.y, wx1);
  const float lower = Lerp(bottom.x, bottom.y, wx1);
  return Lerp(upper, __fsub_rn(lower, upper), wy1);
}

// 32-column chunks per row pass: a level's row in a rectangle has about kRectW / scale + 2 outputs;
// longer ones (huge sides) take more passes.
constexpr int kMaxChunks = 5;

// Rows [ys, ys + rows) of one level in a warp, `chunks` 32-column chunks from output column xs
// (columns from xe on are not stored). Whole row segments are written one after the other, so
// the sectors that chunks and neighbouring rectangles share are completed while still in L2.
// The rows' taps are at shared address `row_taps`: (byte offset into the staged pairs, wy1
// bits). A copy (kCopy) owns the rectangle's own pixels and reads them.
template <bool kCopy, bool kHalf, int kChunks, typename O>
__device__ __forceinline__ void WriteRows(const RectLevel& level, int src_w, int x0,
                                          unsigned staged_at, unsigned row_taps, int xs, int xe,
                                          int ys, int rows) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  unsigned column[kChunks];
  float wx1[kChunks];
  bool store[kChunks];
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int x = xs + c * 32 + lane;
    store[c] = x < xe;
    // A copy reads its own pixel: ResolveAxis's float coordinate is exact only below 2^24.
    const AxisTap t = kCopy ? AxisTap{min(x, xe - 1), 1, 0.0f}
                            : ResolveAxis(min(x, xe - 1), level.scale_x, src_w);
    column[c] = staged_at + static_cast<unsigned>((t.i0 - x0) * sizeof(uint2));
    wx1[c] = t.w1;
  }
  O* const out = static_cast<O*>(level.out);
  const unsigned width = static_cast<unsigned>(level.width);
  const unsigned first = static_cast<unsigned>(ys) * width + static_cast<unsigned>(xs + lane);
  // Two rows at a time where it measured faster (1080p, run 60): single-chunk rows, and every
  // half-staged row (u8 out 30.1 -> 27.7 us); float-staged rows of 2+ chunks took 36.3 against
  // 35.2-35.5 that way.
#pragma unroll(kHalf || kChunks == 1 ? 2 : 1)
  for (int r = 0; r < rows; ++r) {
    const uint2 rt = LoadShared(row_taps + r * sizeof(uint2));
    O* const at = out + (first + static_cast<unsigned>(r) * width);
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const Entries e = Fetch<kCopy, kHalf>(column[c] + rt.x);
      const float v = Sample<kCopy, kHalf>(e, wx1[c], __uint_as_float(rt.y));
      if (store[c]) StoreOut(at + c * 32, FromFloat<O>(v));
    }
  }
}

template <bool kCopy, bool kHalf, typename O>
__device__ __forceinline__ void WriteRowsOfChunks(int chunks, const RectLevel& level, int src_w,
                                                  int x0, unsigned staged_at, unsigned row_taps,
                                                  int xs, int xe, int ys, int rows) {
  auto write = [&](auto n) {
    WriteRows<kCopy, kHalf, decltype(n)::value, O>(level, src_w, x0, staged_at, row_taps, xs, xe,
                                                   ys, rows);
  };
  switch (chunks) {
    case 1:
      return write(std::integral_constant<int, 1>{});
    case 2:
      return write(std::integral_constant<int, 2>{});
    case 3:
      return write(std::integral_constant<int, 3>{});
    case 4:
      return write(std::integral_constant<int, 4>{});
    default:
      return write(std::integral_constant<int, 5>{});
  }
}

// Float-staged 8-bit rectangles inside the image, on rows of whole 4-byte words, are staged a word
// per lane: each warp takes every kRectWarps-th row, so a thread's 9 loads are all in flight at
// once instead of 33 one-byte loads in three batches. Every block stages at once at the start, so
// that latency was the SMs' (1080p f32: 35.3-35.8 -> 34.8-35.1 us, runs 167-168).
__device__ __forceinline__ bool StagesWords(const RectParams<std::uint8_t>& p, int x0) {
  return (p.src_w & 3) == 0 && (reinterpret_cast<std::uintptr_t>(p.src) & 3) == 0 &&
         x0 + kRectW < p.src_w;
}

__device__ __forceinline__ void StageWords(const RectParams<std::uint8_t>& p, int x0, int y0,
                                           int rect_h, uint2* staged) {
  static_assert(kRectW == 4 * 32, "a warp's words span the rectangle's row");
  constexpr int kRowsPerWarp = (kRectH + 1 + kRectWarps - 1) / kRectWarps;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  unsigned word[kRowsPerWarp];
  unsigned right[kRowsPerWarp];
#pragma unroll
  for (int k = 0; k < kRowsPerWarp; ++k) {
    const int r = min(warp + k * kRectWarps, rect_h);
    const std::uint8_t* row =
        p.src + static_cast<std::size_t>(min(y0 + r, p.src_h - 1)) * static_cast<unsigned>(p.src_w);
    word[k] = __ldg(reinterpret_cast<const unsigned*>(row + x0) + lane);
    right[k] = lane == 31 ? __ldg(row + x0 + kRectW) : 0u;
  }
#pragma unroll
  for (int k = 0; k < kRowsPerWarp; ++k) {
    const int r = warp + k * kRectWarps;
    float a[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = SampleToFloat(static_cast<std::uint8_t>(word[k] >> (8 * i)));
    const float next_lane = __shfl_down_sync(0xffffffffu, a[0], 1);
    const float next = lane == 31 ? SampleToFloat(static_cast<std::uint8_t>(right[k])) : next_lane;
    if (r <= rect_h) {
      uint4* at = reinterpret_cast<uint4*>(staged + r * kRectW + lane * 4);
      at[0] = make_uint4(__float_as_uint(a[0]), __float_as_uint(__fsub_rn(a[1], a[0])),
                         __float_as_uint(a[1]), __float_as_uint(__fsub_rn(a[2], a[1])));
      at[1] = make_uint4(__float_as_uint(a[2]), __float_as_uint(__fsub_rn(a[3], a[2])),
                         __float_as_uint(a[3]), __float_as_uint(__fsub_rn(next, a[3])));
    }
  }
}

template <typename S, typename O>
__global__ void __launch_bounds__(kRectThreads)
    PyramidRectKernel(const __grid_constant__ RectParams<S> p) {
  // Row r, column c: (source(y0 + r, x0 + c), source(y0 + r, x0 + c + 1) - source(y0 + r, x0 +
  // c)), clamped to the image, as kHalfStaged describes; float row rect_h is the second tap row
  // of the rectangle's last row (half entries hold it already).
  constexpr bool kHalf = kHalfStaged<S, O>;
  const int rect_h = p.rect_h;
  __shared__ __align__(16) uint2 staged[(kRectH + 1) * kRectW];
  __shared__ uint2 row_taps[kRectWarps][kRowCap];  // per warp, for the level it is writing
  __shared__ int4 owned[kRectLevels];  // per level: the outputs [x, y) x [z, w) of the rectangle
  __shared__ int next_level;           // the next level a warp takes

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid & 31;
  const int warp = tid >> 5;
  const int band = static_cast<int>(blockIdx.x) / p.rects_x;
  const int x0 = (static_cast<int>(blockIdx.x) - band * p.rects_x) * kRectW;
  const int y0 = band * rect_h;
  bool words = false;
  if constexpr (std::is_same_v<S, std::uint8_t> && !kHalf) {
    words = StagesWords(p, x0);
    if (words) StageWords(p, x0, y0, rect_h, staged);
  }
  if (!words) {
    // One column per thread; the right neighbour comes from the next lane (lane 31 loads it).
    static_assert(kRectThreads == kRectW, "staging gives each thread one column");
    const int x = min(x0 + tid, p.src_w - 1);
    const int right = min(x0 + tid + 1, p.src_w - 1);
    unsigned previous = 0;  // half staging: the row above's (pixel, difference)
    // A fixed trip count, with the rows past the rectangle's (rect_h < kRectH) loaded again and
    // not staged, lets each group of 11 rows' loads issue together: a loop to rect_h left its
    // remainder rows one load latency each (36.6 against 35.6 us at 1080p, 31 rows).
#pragma unroll 11
    for (int r = 0; r <= kRectH; ++r) {
      const S* row = p.src + static_cast<std::size_t>(min(y0 + min(r, rect_h), p.src_h - 1)) *
                                 static_cast<unsigned>(p.src_w);
      const float a = LoadSample(row + x);
      const float last = lane == 31 ? LoadSample(row + right) : 0.0f;
      const float b = __shfl_down_sync(0xffffffffu, a, 1);
      const float d = __fsub_rn(lane == 31 ? last : b, a);
      if constexpr (kHalf) {
        const unsigned pair = PackHalf2(a, d);
        if (r > 0 && r <= rect_h) staged[(r - 1) * kRectW + tid] = make_uint2(previous, pair);
        previous = pair;
      } else {
        if (r <= rect_h) {
          staged[r * kRectW + tid] = make_uint2(__float_as_uint(a), __float_as_uint(d));
        }
      }
    }
  }
  // Per level: x begin, x end, y begin, y end, one per thread (all lanes busy, unlike per warp).
  for (int i = tid; i < 4 * p.num_levels; i += kRectThreads) {
    const RectLevel& level = p.levels[i >> 2];
    const bool vertical = (i & 2) != 0;
    const int edge = vertical ? y0 + (i & 1) * rect_h : x0 + (i & 1) * kRectW;
    const int src = vertical ? p.src_h : p.src_w;
    reinterpret_cast<int*>(owned)[i] =
        level.copy ? min(edge, src)
                   : FirstOwned(edge, vertical ? level.scale_y : level.scale_x, src,
                                vertical ? level.height : level.width);
  }
  if (tid == 0) next_level = 0;
  __syncthreads();

  // Each warp takes levels until none is left: after this barrier no warp waits for another.
  const unsigned staged_at = static_cast<unsigned>(__cvta_generic_to_shared(staged));
  const unsigned taps_at = static_cast<unsigned>(__cvta_generic_to_shared(row_taps[warp]));
  for (;;) {
    int l = 0;
    if (lane == 0) l = atomicAdd(&next_level, 1);
    l = __shfl_sync(0xffffffffu, l, 0);
    if (l >= p.num_levels) break;
    const RectLevel& level = p.levels[l];
    const int4 own = owned[l];
    const int xa = own.x;
    const int xb = own.y;
    const int ya = own.z;
    const int yb = own.w;
    for (int ys = ya; ys < yb; ys += kRowCap) {
      const int rows = min(kRowCap, yb - ys);
      __syncwarp();  // the previous pass has read its row taps
      for (int i = lane; i < rows; i += 32) {
        const AxisTap t =
            level.copy ? AxisTap{ys + i, 1, 0.0f} : ResolveAxis(ys + i, level.scale_y, p.src_h);
        row_taps[warp][i] = make_uint2(static_cast<unsigned>((t.i0 - y0) * kRectW) * sizeof(uint2),
                                       __float_as_uint(t.w1));
      }
      __syncwarp();
      for (int xs = xa; xs < xb; xs += kMaxChunks * 32) {
        const int xe = min(xb, xs + kMaxChunks * 32);
        const int chunks = (xe - xs + 31) / 32;
        if (level.copy) {
          WriteRowsOfChunks<true, kHalf, O>(chunks, level, p.src_w, x0, staged_at, taps_at, xs, xe,
                                            ys, rows);
        } else {
          WriteRowsOfChunks<false, kHalf, O>(chunks, level, p.src_w, x0, staged_at, taps_at, xs, xe,
                                             ys, rows);
        }
      }
    }
  }
}

}  // namespace cuimg::pyramid

#endif  // CUIMG_KERNELS_SRC_PYRAMID_RECTS_CUH_
