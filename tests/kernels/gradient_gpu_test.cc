// The GPU gradient equals the float64 CPU reference to float32 rounding (relative error over the
// image <= 1e-5, each pixel within 1e-4 of the largest |gradient| + 1e-6) on random inputs of
// every type, odd and tile-straddling sizes down to 1x1, every radius class, volumes, unaligned
// pointers; outputs are poisoned first so unwritten pixels show; runs are deterministic. Labelled
// `gpu`; skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/gradient.h"
#include "cuimg/reference/gradient_reference.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/random_image.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Runs the plan on the device. Every output is poisoned (0xFF bytes: NaN) before the run;
// `input_offset` elements of padding before the input make its pointer unaligned.
absl::StatusOr<GradientImages> RunOnGpu(const Image& input, const GradientSpec& spec,
                                        int input_offset = 0) {
  CUIMG_ASSIGN_OR_RETURN(GradientPlan plan,
                         GradientPlan::Create(input.type(), input.extent(), spec));
  CUIMG_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  const std::size_t pad = static_cast<std::size_t>(input_offset) * PixelSize(input.type());
  const std::size_t out_bytes = static_cast<std::size_t>(input.extent().Pixels()) * 4;
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_in, DeviceBuffer::Allocate(input.size_bytes() + pad));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_out, DeviceBuffer::Allocate(4 * out_bytes));
  if (cudaMemcpy(d_in.As<std::uint8_t>() + pad, input.bytes(), input.size_bytes(),
                 cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemset(d_out.data(), 0xFF, 4 * out_bytes) != cudaSuccess ||
      // Legacy-stream copies and memsets may return early; the plan's stream does not wait.
      cudaDeviceSynchronize() != cudaSuccess) {
    return absl::InternalError("copy");
  }
  float* base = d_out.As<float>();
  const std::int64_t n = input.extent().Pixels();
  CUIMG_RETURN_IF_ERROR(plan.Run(d_in.As<std::uint8_t>() + pad, base, base + n,
                                 spec.magnitude ? base + 2 * n : nullptr,
                                 spec.angle ? base + 3 * n : nullptr, stream.get()));
  CUIMG_RETURN_IF_ERROR(stream.Synchronize());
  GradientImages out;
  Image* images[] = {&out.gx, &out.gy, &out.magnitude, &out.angle};
  for (int i = 0; i < 4; ++i) {
    if ((i == 2 && !spec.magnitude) || (i == 3 && !spec.angle)) continue;
    *images[i] = Image(PixelType::kF32, input.extent());
    if (cudaMemcpy(images[i]->bytes(), base + i * n, out_bytes, cudaMemcpyDeviceToHost) !=
        cudaSuccess) {
      return absl::InternalError("copy back");
    }
  }
  return out;
}

// Relative error over the image <= 1e-5 and every pixel within 1e-4 max|want| + 1e-6 (NaN fails),
// each with a floor of 1e-7 `input_scale` (max |input|) per pixel: float32 sums of terms of size
// max|input| carry that much rounding, and heavy smoothing can leave gradients far smaller.
void ExpectClose(const Image& got, const Image& want, const std::string& what, double input_scale) {
  const float* a = got.As<float>();
  const float* b = want.As<float>();
  const std::int64_t n = want.extent().Pixels();
  double diff2 = 0.0, ref2 = 0.0, max_ref = 0.0;
  for (std::int64_t i = 0; i < n; ++i) max_ref = std::max(max_ref, std::abs(double{b[i]}));
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = double{a[i]} - double{b[i]};
    ASSERT_LE(std::abs(d), 1e-4 * max_ref + 1e-6 + 1e-7 * input_scale)
        << what << " " << testing::DescribeMismatch(got, want, i);
    diff2 += d * d;
    ref2 += double{b[i]} * b[i];
  }
  EXPECT_LE(std::sqrt(diff2),
            1e-5 * std::sqrt(ref2) + (1e-6 + 1e-7 * input_scale) * std::sqrt(double(n)))
      << what;
}

// Angles agree (modulo 2 pi) where the gradient is clearly non-zero: above 1e-3 of the largest
// and above 1e-4 max|input| (below that the direction is rounding noise).
void ExpectAnglesClose(const GradientImages& got, const GradientImages& want,
                       const std::string& what, double input_scale) {
  const std::int64_t n = want.gx.extent().Pixels();
  double max_mag = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    max_mag = std::max(max_mag, double{want.magnitude.As<float>()[i]});
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const double m = want.magnitude.As<float>()[i];
    if (m <= 1e-3 * max_mag || m <= 1e-4 * input_scale) continue;
    double d = std::abs(double{got.angle.As<float>()[i]} - want.angle.As<float>()[i]);
    d = std::min(d, 2 * kPi - d);
    ASSERT_LE(d, 1e-3) << what << " angle at " << i;
  }
}

double MaxAbs(const Image& image) {
  double m = 0.0;
  VisitPixelType(image.type(), [&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
      m = std::max(m, std::abs(static_cast<double>(image.As<T>()[i])));
    }
  });
  return m;
}

void ExpectGpuMatchesReference(const Image& input, const GradientSpec& spec,
                               const std::string& what, int input_offset = 0) {
  absl::StatusOr<GradientImages> want = GradientReference(input, spec);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<GradientImages> got = RunOnGpu(input, spec, input_offset);
  ASSERT_TRUE(got.ok()) << got.status() << " " << what;
  const double scale = MaxAbs(input);
  ExpectClose(got->gx, want->gx, what + " gx", scale);
  ExpectClose(got->gy, want->gy, what + " gy", scale);
  if (spec.magnitude) ExpectClose(got->magnitude, want->magnitude, what + " magnitude", scale);
  if (spec.angle && spec.magnitude) ExpectAnglesClose(*got, *want, what, scale);
}

std::string Name(PixelType type, const Extent& e, const GradientSpec& spec) {
  return std::string(PixelTypeName(type)) + " " + std::to_string(e.width) + "x" +
         std::to_string(e.height) + "x" + std::to_string(e.depth) + " length " +
         std::to_string(spec.kernel_length) + " sigma " + std::to_string(spec.sigma);
}

TEST(GradientGpu, MatchesReferenceOnSizesAcrossTheTileAndTypes) {
  CUIMG_SKIP_IF_NO_GPU();
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32};
  // 8, 12, 120 and 244 wide: the strip kernel's clamped border lanes at x = -4 and x = width.
  const Extent sizes[] = {{1, 1, 1},    {2, 3, 1},   {5, 1, 1},     {1, 5, 1},   {7, 7, 1},
                          {64, 64, 1},  {65, 63, 1}, {63, 65, 1},   {97, 61, 1}, {128, 130, 1},
                          {200, 3, 1},  {4, 200, 1}, {260, 140, 1}, {8, 9, 1},   {12, 40, 1},
                          {120, 17, 1}, {244, 33, 1}};
  std::uint64_t seed = 1;
  for (PixelType type : types) {
    for (const Extent& e : sizes) {
      for (int length : {3, 7, 11, 31}) {
        const GradientSpec spec{length, length == 11 ? 2.5 : 0.0, true, true};
        ExpectGpuMatchesReference(testing::RandomImage(type, e, ++seed, 0, /*finite=*/true), spec,
                                  Name(type, e, spec));
      }
    }
  }
}

TEST(GradientGpu, MatchesReferenceForEveryKernelLength) {
  CUIMG_SKIP_IF_NO_GPU();
  std::mt19937 rng(3);
  for (int length = 3; length <= kMaxGradientKernelLength; length += 2) {
    const PixelType type = static_cast<PixelType>(rng() % 4);
    const Extent e{1 + static_cast<int>(rng() % 150), 1 + static_cast<int>(rng() % 150), 1};
    const GradientSpec spec{length, 0.5 + (rng() % 100) / 10.0, rng() % 2 == 0, false};
    ExpectGpuMatchesReference(testing::RandomImage(type, e, length, 0, true), spec,
                              Name(type, e, spec));
  }
}

TEST(GradientGpu, MatchesReferenceOnFullHdWithVectorAccess) {
  CUIMG_SKIP_IF_NO_GPU();
  for (PixelType type : {PixelType::kU8, PixelType::kF32}) {
    const Extent e{1920, 1080, 1};
    const GradientSpec spec{7, 0.0, true, true};
    ExpectGpuMatchesReference(testing::RandomImage(type, e, 77, 0, true), spec,
                              Name(type, e, spec));
  }
}

TEST(GradientGpu, MatchesReferenceWithUnalignedInput) {
  CUIMG_SKIP_IF_NO_GPU();
  for (PixelType type : {PixelType::kU8, PixelType::kU16, PixelType::kF32}) {
    const Extent e{256, 130, 1};
    const GradientSpec spec{7, 0.0, false, false};
    ExpectGpuMatchesReference(testing::RandomImage(type, e, 5, 0, true), spec,
                              Name(type, e, spec) + " offset 1", /*input_offset=*/1);
  }
}

TEST(GradientGpu, ProcessesVolumesSliceBySliceInOneLaunch) {
  CUIMG_SKIP_IF_NO_GPU();
  std::uint64_t seed = 50;
  for (PixelType type : {PixelType::kU8, PixelType::kI16, PixelType::kF32}) {
    for (const Extent& e : {Extent{33, 20, 5}, Extent{128, 64, 3}, Extent{3, 2, 7}}) {
      const GradientSpec spec{7, 0.0, true, true};
      ExpectGpuMatchesReference(testing::RandomImage(type, e, ++seed, 0, true), spec,
                                Name(type, e, spec));
    }
  }
}

TEST(GradientGpu, GivesRampSlopeAndZeroOnConstants) {
  CUIMG_SKIP_IF_NO_GPU();
  const Extent e{96, 80, 1};
  Image ramp(PixelType::kU16, e);
  for (int y = 0; y < e.height; ++y) {
    for (int x = 0; x < e.width; ++x) {
      ramp.As<std::uint16_t>()[y * e.width + x] = static_cast<std::uint16_t>(3 * x + 2 * y + 9);
    }
  }
  absl::StatusOr<GradientImages> got = RunOnGpu(ramp, GradientSpec{});
  ASSERT_TRUE(got.ok()) << got.status();
  for (int y = 3; y < e.height - 3; ++y) {
    for (int x = 3; x < e.width - 3; ++x) {
      // float32 smoothing of values up to ~450 carries ~3e-5 of rounding into gy.
      ASSERT_NEAR(got->gx.As<float>()[y * e.width + x], 3.0f, 1e-4f) << x << "," << y;
      ASSERT_NEAR(got->gy.As<float>()[y * e.width + x], 2.0f, 1e-4f) << x << "," << y;
    }
  }
  // Derivatives act on paired differences, so flat images give exact zeros.
  Image constant(PixelType::kU8, e);
  std::memset(constant.bytes(), 200, constant.size_bytes());
  got = RunOnGpu(constant, GradientSpec{});
  ASSERT_TRUE(got.ok());
  for (std::int64_t i = 0; i < e.Pixels(); ++i) {
    ASSERT_EQ(got->gx.As<float>()[i], 0.0f);
    ASSERT_EQ(got->gy.As<float>()[i], 0.0f);
  }
}

TEST(GradientGpu, IsDeterministic) {
  CUIMG_SKIP_IF_NO_GPU();
  const Image input = testing::RandomImage(PixelType::kF32, Extent{257, 131, 3}, 99, 0, true);
  const GradientSpec spec{9, 1.7, true, true};
  auto a = RunOnGpu(input, spec);
  auto b = RunOnGpu(input, spec);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(std::memcmp(a->gx.bytes(), b->gx.bytes(), a->gx.size_bytes()), 0);
  EXPECT_EQ(std::memcmp(a->gy.bytes(), b->gy.bytes(), a->gy.size_bytes()), 0);
  EXPECT_EQ(std::memcmp(a->angle.bytes(), b->angle.bytes(), a->angle.size_bytes()), 0);
}

}  // namespace
}  // namespace cuimg
