// One bilinear sample with OpenCV cv::resize INTER_LINEAR semantics, as device functions that the
// pyramid kernel (pyramid.cu) and later the pedestrian detector reuse. They compute exactly what
// PyramidReference / ResizeLinearTap compute on the host (explicitly rounded float64 and float32
// operations, fused only where both call fma), so results agree bit for bit.
#ifndef CUIMG_KERNELS_SRC_PYRAMID_DEVICE_CUH_
#define CUIMG_KERNELS_SRC_PYRAMID_DEVICE_CUH_

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace cuimg::pyramid {

// The source pair of one output coordinate along one axis: samples i0 and i0 + step, the second
// with weight w1, step 1 unless the source is one pixel long (step 0).
struct AxisTap {
  int i0;
  int step;
  float w1;
};

// ResizeLinearTap (pyramid_reference.h) for output coordinate d of `dst` outputs over `src`
// samples, given scale = ResizeScale(src, dst): a coordinate past the last sample is the pair
// (src - 2, src - 1) with weight 1, so the second sample is always i0 + 1 (an immediate address
// offset) when src >= 2.
__device__ __forceinline__ AxisTap ResolveAxis(int d, double scale, int src) {
  float f = __double2float_rn(__dadd_rn(__dmul_rn(static_cast<double>(d) + 0.5, scale), -0.5));
  const float fl = floorf(f);
  int i = static_cast<int>(fl);
  f = __fsub_rn(f, fl);
  if (i < 0) {
    i = 0;
    f = 0.0f;
  }
  AxisTap t;
  if (i >= src - 1) {
    t.i0 = src >= 2 ? src - 2 : 0;
    t.step = src >= 2 ? 1 : 0;
    t.w1 = src >= 2 ? 1.0f : 0.0f;
    return t;
  }
  t.i0 = i;
  t.step = 1;
  t.w1 = f;
  return t;
}

// Exact integer -> float conversion on the FP32 pipe (the value goes into the mantissa of 2^23;
// I2F would run at quarter rate).
__device__ __forceinline__ float SampleToFloat(std::uint8_t v) {
  return __uint_as_float(0x4B000000u | v) - 8388608.0f;
}
__device__ __forceinline__ float SampleToFloat(std::uint16_t v) {
  return __uint_as_float(0x4B000000u | v) - 8388608.0f;
}
__device__ __forceinline__ float SampleToFloat(std::int16_t v) {
  return __uint_as_float(0x4B000000u | (static_cast<std::uint16_t>(v) ^ 0x8000u)) - 8421376.0f;
}
__device__ __forceinline__ float SampleToFloat(float v) { return v; }

template <typename S>
__device__ __forceinline__ float LoadSample(const S* p) {
  return SampleToFloat(__ldg(p));
}

// a + w * (b - a) given the float32-rounded difference: one fused multiply-add (a * (1 - w) +
// b * w takes three operations, and three of the nine per bilinear sample become one).
__device__ __forceinline__ float Lerp(float a, float b_minus_a, float w) {
  return __fmaf_rn(w, b_minus_a, a);
}

// Lerp(Lerp(row0[0], row0[dx], wx1), Lerp(row1[0], row1[dx], wx1), wy1), as ResizeLinearF32
// computes it. row0/row1 point at the first sample of each row.
template <typename S>
__device__ __forceinline__ float BilinearSample(const S* row0, const S* row1, int dx, float wx1,
                                                float wy1) {
  const float a = LoadSample(row0);
  const float b = LoadSample(row0 + dx);
  const float c = LoadSample(row1);
  const float d = LoadSample(row1 + dx);
  const float top = Lerp(a, __fsub_rn(b, a), wx1);
  const float bottom = Lerp(c, __fsub_rn(d, c), wx1);
  return Lerp(top, __fsub_rn(bottom, top), wy1);
}

// v converted to O as SaturateCast does: float unchanged; integers rounded to nearest (ties to
// even) and clamped. v is finite here (integer outputs come from integer inputs).
template <typename O>
__device__ __forceinline__ O FromFloat(float v) {
  if constexpr (std::is_floating_point_v<O>) {
    return v;
  } else {
    const int r = __float2int_rn(v);
    const int lo = std::numeric_limits<O>::lowest();
    const int hi = std::numeric_limits<O>::max();
    return static_cast<O>(r < lo ? lo : (r > hi ? hi : r));
  }
}

}  // namespace cuimg::pyramid

#endif  // CUIMG_KERNELS_SRC_PYRAMID_DEVICE_CUH_
