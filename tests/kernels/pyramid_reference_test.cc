// The pyramid's level list and CPU reference: level sizes (1080p at 1.05 x 31 as in
// research/kernels.md), stopping at the minimum size, validation, and every level against OpenCV
// 4.6's cv::resize INTER_LINEAR (chained for CASCADED) on random images of every pixel type.
#include "cuimg/reference/pyramid_reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
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

using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

using ::cuimg::testing::CvDepth;

cv::Mat AsMat(const Image& image) {
  return cv::Mat(static_cast<int>(image.extent().height), static_cast<int>(image.extent().width),
                 CV_MAKETYPE(CvDepth(image.type()), 1), const_cast<std::uint8_t*>(image.bytes()));
}

// max |a - b| over the level (both converted to double).
double MaxAbsDiff(const Image& got, const cv::Mat& want) {
  cv::Mat a, b;
  AsMat(got).convertTo(a, CV_64F);
  want.convertTo(b, CV_64F);
  return cv::norm(a, b, cv::NORM_INF);
}

double Range(const Image& image) {
  cv::Mat m;
  AsMat(image).convertTo(m, CV_64F);
  double lo = 0, hi = 0;
  cv::minMaxLoc(m, &lo, &hi);
  return hi - lo;
}

PyramidSpec Spec(int levels, double ratio, int min_side, PyramidMode mode, PixelType out) {
  PyramidSpec spec;
  spec.levels = levels;
  spec.ratio = ratio;
  spec.min_width = min_side;
  spec.min_height = min_side;
  spec.mode = mode;
  spec.output_type = out;
  return spec;
}

TEST(PyramidLevels, Lists31LevelsOf1080pDownTo444x250) {
  absl::StatusOr<std::vector<PyramidLevel>> levels =
      PlanPyramidLevels(PixelType::kU8, Extent{1920, 1080, 1}, PyramidSpec{});
  ASSERT_TRUE(levels.ok()) << levels.status();
  ASSERT_EQ(levels->size(), 31u);
  EXPECT_EQ(levels->front().width, 1920);
  EXPECT_EQ(levels->front().height, 1080);
  EXPECT_EQ((*levels)[1].width, 1829);
  EXPECT_EQ((*levels)[1].height, 1029);
  EXPECT_EQ(levels->back().width, 444);
  EXPECT_EQ(levels->back().height, 250);
  EXPECT_DOUBLE_EQ(levels->back().scale, std::pow(1.05, 30));
  std::int64_t area = 0;
  std::size_t end = 0;
  for (const PyramidLevel& l : *levels) {
    area += l.width * l.height;
    EXPECT_EQ(l.offset_bytes % kPyramidLevelAlignment, 0u);
    EXPECT_GE(l.offset_bytes, end);
    EXPECT_EQ(l.bytes, static_cast<std::size_t>(l.width * l.height) * 4);
    end = l.offset_bytes + l.bytes;
  }
  EXPECT_EQ(area, 21224637);  // research/kernels.md section 4: 10.24x the base
  EXPECT_EQ(PyramidOutputBytes(*levels) % kPyramidLevelAlignment, 0u);
  EXPECT_GE(PyramidOutputBytes(*levels), end);
  EXPECT_LT(PyramidOutputBytes(*levels), end + kPyramidLevelAlignment);
}

TEST(PyramidLevels, StopsBeforeTheFirstLevelBelowTheMinimumSize) {
  auto sizes = [](Extent e, PyramidSpec spec) {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    absl::StatusOr<std::vector<PyramidLevel>> levels = PlanPyramidLevels(PixelType::kU8, e, spec);
    EXPECT_TRUE(levels.ok()) << levels.status();
    if (levels.ok()) {
      for (const PyramidLevel& l : *levels) out.emplace_back(l.width, l.height);
    }
    return out;
  };
  using Sizes = std::vector<std::pair<std::int64_t, std::int64_t>>;
  PyramidSpec spec = Spec(10, 2.0, 8, PyramidMode::kFromBase, PixelType::kF32);
  EXPECT_EQ(sizes(Extent{64, 64, 1}, spec), (Sizes{{64, 64}, {32, 32}, {16, 16}, {8, 8}}));
  EXPECT_EQ(sizes(Extent{64, 20, 1}, spec), (Sizes{{64, 20}, {32, 10}}));
  spec.min_width = 9;
  EXPECT_EQ(sizes(Extent{64, 64, 1}, spec), (Sizes{{64, 64}, {32, 32}, {16, 16}}));
  spec.levels = 2;
  EXPECT_EQ(sizes(Extent{64, 64, 1}, spec), (Sizes{{64, 64}, {32, 32}}));
  // Half-way sizes round away from zero: 5 / 2 = 2.5 -> 3, 3 / 2 = 1.5 -> 2.
  spec = Spec(2, 2.0, 1, PyramidMode::kFromBase, PixelType::kF32);
  EXPECT_EQ(sizes(Extent{5, 3, 1}, spec), (Sizes{{5, 3}, {3, 2}}));
  // Default minimum 8: 1920x1080 at ratio 2 stops after 1920/2^7 = 15x8.
  spec = Spec(64, 2.0, 8, PyramidMode::kFromBase, PixelType::kF32);
  EXPECT_EQ(sizes(Extent{1920, 1080, 1}, spec).size(), 8u);
}

TEST(PyramidLevels, RejectsBadSpecsNamingTheField) {
  const Extent e{64, 48, 1};
  const struct {
    PyramidSpec spec;
    const char* field;
  } cases[] = {
      {Spec(0, 1.05, 8, PyramidMode::kFromBase, PixelType::kF32), "levels"},
      {Spec(3, 1.0, 8, PyramidMode::kFromBase, PixelType::kF32), "ratio"},
      {Spec(3, 0.5, 8, PyramidMode::kFromBase, PixelType::kF32), "ratio"},
      {Spec(3, std::nan(""), 8, PyramidMode::kFromBase, PixelType::kF32), "ratio"},
      {Spec(3, std::numeric_limits<double>::infinity(), 8, PyramidMode::kFromBase, PixelType::kF32),
       "ratio"},
      {Spec(3, 1.05, 0, PyramidMode::kFromBase, PixelType::kF32), "min_width"},
      {Spec(3, 1.05, 8, PyramidMode::kFromBase, PixelType::kU16), "output_type"},
      {Spec(3, 1.05, 49, PyramidMode::kFromBase, PixelType::kF32), "no level"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(PlanPyramidLevels(PixelType::kU8, e, c.spec),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.field)))
        << c.field;
  }
  PyramidSpec spec;
  spec.min_height = 0;
  EXPECT_THAT(PlanPyramidLevels(PixelType::kU8, e, spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min_height")));
  EXPECT_THAT(PlanPyramidLevels(PixelType::kU8, Extent{64, 48, 2}, PyramidSpec{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("extent")));
  EXPECT_THAT(PyramidReference(Image(PixelType::kU8, e, 3), PyramidSpec{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("channel")));
}

// Every level against cv::resize of the input (FROM_BASE) or of the previous f32 level
// (CASCADED); the tolerance is 1e-4 of the input's range for f32 outputs, 1 for integer ones.
void ExpectMatchesOpenCV(const Image& input, const PyramidSpec& spec, const std::string& what) {
  // Arrange
  absl::StatusOr<std::vector<PyramidLevel>> levels =
      PlanPyramidLevels(input.type(), input.extent(), spec);
  ASSERT_TRUE(levels.ok()) << levels.status() << " " << what;
  cv::Mat base_f32;
  AsMat(input).convertTo(base_f32, CV_32F);
  const double range = Range(input);
  const bool integer_out = spec.output_type != PixelType::kF32;
  const double tolerance = integer_out ? 1.0 : 1e-4 * std::max(range, 1e-30);

  // Act
  absl::StatusOr<std::vector<Image>> got = PyramidReference(input, spec);

  // Assert
  ASSERT_TRUE(got.ok()) << got.status() << " " << what;
  ASSERT_EQ(got->size(), levels->size());
  cv::Mat previous = base_f32;
  for (std::size_t i = 0; i < levels->size(); ++i) {
    const PyramidLevel& level = (*levels)[i];
    const Image& out = (*got)[i];
    ASSERT_EQ(out.type(), spec.output_type);
    ASSERT_EQ(out.extent(), (Extent{level.width, level.height, 1}));
    const cv::Size size(static_cast<int>(level.width), static_cast<int>(level.height));
    cv::Mat want;
    if (spec.mode == PyramidMode::kCascaded) {
      cv::Mat next;
      cv::resize(previous, next, size, 0, 0, cv::INTER_LINEAR);
      previous = next;
      want = next;  // rounding to an integer output is the only step left
    } else if (integer_out) {
      cv::resize(AsMat(input), want, size, 0, 0, cv::INTER_LINEAR);  // OpenCV's own integer path
    } else {
      cv::resize(base_f32, want, size, 0, 0, cv::INTER_LINEAR);
    }
    const double diff = MaxAbsDiff(out, want);
    EXPECT_LE(diff, tolerance) << what << " level " << i << " " << level.width << "x"
                               << level.height;
  }
  // Level 0 is the input itself.
  cv::Mat level0;
  AsMat((*got)[0]).convertTo(level0, CV_64F);
  cv::Mat in64;
  AsMat(input).convertTo(in64, CV_64F);
  EXPECT_EQ(cv::norm(level0, in64, cv::NORM_INF), 0.0) << what;
}

TEST(PyramidReference, MatchesOpenCVResizeFromBaseForF32) {
  std::uint64_t seed = 10;
  for (const Extent& e :
       {Extent{1920, 1080, 1}, Extent{97, 61, 1}, Extent{33, 8, 1}, Extent{1, 1, 1},
        Extent{2, 3, 1}, Extent{3, 2, 1}, Extent{1, 17, 1}, Extent{19, 1, 1}}) {
    const Image input = testing::RandomImage(PixelType::kF32, e, ++seed, 0, /*finite=*/true);
    const int min_side = e.width * e.height < 100 ? 1 : 8;
    for (double ratio : {1.05, 1.3, 2.0, 3.7}) {
      ExpectMatchesOpenCV(input, Spec(31, ratio, min_side, PyramidMode::kFromBase, PixelType::kF32),
                          std::to_string(e.width) + "x" + std::to_string(e.height) + " ratio " +
                              std::to_string(ratio));
    }
  }
}

TEST(PyramidReference, MatchesOpenCVResizeForIntegerInputs) {
  std::uint64_t seed = 100;
  for (PixelType type : {PixelType::kU8, PixelType::kU16, PixelType::kI16}) {
    for (const Extent& e : {Extent{640, 480, 1}, Extent{97, 61, 1}, Extent{2, 3, 1},
                            Extent{1, 1, 1}, Extent{13, 1, 1}}) {
      const Image input = testing::RandomImage(type, e, ++seed);
      const int min_side = e.width * e.height < 100 ? 1 : 8;
      for (PixelType out : {type, PixelType::kF32}) {
        ExpectMatchesOpenCV(input, Spec(31, 1.05, min_side, PyramidMode::kFromBase, out),
                            std::string(PixelTypeName(type)) + "->" +
                                std::string(PixelTypeName(out)) + " " + std::to_string(e.width) +
                                "x" + std::to_string(e.height));
      }
      ExpectMatchesOpenCV(input, Spec(12, 1.7, min_side, PyramidMode::kFromBase, type),
                          std::string(PixelTypeName(type)) + " ratio 1.7");
    }
  }
}

TEST(PyramidReference, CascadedMatchesChainedOpenCVResizeOfF32Levels) {
  std::uint64_t seed = 1000;
  for (PixelType type : {PixelType::kU8, PixelType::kI16, PixelType::kF32}) {
    for (const Extent& e : {Extent{321, 203, 1}, Extent{40, 30, 1}, Extent{3, 2, 1}}) {
      const Image input = testing::RandomImage(type, e, ++seed, 0, /*finite=*/true);
      const int min_side = e.width * e.height < 100 ? 1 : 8;
      for (PixelType out : {type, PixelType::kF32}) {
        ExpectMatchesOpenCV(input, Spec(31, 1.05, min_side, PyramidMode::kCascaded, out),
                            "cascaded " + std::string(PixelTypeName(type)) + "->" +
                                std::string(PixelTypeName(out)) + " " + std::to_string(e.width) +
                                "x" + std::to_string(e.height));
      }
    }
  }
}

TEST(PyramidReference, LinearTapClampsAsOpenCV) {
  // Downscale 10 -> 4: scale 2.5, f = 2.5 d + 0.75.
  LinearTap t = ResizeLinearTap(0, 10, 4);
  EXPECT_EQ(t.i0, 0);
  EXPECT_EQ(t.i1, 1);
  EXPECT_FLOAT_EQ(t.w1, 0.75f);
  t = ResizeLinearTap(3, 10, 4);  // f = 8.25
  EXPECT_EQ(t.i0, 8);
  EXPECT_EQ(t.i1, 9);
  EXPECT_FLOAT_EQ(t.w1, 0.25f);
  // Upscale 2 -> 5: the first output lies left of the first sample (clamped, weight 0); the last
  // right of the last: OpenCV's (1, weight 0) as the pair (0, 1) with weight 1.
  t = ResizeLinearTap(0, 2, 5);
  EXPECT_EQ(t.i0, 0);
  EXPECT_EQ(t.i1, 1);
  EXPECT_FLOAT_EQ(t.w1, 0.0f);
  t = ResizeLinearTap(4, 2, 5);
  EXPECT_EQ(t.i0, 0);
  EXPECT_EQ(t.i1, 1);
  EXPECT_FLOAT_EQ(t.w1, 1.0f);
  // A one-pixel source always samples pixel 0.
  t = ResizeLinearTap(0, 1, 1);
  EXPECT_EQ(t.i0, 0);
  EXPECT_EQ(t.i1, 0);
  EXPECT_FLOAT_EQ(t.w1, 0.0f);
}

}  // namespace
}  // namespace cuimg
