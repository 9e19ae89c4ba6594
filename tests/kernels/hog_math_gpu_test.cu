// hog_math.h's DivideInRange and SqrtInRange (on the GPU: the fast paths of CUDA's division and
// sqrt without their range checks) against the correctly rounded __fdiv_rn and __fsqrt_rn, bit
// for bit, on every operand the blocks kernel can give them. A gradient component is the
// difference of two GammaLut values (with or without gamma); VoteOf divides
// min(|dx|, |dy|) by max(|dx|, |dy|) + eps and takes the square root of dx * dx + dy * dy (each
// product and the sum rounded: the kernel is built with -fmad=false), so every pair of absolute
// differences is checked. The normalizations' ReciprocalInRange and SqrtOfNonNegative are
// checked against __frcp_rn and __fsqrt_rn on every float of their ranges. Labelled `gpu`; skips
// without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuimg/common/device_buffer.h"
#include "detect/hog_math.h"
#include "tests/testing/gpu_test_env.h"

namespace cuimg {
namespace {

// Every |GammaLut(i) - GammaLut(j)|, sorted, without repeats.
std::vector<float> AbsoluteDifferences(bool gamma) {
  std::vector<float> lut(256);
  for (int i = 0; i < 256; ++i) lut[i] = hog::GammaLut(i, gamma);
  std::vector<float> out;
  for (int i = 0; i < 256; ++i) {
    for (int j = 0; j < 256; ++j) out.push_back(std::fabs(lut[i] - lut[j]));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Mismatches {
  unsigned long long division;
  unsigned long long sqrt;
  float first_a;  // the first division or sqrt operands found wrong (any, when several)
  float first_b;
};

// Thread pairs (values[i], values[j]) for i = blockIdx.x and every j >= i.
__global__ void CheckPairs(const float* values, int n, Mismatches* out) {
  constexpr float kEps = static_cast<float>(2.2204460492503131e-16);  // FastAtan2Radians'
  const int i = static_cast<int>(blockIdx.x);
  const float u = values[i];
  for (int j = i + static_cast<int>(threadIdx.x); j < n; j += static_cast<int>(blockDim.x)) {
    const float v = values[j];
    const float den = __fadd_rn(v, kEps);
    const float fast = hog::DivideInRange(u, den);
    const float exact = __fdiv_rn(u, den);
    if (__float_as_uint(fast) != __float_as_uint(exact)) {
      atomicAdd(&out->division, 1ull);
      out->first_a = u;
      out->first_b = den;
    }
    const float mag2 = __fadd_rn(__fmul_rn(u, u), __fmul_rn(v, v));
    if (mag2 > 0.f &&
        __float_as_uint(hog::SqrtInRange(mag2)) != __float_as_uint(__fsqrt_rn(mag2))) {
      atomicAdd(&out->sqrt, 1ull);
      out->first_a = mag2;
    }
  }
}

void ExpectFastPathsExact(bool gamma) {
  const std::vector<float> values = AbsoluteDifferences(gamma);
  absl::StatusOr<DeviceBuffer> d_values = DeviceBuffer::Allocate(values.size() * sizeof(float));
  absl::StatusOr<DeviceBuffer> d_out = DeviceBuffer::Allocate(sizeof(Mismatches));
  ASSERT_TRUE(d_values.ok() && d_out.ok());
  ASSERT_EQ(cudaMemcpy(d_values->data(), values.data(), values.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemset(d_out->data(), 0, sizeof(Mismatches)), cudaSuccess);
  const int n = static_cast<int>(values.size());
  CheckPairs<<<n, 256>>>(d_values->As<float>(), n, d_out->As<Mismatches>());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Mismatches m;
  ASSERT_EQ(cudaMemcpy(&m, d_out->data(), sizeof(m), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(m.division, 0u) << "e.g. " << m.first_a << " / " << m.first_b;
  EXPECT_EQ(m.sqrt, 0u) << "e.g. sqrt " << m.first_a;
  // The operands span what the kernel sees: the smallest nonzero difference and the largest.
  EXPECT_GT(values.size(), gamma ? 30000u : 255u);
}

// Every float from bit pattern `first` to 0x7f7fffff (the largest finite one): SqrtOfNonNegative
// against __fsqrt_rn, and ReciprocalInRange against __frcp_rn from the smallest normal float up
// to 2^126 (its stated range).
__global__ void CheckEveryFloat(std::uint32_t first, Mismatches* out) {
  constexpr std::uint32_t kLastFinite = 0x7f7fffffu;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t bits =
           first + blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x;
       bits <= kLastFinite; bits += stride) {
    const float x = __uint_as_float(static_cast<std::uint32_t>(bits));
    if (__float_as_uint(hog::SqrtOfNonNegative(x)) != __float_as_uint(__fsqrt_rn(x))) {
      atomicAdd(&out->sqrt, 1ull);
      out->first_a = x;
    }
    if (x >= 0x1p-126f && x < 0x1p126f &&
        __float_as_uint(hog::ReciprocalInRange(x)) != __float_as_uint(__frcp_rn(x))) {
      atomicAdd(&out->division, 1ull);
      out->first_b = x;
    }
  }
}

TEST(HogMathGpu, NormalizationSqrtAndReciprocalAreExactOnEveryFloat) {
  CUIMG_SKIP_IF_NO_GPU();
  absl::StatusOr<DeviceBuffer> d_out = DeviceBuffer::Allocate(sizeof(Mismatches));
  ASSERT_TRUE(d_out.ok());
  ASSERT_EQ(cudaMemset(d_out->data(), 0, sizeof(Mismatches)), cudaSuccess);
  CheckEveryFloat<<<4096, 256>>>(0u, d_out->As<Mismatches>());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Mismatches m;
  ASSERT_EQ(cudaMemcpy(&m, d_out->data(), sizeof(m), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(m.sqrt, 0u) << "e.g. sqrt " << m.first_a;
  EXPECT_EQ(m.division, 0u) << "e.g. 1 / " << m.first_b;
}

TEST(HogMathGpu, FastDivisionAndSqrtAreExactOnEveryGammaGradient) {
  CUIMG_SKIP_IF_NO_GPU();
  ExpectFastPathsExact(true);
}

TEST(HogMathGpu, FastDivisionAndSqrtAreExactOnEveryLinearGradient) {
  CUIMG_SKIP_IF_NO_GPU();
  ExpectFastPathsExact(false);
}

}  // namespace
}  // namespace cuimg
