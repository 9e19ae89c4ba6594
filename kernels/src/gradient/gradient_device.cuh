// The per-tile math of the Gaussian-derivative gradient, as device building blocks that the
// gradient kernel (gradient.cu) and later HOG reuse: a block of kThreads threads owns a
// kTileW x kTileH output tile and
//   1. LoadRegion: loads the tile plus its halo, converted to f32 and reflected at the borders
//      (reflect-101), into shared memory;
//   2. RowPass: smooths and differentiates every region row along x into two shared planes;
//   3. ColumnPass: differentiates / smooths those planes along y and hands each thread's outputs,
//      4 consecutive pixels at a time, to `emit` callbacks (the kernel stores them; HOG would bin
//      them).
// Taps are compile-time indexed (the radius R is a template parameter), so they sit in the
// constant bank as FFMA operands. Smoothing is a direct correlation (the same FFMA count as
// pairing symmetric taps); derivatives act on paired differences d[k] (v[+k] - v[-k]), exactly 0
// where the data is locally constant.
#ifndef CUIMG_KERNELS_SRC_GRADIENT_DEVICE_CUH_
#define CUIMG_KERNELS_SRC_GRADIENT_DEVICE_CUH_

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace cuimg::gradient {

inline constexpr int kTileW = 64;
inline constexpr int kTileH = 64;
inline constexpr int kThreads = 256;
inline constexpr int kMaxRadius = 15;

// Shared-memory layout of a tile for radius R. The region starts kPad >= R columns left of the
// tile, kPad a multiple of 4, so that region rows and vector loads stay 16-byte aligned.
template <int R>
struct TileGeometry {
  static constexpr int kPad = (R + 3) / 4 * 4;
  static constexpr int kRegionW = kTileW + 2 * kPad;
  static constexpr int kRegionH = kTileH + 2 * R;
  static constexpr int kRegionFloats = kRegionW * kRegionH;
  static constexpr int kPlaneFloats = kTileW * kRegionH;
  static constexpr std::size_t kSmemBytes =
      static_cast<std::size_t>(kRegionFloats + 2 * kPlaneFloats) * sizeof(float);
};

// Taps for offsets 0..R: smooth[k] = smooth[-k]; deriv[k] = -deriv[-k] (deriv[0] unused).
struct Taps {
  float smooth[kMaxRadius + 1];
  float deriv[kMaxRadius + 1];
};

// OpenCV's borderInterpolate for BORDER_REFLECT_101 (repeated reflections for tiny images).
__device__ __forceinline__ int Reflect101(int p, int n) {
  if (n == 1) return 0;
  while (p < 0 || p >= n) p = p < 0 ? -p : 2 * (n - 1) - p;
  return p;
}

// Exact integer -> float conversions on the FP32 pipe: the value is placed in the mantissa of 2^23
// (one PRMT/LOP3) and 2^23 (+ 2^15 for i16) is subtracted. I2F would run at quarter rate.
__device__ __forceinline__ float MantissaToFloat(std::uint32_t bits_with_exponent, float bias) {
  return __uint_as_float(bits_with_exponent) - bias;
}
__device__ __forceinline__ float ToFloat(std::uint8_t v) {
  return MantissaToFloat(0x4B000000u | v, 8388608.0f);
}
__device__ __forceinline__ float ToFloat(std::uint16_t v) {
  return MantissaToFloat(0x4B000000u | v, 8388608.0f);
}
__device__ __forceinline__ float ToFloat(std::int16_t v) {
  return MantissaToFloat(0x4B000000u | (static_cast<std::uint16_t>(v) ^ 0x8000u), 8421376.0f);
}
__device__ __forceinline__ float ToFloat(float v) { return v; }

// Four consecutive elements loaded as one raw word (4, 8 or 16 bytes) and converted once stored.
template <typename T>
struct Vec4;
template <>
struct Vec4<std::uint8_t> {
  using Word = unsigned int;
  static __device__ __forceinline__ float4 ToFloat4(unsigned int w) {
    // PRMT byte i of w under the exponent byte 0x4B of 0x4B000000.
    return make_float4(MantissaToFloat(__byte_perm(w, 0x4B000000u, 0x7440), 8388608.0f),
                       MantissaToFloat(__byte_perm(w, 0x4B000000u, 0x7441), 8388608.0f),
                       MantissaToFloat(__byte_perm(w, 0x4B000000u, 0x7442), 8388608.0f),
                       MantissaToFloat(__byte_perm(w, 0x4B000000u, 0x7443), 8388608.0f));
  }
};
template <>
struct Vec4<std::uint16_t> {
  using Word = uint2;
  static __device__ __forceinline__ float4 ToFloat4(uint2 w) {
    return make_float4(MantissaToFloat(__byte_perm(w.x, 0x4B000000u, 0x7410), 8388608.0f),
                       MantissaToFloat(__byte_perm(w.x, 0x4B000000u, 0x7432), 8388608.0f),
                       MantissaToFloat(__byte_perm(w.y, 0x4B000000u, 0x7410), 8388608.0f),
                       MantissaToFloat(__byte_perm(w.y, 0x4B000000u, 0x7432), 8388608.0f));
  }
};
template <>
struct Vec4<std::int16_t> {
  using Word = uint2;
  static __device__ __forceinline__ float4 ToFloat4(uint2 w) {
    // v + 2^15 = v ^ 0x8000 as 16 bits, then as for u16 with the bias 2^23 + 2^15.
    const unsigned int a = w.x ^ 0x80008000u;
    const unsigned int b = w.y ^ 0x80008000u;
    return make_float4(MantissaToFloat(__byte_perm(a, 0x4B000000u, 0x7410), 8421376.0f),
                       MantissaToFloat(__byte_perm(a, 0x4B000000u, 0x7432), 8421376.0f),
                       MantissaToFloat(__byte_perm(b, 0x4B000000u, 0x7410), 8421376.0f),
                       MantissaToFloat(__byte_perm(b, 0x4B000000u, 0x7432), 8421376.0f));
  }
};
template <>
struct Vec4<float> {
  using Word = float4;
  static __device__ __forceinline__ float4 ToFloat4(float4 w) { return w; }
};

// Region cell (i, c) holds slice pixel (y0 - R + i, x0 - kPad + c), reflected into the slice.
// `vector_ok`: width % 4 == 0 and `slice` aligned to 4 elements, so that interior tiles load 4
// elements per access. Every load of a batch is issued before the batch is stored.
template <typename T, int R>
__device__ __forceinline__ void LoadRegion(const T* __restrict__ slice, int width, int height,
                                           int x0, int y0, bool vector_ok, float* region) {
  using G = TileGeometry<R>;
  const int rx0 = x0 - G::kPad;
  const int ry0 = y0 - R;
  const bool interior = vector_ok && rx0 >= 0 && rx0 + G::kRegionW <= width && ry0 >= 0 &&
                        ry0 + G::kRegionH <= height;
  if (interior) {
    using W = typename Vec4<T>::Word;
    constexpr int kQuads = G::kRegionW / 4;
    constexpr int kCells = G::kRegionH * kQuads;
    constexpr int kPerThread = (kCells + kThreads - 1) / kThreads;
    constexpr int kBatch = kPerThread < 8 ? kPerThread : 8;
    const T* origin = slice + static_cast<std::ptrdiff_t>(ry0) * width + rx0;
    for (int first = threadIdx.x; first < kCells; first += kThreads * kBatch) {
      // Cells past the end load the last cell again (no branch around the loads) and are not
      // stored; the offsets fit 32 bits (a slice has < 2^31 pixels).
      W v[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int cell = min(first + b * kThreads, kCells - 1);
        const int i = cell / kQuads;
        const int q = cell - i * kQuads;
        v[b] = __ldg(reinterpret_cast<const W*>(origin + (i * width + 4 * q)));
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int cell = first + b * kThreads;
        if (cell < kCells) {
          const int i = cell / kQuads;
          const int q = cell - i * kQuads;
          *reinterpret_cast<float4*>(region + i * G::kRegionW + 4 * q) = Vec4<T>::ToFloat4(v[b]);
        }
      }
    }
    return;
  }
  constexpr int kCells = G::kRegionH * G::kRegionW;
  constexpr int kBatch = 4;
  for (int first = threadIdx.x; first < kCells; first += kThreads * kBatch) {
    T v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int cell = min(first + b * kThreads, kCells - 1);
      const int i = cell / G::kRegionW;
      const int c = cell - i * G::kRegionW;
      const int y = Reflect101(ry0 + i, height);
      const int x = Reflect101(rx0 + c, width);
      v[b] = __ldg(slice + (y * width + x));
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int cell = first + b * kThreads;
      if (cell < kCells) region[cell] = ToFloat(v[b]);
    }
  }
}

// smooth(i, o) = sum_k s[k] region(i, o + kPad + k),
// deriv(i, o) = sum_{k>0} d[k] (region(i, o + kPad + k) - region(i, o + kPad - k))
// for every region row i and tile column o. A thread computes 4 consecutive columns from one
// aligned window of 4 + 2 kPad region values (float4 loads and stores, conflict-free).
template <int R>
__device__ __forceinline__ void RowPass(const float* region, const Taps& taps, float* smooth,
                                        float* deriv) {
  using G = TileGeometry<R>;
  constexpr int kQuadsPerRow = kTileW / 4;
  constexpr int kItems = G::kRegionH * kQuadsPerRow;
  constexpr int kLoads = 1 + G::kPad / 2;
  for (int item = threadIdx.x; item < kItems; item += kThreads) {
    const int i = item / kQuadsPerRow;
    const int q = item % kQuadsPerRow;
    const float4* src = reinterpret_cast<const float4*>(region + i * G::kRegionW + 4 * q);
    float w[4 * kLoads];
#pragma unroll
    for (int m = 0; m < kLoads; ++m) {
      const float4 f = src[m];
      w[4 * m] = f.x;
      w[4 * m + 1] = f.y;
      w[4 * m + 2] = f.z;
      w[4 * m + 3] = f.w;
    }
    float s[4];
    float d[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = j + G::kPad;  // the window index of this output's centre
      s[j] = taps.smooth[0] * w[c];
      d[j] = 0.0f;
#pragma unroll
      for (int k = 1; k <= R; ++k) {
        s[j] = fmaf(taps.smooth[k], w[c - k], s[j]);
        s[j] = fmaf(taps.smooth[k], w[c + k], s[j]);
        // Paired differences: exactly 0 wherever the row is locally constant.
        d[j] = fmaf(taps.deriv[k], w[c + k] - w[c - k], d[j]);
      }
    }
    *reinterpret_cast<float4*>(smooth + i * kTileW + 4 * q) = make_float4(s[0], s[1], s[2], s[3]);
    *reinterpret_cast<float4*>(deriv + i * kTileW + 4 * q) = make_float4(d[0], d[1], d[2], d[3]);
  }
}

__device__ __forceinline__ float4 Fma4(float a, float4 b, float4 c) {
  return make_float4(fmaf(a, b.x, c.x), fmaf(a, b.y, c.y), fmaf(a, b.z, c.z), fmaf(a, b.w, c.w));
}

// gx(t, o) = sum_k s[k] deriv(t + R + k, o), gy(t, o) = sum_{k>0} d[k] (smooth(t + R + k, o) -
// smooth(t + R - k, o)) for tile row t and column o. A thread owns 4 columns x kRowsPerThread
// consecutive rows (OwnedQuad) and accumulates 16 outputs at a time: first gx from the derivative
// plane, handed to emit_gx(m, gx4) for its rows m = 0..kRowsPerThread-1, then gy likewise.
// Emitting gx before accumulating gy keeps the pass within 64 registers; a caller that needs both
// at once (HOG) keeps gx itself. The block's threads together cover the whole tile.
inline constexpr int kQuadsPerRow = kTileW / 4;
inline constexpr int kRowsPerThread = kTileH / (kThreads / kQuadsPerRow);

// The tile column (a multiple of 4) and row of this thread's m-th output quad.
__device__ __forceinline__ int2 OwnedQuad(int m) {
  return make_int2(4 * (threadIdx.x % kQuadsPerRow),
                   threadIdx.x / kQuadsPerRow * kRowsPerThread + m);
}

// gx: acc[m] = sum_k smooth[k] plane(t_m + R + k), streaming each plane row once.
template <int R>
__device__ __forceinline__ void SmoothColumns(const float* plane, const Taps& taps,
                                              float4 (&acc)[kRowsPerThread]) {
  const int2 first = OwnedQuad(0);
#pragma unroll
  for (int m = 0; m < kRowsPerThread; ++m) acc[m] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int p = 0; p < kRowsPerThread + 2 * R; ++p) {
    const float4 v = *reinterpret_cast<const float4*>(plane + (first.y + p) * kTileW + first.x);
#pragma unroll
    for (int m = 0; m < kRowsPerThread; ++m) {
      const int k = p - m - R;  // plane row first.y + p is output row first.y + m at offset k
      if (k < -R || k > R) continue;
      acc[m] = Fma4(taps.smooth[k < 0 ? -k : k], v, acc[m]);
    }
  }
}

// gy: acc[m] = sum_{k>0} deriv[k] (plane(t_m + R + k) - plane(t_m + R - k)): paired differences,
// exactly 0 wherever the smoothed column is locally constant (the compiler shares the row loads
// between outputs).
template <int R>
__device__ __forceinline__ void DifferentiateColumns(const float* plane, const Taps& taps,
                                                     float4 (&acc)[kRowsPerThread]) {
  const int2 first = OwnedQuad(0);
  auto row = [&](int p) {
    return *reinterpret_cast<const float4*>(plane + (first.y + p) * kTileW + first.x);
  };
#pragma unroll
  for (int m = 0; m < kRowsPerThread; ++m) {
    acc[m] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int k = 1; k <= R; ++k) {
      const float4 a = row(m + R + k);
      const float4 b = row(m + R - k);
      acc[m] = Fma4(taps.deriv[k], make_float4(a.x - b.x, a.y - b.y, a.z - b.z, a.w - b.w), acc[m]);
    }
  }
}

template <int R, typename EmitX, typename EmitY>
__device__ __forceinline__ void ColumnPass(const float* smooth, const float* deriv,
                                           const Taps& taps, const EmitX& emit_gx,
                                           const EmitY& emit_gy) {
  float4 acc[kRowsPerThread];
  SmoothColumns<R>(deriv, taps, acc);
#pragma unroll
  for (int m = 0; m < kRowsPerThread; ++m) emit_gx(m, acc[m]);
  DifferentiateColumns<R>(smooth, taps, acc);
#pragma unroll
  for (int m = 0; m < kRowsPerThread; ++m) emit_gy(m, acc[m]);
}

}  // namespace cuimg::gradient

#endif  // CUIMG_KERNELS_SRC_GRADIENT_DEVICE_CUH_
