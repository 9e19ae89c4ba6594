// One bilinear sample with OpenCV cv::resize INTER_LINEAR semantics, as device functions that the
// pyramid kernel (pyramid.cu) and later the pedestrian detector reuse. They compute exactly what
// PyramidReference / ResizeLinearTap compute on the host (explicitly rounded float64 and float32
// operations, no fused multiply-add), so results agree bit for bit.
#ifndef CUIMG_KERNELS_SRC_PYRAMID_DEVICE_CUH_
#define CUIMG_KERNELS_SRC_PYRAMID_DEVICE_CUH_

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <type_traits>

namespace cuimg::pyramid {

// The source pair of one output coordinate along one axis: samples i0 and i0 + step with weights
// w0 and w1, step 1 unless the source is one pixel long (step 0).
struct AxisTap {
  int i0;
  int step;
  float w0;
  float w1;
};

// ResizeLinearTap (pyramid_reference.h) for output coordinate d of `dst` outputs over `src`
// samples, given scale = ResizeScale(src, dst). OpenCV clamps a coordinate past the last sample to
// (src - 1, weight 0); here the same value comes from the pair (src - 2, src - 1) with weights
// (0, 1), so the second sample is always i0 + 1 (an immediate address offset) when src >= 2.
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
    t.w0 = src >= 2 ? 0.0f : 1.0f;
    t.w1 = src >= 2 ? 1.0f : 0.0f;
    return t;
  }
  t.i0 = i;
  t.step = 1;
  t.w0 = __fsub_rn(1.0f, f);
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

// (row0[0] * wx0 + row0[dx] * wx1) * wy0 + (row1[0] * wx0 + row1[dx] * wx1) * wy1, each product
// and sum rounded to float32 in this order. row0/row1 point at the first sample of each row.
template <typename S>
__device__ __forceinline__ float BilinearSample(const S* row0, const S* row1, int dx, float wx0,
                                                float wx1, float wy0, float wy1) {
  const float a = LoadSample(row0);
  const float b = LoadSample(row0 + dx);
  const float c = LoadSample(row1);
  const float d = LoadSample(row1 + dx);
  const float top = __fadd_rn(__fmul_rn(a, wx0), __fmul_rn(b, wx1));
  const float bottom = __fadd_rn(__fmul_rn(c, wx0), __fmul_rn(d, wx1));
  return __fadd_rn(__fmul_rn(top, wy0), __fmul_rn(bottom, wy1));
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
