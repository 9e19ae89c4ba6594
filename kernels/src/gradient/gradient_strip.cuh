// The gradient for small radii (R <= 4, which includes the default length 7) without shared memory
// or barriers: one warp owns a strip of kStripRows output rows by kStripCols columns. Each lane
// holds 4 columns, the strip's 30 inner lanes own outputs and the two edge lanes only hold the
// horizontal halo. Walking down the strip, every lane keeps the last 2R + 1 input rows in
// registers, smooths / differentiates them along y, and takes the 2R neighbouring columns of those
// results from the adjacent lanes by shuffles for the x pass. The tile kernel
// (gradient_device.cuh) spent its time waiting between its load, row and column phases; here the
// rows' loads are issued ahead and nothing waits on a barrier.
#ifndef CUIMG_KERNELS_SRC_GRADIENT_STRIP_CUH_
#define CUIMG_KERNELS_SRC_GRADIENT_STRIP_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "gradient_device.cuh"

namespace cuimg::gradient {

inline constexpr int kStripMaxRadius = 4;        // one neighbouring lane's 4 columns of halo
inline constexpr int kStripCols = 4 * (32 - 2);  // 120 output columns per warp
inline constexpr int kStripRows = 5;  // short strips: many warps in flight (halo rows are cheap)

// The row a strip reads for row p of its window: OpenCV's BORDER_REFLECT_101 with one reflection,
// branch-free (the general Reflect101 cost about 19 instructions per row load, a sixth of the
// strip's). Exact for -(height - 1) <= p <= 2 (height - 1), which covers every emitted row when
// height > R (GradientPlan sends shorter slices to the tile kernel); rows further down only feed
// rows below the slice, which are not emitted, and are clamped to row 0 to stay in bounds.
__device__ __forceinline__ int StripRow(int p, int height) {
  const int a = abs(p);
  return max(0, min(a, 2 * (height - 1) - a));
}

// Four consecutive elements from row `row`, columns x .. x + 3, as the raw word Vec4<T> converts:
// one vector load when `vector` (x inside the row, aligned), else the reflected columns `col`.
template <typename T>
__device__ __forceinline__ typename Vec4<T>::Word LoadQuad(const T* row, int x, bool vector,
                                                           const int (&col)[4]) {
  using W = typename Vec4<T>::Word;
  if (vector) return __ldg(reinterpret_cast<const W*>(row + x));
  T v[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = __ldg(row + col[j]);
  if constexpr (sizeof(T) == 1) {
    return static_cast<unsigned>(v[0]) | static_cast<unsigned>(v[1]) << 8 |
           static_cast<unsigned>(v[2]) << 16 | static_cast<unsigned>(v[3]) << 24;
  } else if constexpr (sizeof(T) == 2) {
    auto bits = [](T e) { return static_cast<unsigned>(static_cast<std::uint16_t>(e)); };
    return make_uint2(bits(v[0]) | bits(v[1]) << 16, bits(v[2]) | bits(v[3]) << 16);
  } else {
    return make_float4(v[0], v[1], v[2], v[3]);
  }
}

__device__ __forceinline__ float Lane(const float4& v, int j) {
  return j == 0 ? v.x : (j == 1 ? v.y : (j == 2 ? v.z : v.w));
}

// For a warp whose quads were loaded clamped into a 4-aligned row at least 8 wide: the lane at
// x = -4 holds columns 0..3 and needs 4, 3, 2, 1 (reflect-101), the lane at x = width holds
// width - 4 .. width - 1 and needs width - 2 .. width - 5; each takes its missing column from the
// lane two away. Lanes further out feed no owner's halo and keep the clamped quad. Selects, not
// branches: returns compiled to a reconvergence region around every row's fix (1080p 8.64 -> 8.29
// us, run 149).
__device__ __forceinline__ float4 ReflectBorderQuad(float4 v, int x, int width) {
  const float right = __shfl_down_sync(0xffffffffu, v.x, 2);
  const float left = __shfl_up_sync(0xffffffffu, v.w, 2);
  const bool low = x < 0;        // wants 4, 3, 2, 1: (right, w, z, y)
  const bool high = x == width;  // wants w-2 .. w-5: (z, y, x, left)
  return make_float4(low ? right : (high ? v.z : v.x), low ? v.w : v.y, high ? v.x : v.z,
                     low ? v.y : (high ? left : v.w));
}

// Whether StripGradient may take its clamped path (kClamped): 4-aligned rows (`vector_in`: width
// % 4 == 0, slice aligned to 4 elements) at least 8 wide, so that both border lanes find their
// missing column two lanes away.
__host__ __device__ __forceinline__ bool StripLoadsClamped(bool vector_in, int width) {
  return vector_in && width >= 8;
}

// Runs the strip whose first output row is y0 on one slice; the lane's columns start at x (a
// multiple of 4, possibly outside the slice: those lanes load reflected columns). kClamped only
// where StripLoadsClamped(vector_in, width): every lane then loads an aligned quad clamped into
// the row and the two lanes past the borders are rebuilt from their neighbours
// (ReflectBorderQuad). Otherwise lanes outside the row load their reflected columns one by one.
// Calls emit(m, gx4, gy4) for every output row y0 + m inside the slice (all lanes of the warp
// together; the caller decides which lanes store).
template <typename T, int R, bool kClamped, typename Emit>
__device__ __forceinline__ void StripGradient(const T* __restrict__ slice, int width, int height,
                                              int x, int y0, bool vector_in, const Taps& taps,
                                              const Emit& emit) {
  static_assert(R >= 1 && R <= kStripMaxRadius, "the strip kernel covers radius 1..4");
  using W = typename Vec4<T>::Word;
  constexpr int kRows = kStripRows + 2 * R;
  // Rows loaded ahead of the one in use: enough to cover an L2 hit's latency.
  constexpr int kAhead = 4;
  // The clamped path exists because per-lane scalar loads diverge the border strips' warps, which
  // then run both paths and wait on each row's loads at once: at 1080p those 2 of 16 strip columns
  // took 5.8 us against 3.5, and the SMs holding them set the kernel's span (runs 131-135: 10.4
  // -> 8.8 us). A run-time choice between the paths inside the strip cost 0.3 us (run 134).
  const bool vector = kClamped || (vector_in && x >= 0 && x + 4 <= width);
  const int load_x = kClamped ? min(max(x, 0), width - 4) : x;
  const bool straddles = kClamped && __any_sync(0xffffffffu, x < 0 || x + 4 > width);
  int col[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) col[j] = Reflect101(x + j, width);
  auto row = [&](int i) { return slice + StripRow(y0 - R + i, height) * width; };
  W raw[kAhead];
#pragma unroll
  for (int i = 0; i < kAhead; ++i) raw[i] = LoadQuad<T>(row(i), load_x, vector, col);
  float4 win[2 * R + 1] = {};
  // Row i enters the window at win[2R]; the queue of loads in flight moves up by one.
  auto advance = [&](int i) {
#pragma unroll
    for (int k = 0; k < 2 * R; ++k) win[k] = win[k + 1];
    // The border fix consumes the row kAhead rows after its load was issued, as the filter does.
    float4 v = Vec4<T>::ToFloat4(raw[0]);
    if (straddles) v = ReflectBorderQuad(v, x, width);
    win[2 * R] = v;
#pragma unroll
    for (int k = 0; k + 1 < kAhead; ++k) raw[k] = raw[k + 1];
    if (i + kAhead < kRows) raw[kAhead - 1] = LoadQuad<T>(row(i + kAhead), load_x, vector, col);
  };
#pragma unroll
  for (int i = 0; i < 2 * R; ++i) advance(i);
    // Fully unrolled: the window moves by renaming registers instead of ~20 moves per row (1080p
    // 10.30-10.37 against 10.59-10.72 us unrolled by two, runs 71-72, with the branch-free rows;
    // run 24's fully unrolled 8-row strips had missed the instruction cache).
#pragma unroll
  for (int m = 0; m < kStripRows; ++m) {
    // Output row y0 + m is centred on win[R]. Rows below the slice are computed from reflected
    // rows and not emitted: no early exit, so the compiler may interleave the rows.
    advance(m + 2 * R);
    // Along y: smoothed (vs) and differentiated (vd) values of the lane's 4 columns, placed at
    // R .. R + 3 of windows that the neighbours' columns complete on both sides.
    float es[4 + 2 * R];
    float ed[4 + 2 * R];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float s = taps.smooth[0] * Lane(win[R], j);
      float d = 0.0f;
#pragma unroll
      for (int k = 1; k <= R; ++k) {
        const float below = Lane(win[R + k], j);
        const float above = Lane(win[R - k], j);
        s = fmaf(taps.smooth[k], above, s);
        s = fmaf(taps.smooth[k], below, s);
        d = fmaf(taps.deriv[k], below - above, d);
      }
      es[R + j] = s;
      ed[R + j] = d;
    }
#pragma unroll
    for (int t = 0; t < R; ++t) {
      // Left halo: the previous lane's last R columns; right halo: the next lane's first R.
      es[R - 1 - t] = __shfl_up_sync(0xffffffffu, es[R + 3 - t], 1);
      ed[R - 1 - t] = __shfl_up_sync(0xffffffffu, ed[R + 3 - t], 1);
      es[R + 4 + t] = __shfl_down_sync(0xffffffffu, es[R + t], 1);
      ed[R + 4 + t] = __shfl_down_sync(0xffffffffu, ed[R + t], 1);
    }
    // Along x: gx differentiates the smoothed columns, gy smooths the differentiated ones.
    float gx[4];
    float gy[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = R + j;
      float a = 0.0f;
      float b = taps.smooth[0] * ed[c];
#pragma unroll
      for (int k = 1; k <= R; ++k) {
        a = fmaf(taps.deriv[k], es[c + k] - es[c - k], a);
        b = fmaf(taps.smooth[k], ed[c - k], b);
        b = fmaf(taps.smooth[k], ed[c + k], b);
      }
      gx[j] = a;
      gy[j] = b;
    }
    if (y0 + m < height) {
      emit(m, make_float4(gx[0], gx[1], gx[2], gx[3]), make_float4(gy[0], gy[1], gy[2], gy[3]));
    }
  }
}

}  // namespace cuimg::gradient

#endif  // CUIMG_KERNELS_SRC_GRADIENT_STRIP_CUH_
