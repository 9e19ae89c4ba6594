// Structuring elements: 2D shapes equal OpenCV's getStructuringElement; 3D shapes and chords
// follow their documented definitions.
#include "cuimg/kernels/structuring_element.h"

#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;

TEST(StructuringElement, Matches2DShapesOfOpenCV) {
  const std::pair<ElementShape, int> shapes[] = {{ElementShape::kRect, cv::MORPH_RECT},
                                                 {ElementShape::kEllipse, cv::MORPH_ELLIPSE},
                                                 {ElementShape::kCross, cv::MORPH_CROSS}};
  for (const auto& [shape, cv_shape] : shapes) {
    for (int h = 1; h <= 40; ++h) {
      for (int w = 1; w <= 40; ++w) {
        // Arrange
        const cv::Mat expected = cv::getStructuringElement(cv_shape, cv::Size(w, h));
        // Act
        absl::StatusOr<StructuringElement> se =
            StructuringElement::Create(ElementSpec{shape, w, h, 0, -1, -1, -1, {}});
        // Assert
        ASSERT_TRUE(se.ok()) << se.status();
        for (int y = 0; y < h; ++y) {
          for (int x = 0; x < w; ++x) {
            ASSERT_EQ(se->Contains(x, y, 0), expected.at<uchar>(y, x) != 0)
                << "shape " << cv_shape << " size " << w << "x" << h << " at " << x << "," << y;
          }
        }
      }
    }
  }
}

TEST(StructuringElement, LargeEllipseMatchesOpenCV) {
  for (int size : {63, 64, 101, 255, 1023}) {
    const cv::Mat expected =
        cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(size, size / 2 + 1));
    auto se = StructuringElement::Create(
        ElementSpec{ElementShape::kEllipse, size, size / 2 + 1, 0, -1, -1, -1, {}});
    ASSERT_TRUE(se.ok());
    for (int y = 0; y < se->height(); ++y) {
      for (int x = 0; x < size; ++x) {
        ASSERT_EQ(se->Contains(x, y, 0), expected.at<uchar>(y, x) != 0) << size;
      }
    }
  }
}

TEST(StructuringElement, CrossFollowsOffCentreAnchorAsOpenCV) {
  const cv::Mat expected =
      cv::getStructuringElement(cv::MORPH_CROSS, cv::Size(7, 5), cv::Point(1, 3));
  auto se = StructuringElement::Create(ElementSpec{ElementShape::kCross, 7, 5, 0, 1, 3, -1, {}});
  ASSERT_TRUE(se.ok());
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) EXPECT_EQ(se->Contains(x, y, 0), expected.at<uchar>(y, x) != 0);
  }
}

TEST(StructuringElement, BallIsTheIntegerBall) {
  for (int r = 0; r <= 6; ++r) {
    const int n = 2 * r + 1;
    auto se =
        StructuringElement::Create(ElementSpec{ElementShape::kEllipse, n, n, n, -1, -1, -1, {}});
    ASSERT_TRUE(se.ok());
    for (int z = 0; z < n; ++z) {
      for (int y = 0; y < n; ++y) {
        for (int x = 0; x < n; ++x) {
          const int d2 = (x - r) * (x - r) + (y - r) * (y - r) + (z - r) * (z - r);
          ASSERT_EQ(se->Contains(x, y, z), d2 <= r * r) << r;
        }
      }
    }
  }
}

TEST(StructuringElement, ChordsCoverExactlyTheMembers) {
  std::vector<std::uint8_t> mask = {1, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1};  // 4x3
  auto se = StructuringElement::Create(ElementSpec{ElementShape::kCustom, 4, 3, 0, 1, 2, -1, mask});
  ASSERT_TRUE(se.ok());
  const std::vector<Chord> chords = se->Chords();
  const std::vector<Chord> expected = {{-1, -2, 0, 2}, {2, -2, 0, 1}, {-1, 0, 0, 4}};
  EXPECT_EQ(chords, expected);
  EXPECT_EQ(se->MemberCount(), 7);
  EXPECT_FALSE(se->IsBox());
}

TEST(StructuringElement, RejectsBadSpecsNamingTheField) {
  EXPECT_THAT(StructuringElement::Create(ElementSpec{ElementShape::kRect, 0, 3, 0, -1, -1, -1, {}}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("width")));
  EXPECT_THAT(StructuringElement::Create(ElementSpec{ElementShape::kRect, 3, 3, 0, 3, -1, -1, {}}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("anchor_x")));
  EXPECT_THAT(StructuringElement::Create(
                  ElementSpec{ElementShape::kCustom, 2, 2, 0, -1, -1, -1, {0, 0, 0, 0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("mask")));
  EXPECT_THAT(StructuringElement::Create(
                  ElementSpec{ElementShape::kCustom, 2, 2, 0, -1, -1, -1, {1, 1, 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("mask")));
}

}  // namespace
}  // namespace cuimg
