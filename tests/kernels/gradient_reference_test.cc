// The gradient's taps and CPU reference: the taps' defining sums, OpenCV 4.6's sepFilter2D (float64
// output, our taps, BORDER_REFLECT_101) on random images of every pixel type and odd sizes down to
// 1x1, and float64 checks on ramps and constants that need no other library.
#include "cuimg/reference/gradient_reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "tests/testing/opencv_types.h"
#include "tests/testing/random_image.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

constexpr double kPi = 3.14159265358979323846;

using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

using ::cuimg::testing::CvDepth;

cv::Mat Row(const std::vector<double>& taps) {
  return cv::Mat(1, static_cast<int>(taps.size()), CV_64F, const_cast<double*>(taps.data()))
      .clone();
}

// ||a - b|| <= 1e-5 ||b|| + floor, over all pixels; `floor` absorbs float64 rounding noise where
// the expected gradient is (near) zero everywhere.
void ExpectRelativeClose(const float* a, const cv::Mat& b, double floor, const std::string& what) {
  double diff2 = 0.0;
  double ref2 = 0.0;
  for (int y = 0; y < b.rows; ++y) {
    for (int x = 0; x < b.cols; ++x) {
      const double want = b.at<double>(y, x);
      const double d = static_cast<double>(a[y * b.cols + x]) - want;
      diff2 += d * d;
      ref2 += want * want;
    }
  }
  EXPECT_LE(std::sqrt(diff2), 1e-5 * std::sqrt(ref2) + floor)
      << what << ": relative error " << std::sqrt(diff2 / std::max(ref2, 1e-300));
}

double MaxAbs(const Image& image) {
  return VisitPixelType(image.type(), [&](auto tag) {
    using T = decltype(tag);
    double m = 0.0;
    for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
      m = std::max(m, std::abs(static_cast<double>(image.As<T>()[i])));
    }
    return m;
  });
}

TEST(GradientTaps, DefaultSigmaForLength7Is1Point4) {
  EXPECT_DOUBLE_EQ(DefaultGradientSigma(7), 1.4);
  absl::StatusOr<GradientTaps> taps = ComputeGradientTaps(GradientSpec{});
  ASSERT_TRUE(taps.ok()) << taps.status();
  EXPECT_DOUBLE_EQ(taps->sigma, 1.4);
  EXPECT_EQ(taps->radius, 3);
  EXPECT_EQ(taps->smoothing.size(), 7u);
  // OpenCV's own kernel for the same length and sigma (given explicitly: with sigma 0 and length
  // <= 7, getGaussianKernel returns a fixed binomial table instead).
  const cv::Mat cv_kernel = cv::getGaussianKernel(7, 1.4, CV_64F);
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(taps->smoothing[i], cv_kernel.at<double>(i), 1e-15);
}

TEST(GradientTaps, SmoothingSumsToOneAndDerivativeHasUnitFirstMoment) {
  for (int length = 3; length <= kMaxGradientKernelLength; length += 2) {
    for (double sigma : {0.0, 0.3, 1.0, 2.5, 64.0}) {
      absl::StatusOr<GradientTaps> taps = ComputeGradientTaps(GradientSpec{length, sigma});
      ASSERT_TRUE(taps.ok()) << taps.status();
      double sum = 0.0, moment = 0.0, odd_sum = 0.0;
      for (int k = -taps->radius; k <= taps->radius; ++k) {
        sum += taps->smoothing[k + taps->radius];
        moment += k * taps->derivative[k + taps->radius];
        odd_sum += taps->derivative[k + taps->radius];
        EXPECT_DOUBLE_EQ(taps->smoothing[k + taps->radius], taps->smoothing[-k + taps->radius]);
        EXPECT_DOUBLE_EQ(taps->derivative[k + taps->radius], -taps->derivative[-k + taps->radius]);
        if (k > 0) {
          EXPECT_GE(taps->derivative[k + taps->radius], 0.0);
        }
      }
      EXPECT_GT(taps->derivative[taps->radius + 1], 0.0);
      EXPECT_NEAR(sum, 1.0, 1e-14) << length << " " << sigma;
      EXPECT_NEAR(moment, 1.0, 1e-14) << length << " " << sigma;
      EXPECT_NEAR(odd_sum, 0.0, 1e-15);
    }
  }
}

TEST(GradientTaps, DerivativeTendsToCentralDifferenceForTinySigma) {
  absl::StatusOr<GradientTaps> taps = ComputeGradientTaps(GradientSpec{7, 1e-3});
  ASSERT_TRUE(taps.ok()) << taps.status();
  const std::vector<double> want_d = {0, 0, -0.5, 0, 0.5, 0, 0};
  const std::vector<double> want_s = {0, 0, 0, 1, 0, 0, 0};
  for (int i = 0; i < 7; ++i) {
    EXPECT_DOUBLE_EQ(taps->derivative[i], want_d[i]) << i;
    EXPECT_DOUBLE_EQ(taps->smoothing[i], want_s[i]) << i;
  }
}

TEST(GradientSpec, RejectsBadLengthsAndSigmasNamingTheField) {
  for (int length : {0, 1, 2, 4, 8, 33, -7}) {
    EXPECT_THAT(ValidateGradientSpec(GradientSpec{length, 0.0}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kernel_length")))
        << length;
  }
  for (double sigma : {-1.0, 64.5, std::nan(""), std::numeric_limits<double>::infinity()}) {
    EXPECT_THAT(ComputeGradientTaps(GradientSpec{7, sigma}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sigma")))
        << sigma;
  }
  EXPECT_TRUE(ValidateGradientSpec(GradientSpec{31, 64.0}).ok());
  EXPECT_TRUE(ValidateGradientSpec(GradientSpec{3, 1e-6}).ok());
}

TEST(GradientReference, Reflect101EqualsOpenCVBorderInterpolate) {
  for (int n = 1; n <= 6; ++n) {
    for (int p = -40; p <= 45; ++p) {
      EXPECT_EQ(Reflect101(p, n), cv::borderInterpolate(p, n, cv::BORDER_REFLECT_101))
          << "p=" << p << " n=" << n;
    }
  }
}

TEST(GradientReference, MatchesOpenCVSepFilter2DOnRandomImages) {
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32};
  const std::pair<int, int> sizes[] = {{1, 1}, {2, 3}, {5, 1}, {1, 5}, {7, 7}, {97, 61}, {16, 9}};
  const std::pair<int, double> kernels[] = {{3, 0.0}, {7, 0.0}, {7, 2.5}, {15, 0.7}, {31, 0.0}};
  std::uint64_t seed = 1;
  for (PixelType type : types) {
    for (const auto& [w, h] : sizes) {
      for (const auto& [length, sigma] : kernels) {
        // Arrange
        const std::string what = std::string(PixelTypeName(type)) + " " + std::to_string(w) + "x" +
                                 std::to_string(h) + " length " + std::to_string(length) +
                                 " sigma " + std::to_string(sigma);
        const Image input = testing::RandomImage(type, Extent{w, h, 1}, ++seed, 0, true);
        const GradientSpec spec{length, sigma, true, true};
        absl::StatusOr<GradientTaps> taps = ComputeGradientTaps(spec);
        ASSERT_TRUE(taps.ok());
        const cv::Mat src(h, w, CV_MAKETYPE(CvDepth(type), 1),
                          const_cast<std::uint8_t*>(input.bytes()));
        cv::Mat want_gx, want_gy;
        // sepFilter2D correlates: kernelX along x first, then kernelY along y.
        cv::sepFilter2D(src, want_gx, CV_64F, Row(taps->derivative), Row(taps->smoothing),
                        cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);
        cv::sepFilter2D(src, want_gy, CV_64F, Row(taps->smoothing), Row(taps->derivative),
                        cv::Point(-1, -1), 0, cv::BORDER_REFLECT_101);

        // Act
        absl::StatusOr<GradientImages> got = GradientReference(input, spec);

        // Assert
        ASSERT_TRUE(got.ok()) << got.status();
        const double floor = 1e-12 * MaxAbs(input) * std::sqrt(static_cast<double>(w) * h);
        ExpectRelativeClose(got->gx.As<float>(), want_gx, floor, what + " gx");
        ExpectRelativeClose(got->gy.As<float>(), want_gy, floor, what + " gy");
        cv::Mat want_mag(h, w, CV_64F);
        double max_mag = 0.0;
        for (int i = 0; i < w * h; ++i) {
          want_mag.at<double>(i) = std::hypot(want_gx.at<double>(i), want_gy.at<double>(i));
          max_mag = std::max(max_mag, want_mag.at<double>(i));
        }
        ExpectRelativeClose(got->magnitude.As<float>(), want_mag, floor, what + " magnitude");
        for (int i = 0; i < w * h; ++i) {
          // The angle is defined where the gradient is not rounding noise.
          if (want_mag.at<double>(i) <= 1e-6 * max_mag || want_mag.at<double>(i) < 1e-9) continue;
          const double want = std::atan2(want_gy.at<double>(i), want_gx.at<double>(i));
          double d = std::abs(got->angle.As<float>()[i] - want);
          d = std::min(d, 2 * kPi - d);
          ASSERT_LE(d, 1e-5) << what << " angle at " << i;
        }
      }
    }
  }
}

TEST(GradientReference, RampGivesItsSlopeAwayFromBordersAndConstantGivesZero) {
  // Arrange: I(x, y) = 3x - 2y + 100, as f32 and u16 (exact in both), length 7 and 15.
  for (PixelType type : {PixelType::kF32, PixelType::kU16}) {
    for (int length : {7, 15}) {
      const Extent e{40, 33, 1};
      Image ramp(type, e);
      Image constant(type, e);
      VisitPixelType(type, [&](auto tag) {
        using T = decltype(tag);
        for (int y = 0; y < e.height; ++y) {
          for (int x = 0; x < e.width; ++x) {
            ramp.As<T>()[y * e.width + x] = static_cast<T>(3 * x - 2 * y + 100);
            constant.As<T>()[y * e.width + x] = static_cast<T>(77);
          }
        }
        return 0;
      });
      const GradientSpec spec{length, 0.0, true, true};
      const int r = (length - 1) / 2;

      // Act
      absl::StatusOr<GradientImages> g = GradientReference(ramp, spec);
      absl::StatusOr<GradientImages> c = GradientReference(constant, spec);

      // Assert
      ASSERT_TRUE(g.ok() && c.ok());
      for (int y = 0; y < e.height; ++y) {
        for (int x = 0; x < e.width; ++x) {
          const int i = y * static_cast<int>(e.width) + x;
          EXPECT_NEAR(c->gx.As<float>()[i], 0.0f, 1e-5f);
          EXPECT_NEAR(c->gy.As<float>()[i], 0.0f, 1e-5f);
          if (x < r || x >= e.width - r || y < r || y >= e.height - r) continue;
          EXPECT_NEAR(g->gx.As<float>()[i], 3.0f, 1e-5f) << x << "," << y;
          EXPECT_NEAR(g->gy.As<float>()[i], -2.0f, 1e-5f) << x << "," << y;
          EXPECT_NEAR(g->magnitude.As<float>()[i], std::sqrt(13.0f), 1e-5f);
          EXPECT_NEAR(g->angle.As<float>()[i], std::atan2(-2.0f, 3.0f), 1e-6f);
        }
      }
      // Reflect-101 makes the derivative vanish on the edge column and row itself.
      EXPECT_NEAR(g->gx.As<float>()[5 * e.width], 0.0f, 1e-5f);
      EXPECT_NEAR(g->gy.As<float>()[5], 0.0f, 1e-5f);
    }
  }
}

TEST(GradientReference, ProcessesVolumesSliceBySlice) {
  const Image volume = testing::RandomImage(PixelType::kI16, Extent{23, 17, 3}, 7);
  const GradientSpec spec{5, 1.1, true, false};
  absl::StatusOr<GradientImages> whole = GradientReference(volume, spec);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->angle.size_bytes(), 0u);
  const std::int64_t slice = volume.extent().SlicePixels();
  for (int z = 0; z < 3; ++z) {
    Image one(PixelType::kI16, Extent{23, 17, 1});
    std::memcpy(one.bytes(), volume.bytes() + z * slice * 2, slice * 2);
    absl::StatusOr<GradientImages> part = GradientReference(one, spec);
    ASSERT_TRUE(part.ok());
    EXPECT_EQ(std::memcmp(part->gx.bytes(), whole->gx.bytes() + z * slice * 4, slice * 4), 0);
    EXPECT_EQ(std::memcmp(part->gy.bytes(), whole->gy.bytes() + z * slice * 4, slice * 4), 0);
    EXPECT_EQ(
        std::memcmp(part->magnitude.bytes(), whole->magnitude.bytes() + z * slice * 4, slice * 4),
        0);
  }
}

TEST(GradientReference, RejectsSeveralChannelsAndBadSpecs) {
  const Image rgb(PixelType::kU8, Extent{4, 4, 1}, 3);
  EXPECT_THAT(GradientReference(rgb, GradientSpec{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("channel")));
  const Image gray(PixelType::kU8, Extent{4, 4, 1});
  EXPECT_THAT(GradientReference(gray, GradientSpec{6, 0.0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kernel_length")));
}

}  // namespace
}  // namespace cuimg
