// The CPU reference equals OpenCV 4.6's erode/dilate/morphologyEx on random images, for every pixel
// type OpenCV supports (u8, u16, i16, f32), over shapes, sizes, anchors, iterations, ops, borders.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>
#include <random>

#include "cuimg/reference/morphology_reference.h"
#include "tests/testing/opencv_types.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

using ::cuimg::testing::CvDepth;

int CvOp(MorphOp op) {
  switch (op) {
    case MorphOp::kErode:
      return cv::MORPH_ERODE;
    case MorphOp::kDilate:
      return cv::MORPH_DILATE;
    case MorphOp::kOpen:
      return cv::MORPH_OPEN;
    case MorphOp::kClose:
      return cv::MORPH_CLOSE;
    case MorphOp::kGradient:
      return cv::MORPH_GRADIENT;
    case MorphOp::kTopHat:
      return cv::MORPH_TOPHAT;
    case MorphOp::kBlackHat:
    default:  // the segmentation steps have no morphologyEx counterpart; never asked for here
      break;
  }
  return cv::MORPH_BLACKHAT;
}

struct Case {
  PixelType type;
  int width, height;
  ElementSpec spec;
  MorphOp op;
  int iterations;
  BorderMode border;
  double border_value;
};

std::string Describe(const Case& c) {
  return "type=" + std::string(PixelTypeName(c.type)) + " image=" + std::to_string(c.width) + "x" +
         std::to_string(c.height) + " se=" + std::to_string(static_cast<int>(c.spec.shape)) + ":" +
         std::to_string(c.spec.width) + "x" + std::to_string(c.spec.height) +
         " anchor=" + std::to_string(c.spec.anchor_x) + "," + std::to_string(c.spec.anchor_y) +
         " op=" + std::to_string(CvOp(c.op)) + " it=" + std::to_string(c.iterations) + " border=" +
         (c.border == BorderMode::kNeutral ? "neutral" : std::to_string(c.border_value));
}

void ExpectMatchesOpenCV(const Case& c, std::uint64_t seed) {
  // Arrange. Finite inputs: OpenCV's float "neutral" border is +-FLT_MAX, ours NaN (see Assert).
  const Image input = testing::RandomImage(c.type, Extent{c.width, c.height, 1}, seed,
                                           seed % 3 == 0 ? 5 : 0, /*finite=*/true);
  auto se = StructuringElement::Create(c.spec);
  ASSERT_TRUE(se.ok()) << se.status();
  const int depth = CvDepth(c.type);
  cv::Mat src(c.height, c.width, CV_MAKETYPE(depth, 1), const_cast<std::uint8_t*>(input.bytes()));
  cv::Mat kernel(se->height(), se->width(), CV_8U, const_cast<std::uint8_t*>(se->mask().data()));
  const cv::Point anchor(se->anchor_x(), se->anchor_y());
  const cv::Scalar border_value = c.border == BorderMode::kNeutral
                                      ? cv::morphologyDefaultBorderValue()
                                      : cv::Scalar::all(c.border_value);
  cv::Mat expected;
  cv::morphologyEx(src, expected, CvOp(c.op), kernel, anchor, c.iterations, cv::BORDER_CONSTANT,
                   border_value);

  // Act
  MorphologyStep step;
  step.op = c.op;
  step.element = *se;
  step.iterations = c.iterations;
  step.border = c.border;
  step.border_value = c.border_value;
  absl::StatusOr<Image> got = MorphologyReference(input, {step}, 1);

  // Assert
  ASSERT_TRUE(got.ok()) << got.status();
  Image want(c.type, input.extent(), 1);
  std::memcpy(want.bytes(), expected.data, want.size_bytes());
  if (c.type == PixelType::kF32 && c.border == BorderMode::kNeutral) {
    // With finite inputs (|v| <= 1e3) a result of magnitude FLT_MAX or more can only come from
    // OpenCV's border value (windows lying entirely outside the image), whose counterpart here is
    // NaN. Erosions and dilations then give NaN; in a compound operation OpenCV's FLT_MAX is a
    // number that a later pass lets win, where NaN never does, so those pixels are left out.
    const bool one_direction = c.op == MorphOp::kErode || c.op == MorphOp::kDilate;
    for (std::int64_t k = 0; k < input.extent().Pixels(); ++k) {
      float& v = want.As<float>()[k];
      if (!(std::abs(v) >= std::numeric_limits<float>::max())) continue;
      if (one_direction) {
        v = std::numeric_limits<float>::quiet_NaN();
      } else {
        v = got->As<float>()[k];  // not compared
      }
    }
  }
  const std::int64_t i = testing::FirstMismatch(*got, want);
  ASSERT_EQ(i, -1) << Describe(c) << " seed=" << seed << " "
                   << testing::DescribeMismatch(*got, want, i);
}

TEST(MorphologyReference, MatchesOpenCVOnRandomCases) {
  std::mt19937 rng(20261121);
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32};
  const MorphOp ops[] = {MorphOp::kErode,    MorphOp::kDilate, MorphOp::kOpen,    MorphOp::kClose,
                         MorphOp::kGradient, MorphOp::kTopHat, MorphOp::kBlackHat};
  for (int n = 0; n < 600; ++n) {
    Case c;
    c.type = types[n % 4];
    c.op = ops[(n / 4) % 7];
    c.width = 1 + static_cast<int>(rng() % 70);
    c.height = 1 + static_cast<int>(rng() % 50);
    c.spec.shape = static_cast<ElementShape>(rng() % 4);
    c.spec.width = 1 + static_cast<int>(rng() % 13);
    c.spec.height = 1 + static_cast<int>(rng() % 13);
    c.spec.depth = 0;
    c.spec.anchor_x = rng() % 3 == 0 ? static_cast<int>(rng() % c.spec.width) : -1;
    c.spec.anchor_y = rng() % 3 == 0 ? static_cast<int>(rng() % c.spec.height) : -1;
    if (c.spec.shape == ElementShape::kCustom) {
      c.spec.mask.resize(c.spec.width * c.spec.height);
      for (auto& m : c.spec.mask) m = rng() % 3 == 0;
      c.spec.mask[rng() % c.spec.mask.size()] = 1;
    }
    c.iterations = 1 + static_cast<int>(rng() % 3);
    c.border = rng() % 3 == 0 ? BorderMode::kConstant : BorderMode::kNeutral;
    c.border_value = c.type == PixelType::kF32
                         ? std::uniform_real_distribution<double>(-500, 500)(rng)
                         : static_cast<double>(rng() % 70000) - 20000;
    if (c.type == PixelType::kF32) c.border_value = std::round(c.border_value);
    ExpectMatchesOpenCV(c, n);
  }
}

TEST(MorphologyReference, MatchesOpenCVWithLargeElements) {
  for (PixelType type : {PixelType::kU8, PixelType::kI16}) {
    for (int size : {31, 32, 63}) {
      for (ElementShape shape : {ElementShape::kRect, ElementShape::kEllipse}) {
        Case c{type,
               97,
               71,
               ElementSpec{shape, size, size - 8, 0, -1, -1, -1, {}},
               MorphOp::kDilate,
               1,
               BorderMode::kNeutral,
               0};
        ExpectMatchesOpenCV(c, static_cast<std::uint64_t>(size));
        c.op = MorphOp::kErode;
        ExpectMatchesOpenCV(c, static_cast<std::uint64_t>(size) + 1);
      }
    }
  }
}

TEST(MorphologyReference, ChainsApplyStepsInOrder) {
  const Image input = testing::RandomImage(PixelType::kU8, Extent{40, 30, 1}, 7);
  auto se =
      StructuringElement::Create(ElementSpec{ElementShape::kEllipse, 5, 5, 0, -1, -1, -1, {}});
  ASSERT_TRUE(se.ok());
  MorphologyStep erode{MorphOp::kErode, *se, 1, BorderMode::kNeutral, 0};
  MorphologyStep dilate{MorphOp::kDilate, *se, 1, BorderMode::kNeutral, 0};
  MorphologyStep open{MorphOp::kOpen, *se, 1, BorderMode::kNeutral, 0};
  auto chained = MorphologyReference(input, {erode, dilate});
  auto opened = MorphologyReference(input, {open});
  ASSERT_TRUE(chained.ok());
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(testing::FirstMismatch(*chained, *opened), -1);
}

// Into runs a chain in the caller's output with scratch buffers between passes: for chains of
// 1 to 4 steps of every op and 1 to 3 iterations, the result is each step's (checked against
// OpenCV above) applied in turn, and the input is left as it was.
TEST(MorphologyReference, IntoEqualsTheStepsOneByOneAndKeepsTheInput) {
  std::mt19937 rng(34);
  const MorphOp ops[] = {MorphOp::kErode,    MorphOp::kDilate, MorphOp::kOpen,    MorphOp::kClose,
                         MorphOp::kGradient, MorphOp::kTopHat, MorphOp::kBlackHat};
  for (int n = 0; n < 200; ++n) {
    const PixelType type = n % 2 == 0 ? PixelType::kU8 : PixelType::kF32;
    const Image input = testing::RandomImage(type, Extent{23, 17, 1 + n % 3}, n);
    const Image kept = input;
    std::vector<MorphologyStep> steps;
    for (int k = 0, count = 1 + n % 4; k < count; ++k) {
      auto se = StructuringElement::Create(ElementSpec{static_cast<ElementShape>(rng() % 3),
                                                       1 + static_cast<int>(rng() % 5),
                                                       1 + static_cast<int>(rng() % 5),
                                                       static_cast<int>(rng() % 3),
                                                       -1,
                                                       -1,
                                                       -1,
                                                       {}});
      ASSERT_TRUE(se.ok()) << se.status();
      steps.push_back(
          {ops[rng() % 7], *se, 1 + static_cast<int>(rng() % 3), BorderMode::kNeutral, 0});
    }
    Image want = input;
    for (const MorphologyStep& step : steps) {
      absl::StatusOr<Image> one = MorphologyReference(want, {step}, 1);
      ASSERT_TRUE(one.ok()) << one.status();
      want = *std::move(one);
    }
    Image got(type, input.extent(), 1);
    ASSERT_TRUE(MorphologyReferenceInto(input.view(), got.view(), steps, 1).ok());
    EXPECT_EQ(testing::FirstMismatch(got, want), -1) << "case " << n;
    EXPECT_EQ(testing::FirstMismatch(input, kept), -1) << "case " << n;
  }
}

// What the server's admission counts for the CPU backend's buffers between passes.
TEST(MorphologyReference, ScratchImagesAreWhatAChainNeeds) {
  auto se = StructuringElement::Create(ElementSpec{ElementShape::kRect, 3, 3, 0, -1, -1, -1, {}});
  ASSERT_TRUE(se.ok());
  auto step = [&](MorphOp op, int iterations) {
    return MorphologyStep{op, *se, iterations, BorderMode::kNeutral, 0};
  };
  EXPECT_EQ(MorphologyReferenceScratchImages({step(MorphOp::kDilate, 1)}), 0);
  EXPECT_EQ(MorphologyReferenceScratchImages({step(MorphOp::kDilate, 2)}), 1);
  EXPECT_EQ(MorphologyReferenceScratchImages({step(MorphOp::kOpen, 1)}), 1);
  EXPECT_EQ(MorphologyReferenceScratchImages({step(MorphOp::kErode, 1), step(MorphOp::kDilate, 1)}),
            1);
  EXPECT_EQ(MorphologyReferenceScratchImages({step(MorphOp::kGradient, 1)}), 1);
  EXPECT_EQ(MorphologyReferenceScratchImages({step(MorphOp::kGradient, 2)}), 2);
  EXPECT_EQ(
      MorphologyReferenceScratchImages({step(MorphOp::kDilate, 1), step(MorphOp::kGradient, 2)}),
      3);
}

TEST(MorphologyReference, NaNNeverWinsAgainstNumbers) {
  Image input(PixelType::kF32, Extent{3, 1, 1});
  input.As<float>()[0] = 1.0f;
  input.As<float>()[1] = std::nanf("");
  input.As<float>()[2] = 5.0f;
  auto se = StructuringElement::Create(ElementSpec{ElementShape::kRect, 3, 1, 0, -1, -1, -1, {}});
  ASSERT_TRUE(se.ok());
  auto eroded = MorphologyReference(input, {{MorphOp::kErode, *se, 1, BorderMode::kNeutral, 0}});
  ASSERT_TRUE(eroded.ok());
  EXPECT_EQ(eroded->As<float>()[0], 1.0f);
  EXPECT_EQ(eroded->As<float>()[1], 1.0f);
  EXPECT_EQ(eroded->As<float>()[2], 5.0f);
  // A window of only NaN (no border pixel) stays NaN.
  Image all_nan(PixelType::kF32, Extent{3, 1, 1});
  for (int i = 0; i < 3; ++i) all_nan.As<float>()[i] = std::nanf("");
  auto se1 = StructuringElement::Create(ElementSpec{ElementShape::kRect, 1, 1, 0, -1, -1, -1, {}});
  auto out = MorphologyReference(all_nan, {{MorphOp::kDilate, *se1, 1, BorderMode::kNeutral, 0}});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(std::isnan(out->As<float>()[1]));
}

}  // namespace
}  // namespace cuimg
