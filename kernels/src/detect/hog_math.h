// The per-pixel arithmetic of HOG detection, compiled both for the GPU (hog_detect.cu, built with
// -fmad=false so nothing is fused behind our back) and for the host (hog_reference.cc, built with
// -ffp-contract=off): the level images, gradients, orientations and votes of the two agree bit
// for bit, and both follow OpenCV 4.6:
// - a level image is cv::resize(..., INTER_LINEAR_EXACT) of the input: 8.8 fixed-point taps from
//   a float64 source coordinate, a horizontal pass in 16 bits and a vertical pass in 32 bits,
//   rounded (modules/imgproc/src/resize.cpp, resize_bitExact / interpolationLinear);
// - the gradient is the centred [-1, 0, 1] difference of the (gamma-corrected) 8-bit values over
//   the reflect-101 padded level; for colour the channel of largest squared magnitude wins;
// - the orientation is cartToPolar's polynomial atan (mathfuncs_core, atan_f32), the votes the
//   two bins around it, weighted by magnitude (HOGDescriptor::computeGradient).
#ifndef CUIMG_KERNELS_SRC_HOG_MATH_H_
#define CUIMG_KERNELS_SRC_HOG_MATH_H_

#include <math.h>

#include <cstdint>

#if defined(__CUDACC__)
#define CUIMG_HOG_HD __host__ __device__ __forceinline__
#else
#define CUIMG_HOG_HD inline
#endif

namespace cuimg::hog {

// One output coordinate of an INTER_LINEAR_EXACT resize along one axis: the value is
// c0 * src[i0] + c1 * src[i1] in 8.8 fixed point (c0 + c1 = 256). Coordinates that fall before
// the first or past the last source sample take that sample (c0 = 256, c1 = 0).
struct ExactTap {
  int i0;
  int i1;
  std::uint32_t c0;
  std::uint32_t c1;
};

CUIMG_HOG_HD double FloorDouble(double v) { return floor(v); }

// interpolationLinear::getCoeffs for output coordinate d, `scale` = 1 / (dst / src) (cv::resize's
// inv_scale inverted, as ResizeScale computes it) and `src` source samples. OpenCV computes in
// softdouble (IEEE binary64, round to nearest, no fusion), as the explicit steps here do.
CUIMG_HOG_HD ExactTap LinearExactTap(int d, double scale, int src) {
#if defined(__CUDA_ARCH__)
  const double f = __dadd_rn(__dmul_rn(scale, __dadd_rn(static_cast<double>(d), 0.5)), -0.5);
#else
  const double f = scale * (static_cast<double>(d) + 0.5) - 0.5;
#endif
  const double fl = FloorDouble(f);
  const int i = static_cast<int>(fl);
  ExactTap t{0, 0, 256u, 0u};
  if (i >= 0 && src > 1) {
    if (i < src - 1) {
      // ufixedpoint16(softdouble): cvRound(frac * 256), ties to even; frac * 256 is exact.
#if defined(__CUDA_ARCH__)
      const int c1 = __double2int_rn((f - fl) * 256.0);
#else
      const int c1 = static_cast<int>(nearbyint((f - fl) * 256.0));
#endif
      t.i0 = i;
      t.i1 = i + 1;
      t.c1 = static_cast<std::uint32_t>(c1);
      t.c0 = 256u - t.c1;
    } else {
      t.i0 = t.i1 = src - 1;
    }
  }
  return t;
}

// The horizontal pass: 16 bits, never overflows (c0 + c1 = 256).
CUIMG_HOG_HD std::uint32_t ExactRow(std::uint32_t a, std::uint32_t b, const ExactTap& tx) {
  return tx.c0 * a + tx.c1 * b;
}

// The vertical pass and the rounding back to 8 bits: (h0 * c0 + h1 * c1 + 2^15) >> 16. A clamped
// row (c0 = 256) gives (h0 + 128) >> 8, OpenCV's vlineSet.
CUIMG_HOG_HD std::uint8_t ExactColumn(std::uint32_t h0, std::uint32_t h1, const ExactTap& ty) {
  return static_cast<std::uint8_t>((h0 * ty.c0 + h1 * ty.c1 + 32768u) >> 16);
}

// OpenCV's borderInterpolate for BORDER_REFLECT_101 (repeated for images narrower than the
// overshoot; a one-pixel side maps everything to 0).
CUIMG_HOG_HD int Reflect101(int p, int n) {
  if (n == 1) return 0;
  while (p < 0 || p >= n) p = p < 0 ? -p : 2 * (n - 1) - p;
  return p;
}

// a / b and sqrt(x), correctly rounded, for the operands VoteOf gives: a in [0, b), b in
// [2^-52, 2^8], x in (0, 2^17]. On the GPU these are the fast paths of CUDA's division and sqrt
// without their range checks and branches to the slow paths (a zero dividend took the slow path),
// which those operands never need: hog_math_gpu_test compares them with __fdiv_rn and __fsqrt_rn
// on every operand pair the gamma tables can produce. 1080p blocks 318 -> 298 us (run 210).
CUIMG_HOG_HD float DivideInRange(float a, float b) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  r = __fmaf_rn(r, __fmaf_rn(-b, r, 1.f), r);
  const float q = __fmul_rn(a, r);
  return __fmaf_rn(r, __fmaf_rn(-b, q, a), q);
#else
  return a / b;
#endif
}
CUIMG_HOG_HD float SqrtInRange(float x) {
#if defined(__CUDA_ARCH__)
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  const float s = __fmul_rn(x, y);
  return __fmaf_rn(__fmaf_rn(-s, s, x), __fmul_rn(y, 0.5f), s);
#else
  return sqrtf(x);
#endif
}

// The normalizations' 1 / b and sqrt(x) (hog_strip.h: ClipCell, RenormScale) without the range
// checks and slow-path branches the compiler puts around IEEE division and sqrt (~30
// instructions a block row and thread, and the sqrt's call for the zero sums of flat or padded
// blocks: a quarter of the warps). ReciprocalInRange is CUDA's fast path of 1 / b instruction for
// instruction, which it takes for every normal b below 2^126: there it is 1.f / b; the blocks
// kernel's b is a square root plus 3.6 or 1e-3. SqrtOfNonNegative is 0 for 0, SqrtInRange (the
// fast path of sqrtf, taken from 2^-101 up) from 2^-100 up and sqrtf below: sqrtf(x) for every
// x >= 0. hog_math_gpu_test compares both with __frcp_rn and __fsqrt_rn on every float of their
// range.
CUIMG_HOG_HD float ReciprocalInRange(float b) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  return __fmaf_rn(r, __fmaf_rn(-b, r, 1.f), r);
#else
  return 1.f / b;
#endif
}
CUIMG_HOG_HD float SqrtOfNonNegative(float x) {
#if defined(__CUDA_ARCH__)
  if (x >= 0x1p-100f) return SqrtInRange(x);
  return x == 0.f ? 0.f : sqrtf(x);
#else
  return sqrtf(x);
#endif
}

// cartToPolar's atan (OpenCV's atan_f32) in radians, in [0, 2 pi]. Coefficients as OpenCV
// computes them: a double constant rounded to float times (float)(180 / pi).
CUIMG_HOG_HD float FastAtan2Radians(float y, float x) {
  constexpr float kDegPerRad = static_cast<float>(180 / 3.1415926535897932384626433832795);
  constexpr float p1 = 0.9997878412794807f * kDegPerRad;
  constexpr float p3 = -0.3258083974640975f * kDegPerRad;
  constexpr float p5 = 0.1555786518463281f * kDegPerRad;
  constexpr float p7 = -0.04432655554792128f * kDegPerRad;
  constexpr float kEps = static_cast<float>(2.2204460492503131e-16);  // (float)DBL_EPSILON
  // Branch-free, as OpenCV's SIMD version (v_atan_f32) writes it: the same values as its scalar
  // form, and a loop of these vectorizes on the host.
  const float ax = fabsf(x);
  const float ay = fabsf(y);
  // A zero dividend would fail the GPU division's range check and take its slow path (some lane
  // of nearly every warp has one: run 210); DivideInRange has neither, and 0 / den is 0.
  const float num = ax >= ay ? ay : ax;
  const float den = (ax >= ay ? ax : ay) + kEps;
  const float c = DivideInRange(num, den);
  const float c2 = c * c;
  float a = (((p7 * c2 + p5) * c2 + p3) * c2 + p1) * c;
  a = ax >= ay ? a : 90.f - a;
  a = x < 0 ? 180.f - a : a;
  a = y < 0 ? 360.f - a : a;
  return a * static_cast<float>(3.1415926535897932384626433832795 / 180);
}

// A pixel's vote: w0 to bin0 and w1 to bin1 = (bin0 + 1) mod 9.
struct Vote {
  float w0;
  float w1;
  int bin0;
  int bin1;
};

// VoteOf given mag2 = dx * dx + dy * dy (each product and the sum rounded), as PickChannel has it.
CUIMG_HOG_HD Vote VoteOfMagnitude(float dx, float dy, float mag2) {
  constexpr int kBins = 9;
  constexpr float kAngleScale = static_cast<float>(kBins / 3.1415926535897932384626433832795);
  // sqrt(0) is outside SqrtInRange's operands (on the GPU it gives NaN, dropped here).
  const float mag = mag2 == 0.f ? 0.f : SqrtInRange(mag2);
  float angle = FastAtan2Radians(dy, dx) * kAngleScale - 0.5f;
  // floor(angle) for angle in [-0.5, 17.5]: one conversion rounding down on the GPU; on the host
  // without a library call (the reference's loops vectorize).
#if defined(__CUDA_ARCH__)
  int h = __float2int_rd(angle);
#else
  int h = static_cast<int>(angle);
  h -= static_cast<int>(angle < static_cast<float>(h));
#endif
  angle -= static_cast<float>(h);
  Vote v;
  v.w0 = mag * (1.f - angle);
  v.w1 = mag * angle;
  h += kBins * (static_cast<int>(h < 0) - static_cast<int>(h >= kBins));
  v.bin0 = h;
  v.bin1 = h + 1 - kBins * static_cast<int>(h + 1 >= kBins);
  return v;
}

// computeGradient's orientation binning of the gradient (dx, dy) into 9 unsigned bins centred at
// 10, 30, ..., 170 degrees.
CUIMG_HOG_HD Vote VoteOf(float dx, float dy) { return VoteOfMagnitude(dx, dy, dx * dx + dy * dy); }

// The value a gradient takes an 8-bit sample through: sqrt(v) with gamma correction, else v.
CUIMG_HOG_HD float GammaLut(int v, bool gamma) {
  return gamma ? sqrtf(static_cast<float>(v)) : static_cast<float>(v);
}

// The colour rule: channel gradients (dx[c], dy[c]) of B, G, R. OpenCV's SIMD path (every column
// but the last width % 4 of a row) takes R if its squared magnitude beats G's, else G, then that
// one if its magnitude beats B's, else B; its scalar tail starts from R and moves to G, then B,
// only on a strictly larger magnitude. The two differ only on exact ties between channels.
CUIMG_HOG_HD void MaxChannel(const float (&dx)[3], const float (&dy)[3], bool simd_rule,
                             float* out_dx, float* out_dy) {
  const float m0 = dx[0] * dx[0] + dy[0] * dy[0];
  const float m1 = dx[1] * dx[1] + dy[1] * dy[1];
  const float m2 = dx[2] * dx[2] + dy[2] * dy[2];
  if (simd_rule) {
    const bool two = m2 > m1;
    float bx = two ? dx[2] : dx[1];
    float by = two ? dy[2] : dy[1];
    const float bm = m2 > m1 ? m2 : m1;  // v_max(mag2, mag1)
    if (!(bm > m0)) {
      bx = dx[0];
      by = dy[0];
    }
    *out_dx = bx;
    *out_dy = by;
    return;
  }
  float bx = dx[2], by = dy[2], bm = m2;
  if (bm < m1) {
    bx = dx[1];
    by = dy[1];
    bm = m1;
  }
  if (bm < m0) {
    bx = dx[0];
    by = dy[0];
  }
  *out_dx = bx;
  *out_dy = by;
}

// MaxChannel's choice without branches on simd_rule, returning the chosen channel's squared
// magnitude (for VoteOfMagnitude). The magnitudes are finite and >= 0, so MaxChannel's two rules
// are one: take R over G when its magnitude is larger (SIMD) or not smaller (scalar), then B over
// that when its magnitude is not smaller (SIMD) or larger (scalar).
CUIMG_HOG_HD float PickChannel(const float (&dx)[3], const float (&dy)[3], bool simd_rule,
                               float* out_dx, float* out_dy) {
  const float m0 = dx[0] * dx[0] + dy[0] * dy[0];
  const float m1 = dx[1] * dx[1] + dy[1] * dy[1];
  const float m2 = dx[2] * dx[2] + dy[2] * dy[2];
  const bool two = m2 > m1 || (!simd_rule && m2 == m1);
  const float bm = two ? m2 : m1;
  const bool zero = m0 > bm || (simd_rule && m0 == bm);
  *out_dx = zero ? dx[0] : (two ? dx[2] : dx[1]);
  *out_dy = zero ? dy[0] : (two ? dy[2] : dy[1]);
  return zero ? m0 : bm;
}

}  // namespace cuimg::hog

#endif  // CUIMG_KERNELS_SRC_HOG_MATH_H_
