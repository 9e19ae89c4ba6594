// SaturateCast (border values and output conversions) against OpenCV's saturate_cast, which the
// API documents: integers round to nearest with ties to even, then clamp (also beyond int's
// range, where OpenCV's rounding overflows); NaN becomes 0.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <opencv2/core.hpp>
#include <vector>

#include "cuimg/common/pixel_type.h"

namespace cuimg {
namespace {

// Within int's range: beyond it OpenCV's cvRound overflows (1e300 gives 0), where ours clamps.
std::vector<double> Values() {
  std::vector<double> v = {-2147483648.0, -70000.5, -32768.5, -32767.5, -256.5,      -1.5, -0.5,
                           -0.0,          0.0,      0.5,      1.5,      2.5,         3.5,  254.5,
                           255.5,         256.0,    65534.5,  65535.5,  2147483647.0};
  for (double x = -70000.0; x <= 70000.0; x += 0.25) v.push_back(x);
  return v;
}

TEST(SaturateCast, EqualsOpenCvForEveryIntegerType) {
  for (double x : Values()) {
    EXPECT_EQ(SaturateCast<std::uint8_t>(x), cv::saturate_cast<std::uint8_t>(x)) << x;
    EXPECT_EQ(SaturateCast<std::uint16_t>(x), cv::saturate_cast<std::uint16_t>(x)) << x;
    EXPECT_EQ(SaturateCast<std::int16_t>(x), cv::saturate_cast<std::int16_t>(x)) << x;
  }
}

TEST(SaturateCast, TiesGoToEvenAndNanToZero) {
  EXPECT_EQ(SaturateCast<std::uint8_t>(2.5), 2);
  EXPECT_EQ(SaturateCast<std::uint8_t>(3.5), 4);
  EXPECT_EQ(SaturateCast<std::int16_t>(-2.5), -2);
  EXPECT_EQ(SaturateCast<std::uint8_t>(255.5), 255);
  EXPECT_EQ(SaturateCast<std::uint8_t>(std::nan("")), 0);
  EXPECT_EQ(SaturateCast<float>(2.5), 2.5f);
  // Out of int's range and infinities clamp.
  EXPECT_EQ(SaturateCast<std::uint8_t>(1e300), 255);
  EXPECT_EQ(SaturateCast<std::int16_t>(-std::numeric_limits<double>::infinity()), -32768);
  EXPECT_EQ(SaturateCast<std::uint16_t>(std::numeric_limits<double>::infinity()), 65535);
}

}  // namespace
}  // namespace cuimg
