// NaN through f32 morphology (issue 46): the CPU reference against a second, plainer statement of
// the rule: a pass takes the min/max of the numbers among a window's pixels inside the image, and
// gives NaN when there is none (every such pixel NaN, or none in the image). Interior NaN patches,
// patches at every border and corner, wholly NaN images, every op (compound ones included), 2D and
// 3D elements, iterations and chains.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cuimg/reference/morphology_reference.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// One pass by the rule above, member by member over the element's mask.
Image OraclePass(const Image& in, const StructuringElement& se, bool dilate) {
  const Extent& e = in.extent();
  Image out(PixelType::kF32, e, 1);
  for (std::int64_t z = 0; z < e.depth; ++z) {
    for (std::int64_t y = 0; y < e.height; ++y) {
      for (std::int64_t x = 0; x < e.width; ++x) {
        std::optional<float> best;
        for (int k = 0; k < se.depth(); ++k) {
          for (int j = 0; j < se.height(); ++j) {
            for (int i = 0; i < se.width(); ++i) {
              if (!se.Contains(i, j, k)) continue;
              const std::int64_t xx = x + i - se.anchor_x();
              const std::int64_t yy = y + j - se.anchor_y();
              const std::int64_t zz = z + k - se.anchor_z();
              if (xx < 0 || yy < 0 || zz < 0 || xx >= e.width || yy >= e.height || zz >= e.depth) {
                continue;  // outside never wins
              }
              const float v = in.As<float>()[(zz * e.height + yy) * e.width + xx];
              if (std::isnan(v)) continue;  // nor does NaN
              if (!best || (dilate ? v > *best : v < *best)) best = v;
            }
          }
        }
        out.As<float>()[(z * e.height + y) * e.width + x] = best.value_or(kNaN);
      }
    }
  }
  return out;
}

Image OracleRuns(Image in, const StructuringElement& se, std::vector<std::pair<bool, int>> runs) {
  for (const auto& [dilate, count] : runs) {
    for (int k = 0; k < count; ++k) in = OraclePass(in, se, dilate);
  }
  return in;
}

Image Minus(const Image& a, const Image& b) {
  Image out(PixelType::kF32, a.extent(), 1);
  for (std::int64_t i = 0; i < a.extent().Pixels(); ++i) {
    out.As<float>()[i] = a.As<float>()[i] - b.As<float>()[i];
  }
  return out;
}

Image OracleStep(const Image& in, const MorphologyStep& step) {
  const int n = step.iterations;
  const StructuringElement& se = step.element;
  switch (step.op) {
    case MorphOp::kErode:
      return OracleRuns(in, se, {{false, n}});
    case MorphOp::kDilate:
      return OracleRuns(in, se, {{true, n}});
    case MorphOp::kOpen:
      return OracleRuns(in, se, {{false, n}, {true, n}});
    case MorphOp::kClose:
      return OracleRuns(in, se, {{true, n}, {false, n}});
    case MorphOp::kGradient:
      return Minus(OracleRuns(in, se, {{true, n}}), OracleRuns(in, se, {{false, n}}));
    case MorphOp::kTopHat:
      return Minus(in, OracleRuns(in, se, {{false, n}, {true, n}}));
    case MorphOp::kBlackHat:
      break;
    default:
      ADD_FAILURE() << "the oracle covers OpenCV's seven operations only";
      return in;
  }
  return Minus(OracleRuns(in, se, {{true, n}, {false, n}}), in);
}

// Random finite values with NaN patches: a block inside, one over each corner (so every border
// has windows whose in-image pixels are all NaN), and scattered single NaNs.
Image NaNPatched(const Extent& e, std::uint64_t seed) {
  Image image = testing::RandomImage(PixelType::kF32, e, seed, 0, /*finite=*/true);
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  float* p = image.As<float>();
  auto fill = [&](std::int64_t x0, std::int64_t y0, std::int64_t w, std::int64_t h) {
    for (std::int64_t z = 0; z < e.depth; ++z) {
      for (std::int64_t y = std::max<std::int64_t>(0, y0); y < std::min(e.height, y0 + h); ++y) {
        for (std::int64_t x = std::max<std::int64_t>(0, x0); x < std::min(e.width, x0 + w); ++x) {
          p[(z * e.height + y) * e.width + x] = kNaN;
        }
      }
    }
  };
  fill(e.width / 3, e.height / 3, 7, 6);  // inside
  fill(0, 0, 5, 4);                       // top-left corner
  fill(e.width - 4, e.height - 5, 4, 5);  // bottom-right corner
  fill(e.width - 6, 0, 6, 3);             // top-right, along the top border
  fill(0, e.height - 3, 3, 3);            // bottom-left
  for (std::int64_t i = 0; i < e.Pixels(); ++i) {
    if (rng() % 23 == 0) p[i] = kNaN;
  }
  return image;
}

std::vector<StructuringElement> Elements(bool volume) {
  std::vector<ElementSpec> specs = {
      {ElementShape::kRect, 3, 3, 0, -1, -1, -1, {}},
      {ElementShape::kRect, 9, 2, 0, 0, 1, -1, {}},
      {ElementShape::kEllipse, 7, 5, 0, -1, -1, -1, {}},
      {ElementShape::kCross, 5, 5, 0, -1, -1, -1, {}},
      // Members only to the anchor's right: windows near the right border hold no image pixel.
      {ElementShape::kCustom, 4, 1, 0, 0, 0, -1, {0, 1, 0, 1}},
  };
  if (volume) {
    specs.push_back({ElementShape::kRect, 3, 3, 3, -1, -1, -1, {}});
    specs.push_back({ElementShape::kEllipse, 5, 5, 3, -1, -1, -1, {}});
  }
  std::vector<StructuringElement> out;
  for (const ElementSpec& spec : specs) {
    absl::StatusOr<StructuringElement> se = StructuringElement::Create(spec);
    EXPECT_TRUE(se.ok()) << se.status();
    if (se.ok()) out.push_back(*se);
  }
  return out;
}

void ExpectMatchesOracle(const Image& input, const std::vector<MorphologyStep>& steps,
                         const std::string& what) {
  // Arrange
  Image want = input;
  for (const MorphologyStep& step : steps) want = OracleStep(want, step);

  // Act
  absl::StatusOr<Image> got = MorphologyReference(input, steps, 2);

  // Assert
  ASSERT_TRUE(got.ok()) << got.status();
  const std::int64_t i = testing::FirstMismatch(*got, want);
  ASSERT_EQ(i, -1) << what << " " << testing::DescribeMismatch(*got, want, i);
}

const MorphOp kOps[] = {MorphOp::kErode,    MorphOp::kDilate, MorphOp::kOpen,    MorphOp::kClose,
                        MorphOp::kGradient, MorphOp::kTopHat, MorphOp::kBlackHat};

TEST(MorphologyNaN, EveryOpMatchesTheRuleOn2DImagesWithNaNPatches) {
  const Image input = NaNPatched(Extent{29, 23, 1}, 5);
  int n = 0;
  for (const StructuringElement& se : Elements(false)) {
    for (const MorphOp op : kOps) {
      for (const int iterations : {1, 2}) {
        ExpectMatchesOracle(input, {{op, se, iterations, BorderMode::kNeutral, 0}},
                            "2D case " + std::to_string(n++));
      }
    }
  }
}

TEST(MorphologyNaN, EveryOpMatchesTheRuleOnVolumesWithNaNPatches) {
  Image input = NaNPatched(Extent{17, 13, 6}, 9);
  // A whole slice of NaN at the volume's first face: 3D windows there see only NaN in the image.
  for (std::int64_t i = 0; i < input.extent().SlicePixels(); ++i) input.As<float>()[i] = kNaN;
  int n = 0;
  for (const StructuringElement& se : Elements(true)) {
    for (const MorphOp op : kOps) {
      ExpectMatchesOracle(input, {{op, se, 1, BorderMode::kNeutral, 0}},
                          "3D case " + std::to_string(n++));
    }
  }
}

TEST(MorphologyNaN, ChainsMatchTheRule) {
  const Image input = NaNPatched(Extent{31, 19, 1}, 13);
  const std::vector<StructuringElement> se = Elements(false);
  ExpectMatchesOracle(input,
                      {{MorphOp::kOpen, se[0], 1, BorderMode::kNeutral, 0},
                       {MorphOp::kGradient, se[2], 1, BorderMode::kNeutral, 0},
                       {MorphOp::kDilate, se[4], 2, BorderMode::kNeutral, 0}},
                      "chain");
}

TEST(MorphologyNaN, AllNaNWindowsAtTheBorderGiveNaNNotInfinity) {
  // Arrange: the case, a NaN mask reaching the image's edge.
  Image input(PixelType::kF32, Extent{6, 4, 1});
  for (std::int64_t i = 0; i < input.extent().Pixels(); ++i) input.As<float>()[i] = 1.0f;
  for (std::int64_t y = 0; y < 4; ++y) {
    input.As<float>()[y * 6 + 0] = kNaN;
    input.As<float>()[y * 6 + 1] = kNaN;
  }
  const StructuringElement se =
      *StructuringElement::Create({ElementShape::kRect, 3, 3, 0, -1, -1, -1, {}});
  for (const MorphOp op : {MorphOp::kErode, MorphOp::kDilate}) {
    // Act
    absl::StatusOr<Image> out = MorphologyReference(input, {{op, se, 1, BorderMode::kNeutral, 0}});

    // Assert: column 0's windows hold columns 0 and 1 only (all NaN); column 1's reach column 2.
    ASSERT_TRUE(out.ok()) << out.status();
    for (std::int64_t y = 0; y < 4; ++y) {
      EXPECT_TRUE(std::isnan(out->As<float>()[y * 6])) << "row " << y;
      EXPECT_EQ(out->As<float>()[y * 6 + 1], 1.0f) << "row " << y;
    }
  }
}

TEST(MorphologyNaN, InfinitiesAreNumbersThatWin) {
  // Arrange: +inf beside NaN at the border; the border must not hide it, nor NaN beat it.
  Image input(PixelType::kF32, Extent{3, 1, 1});
  input.As<float>()[0] = kNaN;
  input.As<float>()[1] = std::numeric_limits<float>::infinity();
  input.As<float>()[2] = -std::numeric_limits<float>::infinity();
  const StructuringElement se =
      *StructuringElement::Create({ElementShape::kRect, 3, 1, 0, -1, -1, -1, {}});

  // Act
  absl::StatusOr<Image> dilated =
      MorphologyReference(input, {{MorphOp::kDilate, se, 1, BorderMode::kNeutral, 0}});
  absl::StatusOr<Image> eroded =
      MorphologyReference(input, {{MorphOp::kErode, se, 1, BorderMode::kNeutral, 0}});

  // Assert
  ASSERT_TRUE(dilated.ok() && eroded.ok());
  for (int x = 0; x < 3; ++x) {
    EXPECT_EQ(dilated->As<float>()[x], std::numeric_limits<float>::infinity()) << x;
  }
  EXPECT_EQ(eroded->As<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(eroded->As<float>()[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(eroded->As<float>()[2], -std::numeric_limits<float>::infinity());
}

TEST(MorphologyNaN, IntegerBordersAreUnchanged) {
  // Arrange: u8 erosion at the border: the outside is 255, which never wins a min.
  Image input(PixelType::kU8, Extent{3, 1, 1});
  input.As<std::uint8_t>()[0] = 7;
  input.As<std::uint8_t>()[1] = 9;
  input.As<std::uint8_t>()[2] = 3;
  const StructuringElement se =
      *StructuringElement::Create({ElementShape::kCustom, 2, 1, 0, 0, 0, -1, {0, 1}});

  // Act: members only at +1, so x = 2's window is wholly outside.
  absl::StatusOr<Image> eroded =
      MorphologyReference(input, {{MorphOp::kErode, se, 1, BorderMode::kNeutral, 0}});
  absl::StatusOr<Image> dilated =
      MorphologyReference(input, {{MorphOp::kDilate, se, 1, BorderMode::kNeutral, 0}});

  // Assert
  ASSERT_TRUE(eroded.ok() && dilated.ok());
  EXPECT_EQ(eroded->As<std::uint8_t>()[0], 9);
  EXPECT_EQ(eroded->As<std::uint8_t>()[2], 255);
  EXPECT_EQ(dilated->As<std::uint8_t>()[2], 0);
}

}  // namespace
}  // namespace cuimg
