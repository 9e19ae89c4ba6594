// The HOG reference stage by stage on synthetic images (research/detect_deform.md §c checks 3-5,
// 7, 8 and 10): votes of flat images, step edges and ramps; block weights; L2-Hys normalization;
// the level list of detectMultiScale; grouping without a threshold; inputs smaller than a window,
// odd sizes, and gray, BGR and BGRA giving the same result for the same content.
#include "cuimg/reference/hog_reference.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "cuimg/kernels/detect_geometry.h"
#include "cuimg/kernels/group_rectangles.h"
#include "cuimg/kernels/hog_block_votes.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

Image Gray(int w, int h, const std::function<int(int, int)>& f) {
  Image image(PixelType::kU8, Extent{w, h, 1}, 1);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) image.bytes()[y * w + x] = static_cast<std::uint8_t>(f(x, y));
  }
  return image;
}

// The same pixels in `channels` identical channels (BGRA's alpha set to a pattern of its own).
Image Replicate(const Image& gray, int channels) {
  const Extent e = gray.extent();
  Image out(PixelType::kU8, e, channels);
  for (std::int64_t i = 0; i < e.Pixels(); ++i) {
    for (int c = 0; c < channels; ++c) {
      out.bytes()[i * channels + c] = c == 3 ? static_cast<std::uint8_t>(i * 37) : gray.bytes()[i];
    }
  }
  return out;
}

HogModel RandomModel(int w, int h, std::uint64_t seed) {
  HogModel m;
  m.name = "random";
  m.window_width = w;
  m.window_height = h;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0, 0.05f);
  m.weights.resize(m.DescriptorSize());
  for (float& v : m.weights) v = d(rng);
  m.bias = -0.5f;
  return m;
}

HogVotes Votes(absl::StatusOr<HogVotes> v) {
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *std::move(v) : HogVotes{};
}

TEST(HogReference, DescriptorSizesFollowTheWindow) {
  EXPECT_EQ(RandomModel(64, 128, 1).DescriptorSize(), 3780);
  EXPECT_EQ(RandomModel(48, 96, 1).DescriptorSize(), 1980);
}

TEST(HogReference, FlatImageVotesNothingAndNormalizesToZero) {
  const Image flat = Gray(40, 40, [](int, int) { return 77; });
  const HogVotes v = Votes(ComputeHogVotes(flat.view(), 8, true));
  for (std::size_t i = 0; i < v.w0.size(); ++i) {
    ASSERT_EQ(v.w0[i], 0.f);
    ASSERT_EQ(v.w1[i], 0.f);
  }
  absl::StatusOr<HogBlocks> b = ComputeHogBlocks(v, 6, 6);
  ASSERT_TRUE(b.ok());
  for (float x : b->values) ASSERT_EQ(x, 0.f);  // finite: the epsilons keep 0 / 0 away
}

TEST(HogReference, VerticalEdgeSplitsBetweenBinsEightAndZero) {
  // dy = 0, dx > 0: angle 0, a = -0.5: half to bin 8, half to bin 0.
  const Image edge = Gray(20, 20, [](int x, int) { return x < 10 ? 10 : 110; });
  const HogVotes v = Votes(ComputeHogVotes(edge.view(), 0, false));
  const std::size_t at = 5 * v.width + 9;  // x = 9: dx = 110 - 10 = 100
  EXPECT_EQ(v.bin[at], 8);
  EXPECT_FLOAT_EQ(v.w0[at], 50.f);
  EXPECT_FLOAT_EQ(v.w1[at], 50.f);
  // dx < 0 (a falling edge): angle 180, a = 8.5, the same two bins.
  const Image falling = Gray(20, 20, [](int x, int) { return x < 10 ? 110 : 10; });
  const HogVotes f = Votes(ComputeHogVotes(falling.view(), 0, false));
  EXPECT_EQ(f.bin[at], 8);
  EXPECT_FLOAT_EQ(f.w0[at], 50.f);
  EXPECT_FLOAT_EQ(f.w1[at], 50.f);
}

TEST(HogReference, HorizontalEdgeVotesOnlyBinFour) {
  // dx = 0: angle 90, a = 4.0 exactly.
  const Image edge = Gray(20, 20, [](int, int y) { return y < 10 ? 0 : 60; });
  const HogVotes v = Votes(ComputeHogVotes(edge.view(), 0, false));
  const std::size_t at = 9 * v.width + 7;
  EXPECT_EQ(v.bin[at], 4);
  EXPECT_FLOAT_EQ(v.w0[at], 60.f);
  EXPECT_EQ(v.w1[at], 0.f);
}

TEST(HogReference, DiagonalRampSplitsAQuarterAndThreeQuarters) {
  // dx = dy: 45 degrees, a = 1.75: 0.25 to bin 1, 0.75 to bin 2 (OpenCV's polynomial atan is
  // 44.990 degrees there, so within 1e-3).
  const Image ramp = Gray(30, 30, [](int x, int y) { return 3 * (x + y); });
  const HogVotes v = Votes(ComputeHogVotes(ramp.view(), 0, false));
  const std::size_t at = 12 * v.width + 12;
  const float mag = std::sqrt(2.f) * 6.f;
  EXPECT_EQ(v.bin[at], 1);
  EXPECT_NEAR(v.w0[at] / mag, 0.25, 1e-3);
  EXPECT_NEAR(v.w1[at] / mag, 0.75, 1e-3);
}

TEST(HogReference, GammaTakesTheSquareRootOfIntensities) {
  const Image edge = Gray(20, 20, [](int x, int) { return x < 10 ? 4 : 100; });
  const HogVotes v = Votes(ComputeHogVotes(edge.view(), 0, true));
  const std::size_t at = 5 * v.width + 9;
  EXPECT_FLOAT_EQ(v.w0[at] + v.w1[at], 10.f - 2.f);
}

TEST(HogReference, BlockWeightsAreGaussianTimesBilinear) {
  const auto& votes = HogBlockVotes();
  float centre = 0, corner = 0;
  for (const HogPixelVote& v : votes) {
    const float gauss =
        std::exp(-((v.row - 8.f) * (v.row - 8.f) + (v.col - 8.f) * (v.col - 8.f)) / 32.f);
    const float sum = std::accumulate(v.weight.begin(), v.weight.begin() + v.cells, 0.f);
    // Pixels inside the cells' centres (4..11 on both axes) share all of their vote.
    if (v.row >= 4 && v.row < 12 && v.col >= 4 && v.col < 12) {
      EXPECT_NEAR(sum / gauss, 1.f, 1e-6) << v.row << "," << v.col;
      EXPECT_EQ(v.cells, 4);
    }
    if (v.row == 8 && v.col == 8) centre = gauss;
    if (v.row == 0 && v.col == 0) corner = gauss;
  }
  EXPECT_FLOAT_EQ(centre, 1.f);
  EXPECT_NEAR(corner, std::exp(-128.f / 32.f), 1e-7);  // 0.0183: OpenCV's i - 8, not i + 0.5 - 8
}

TEST(HogReference, BlocksAreL2HysNormalized) {
  std::mt19937 rng(5);
  const Image noise = Gray(64, 64, [&](int, int) { return static_cast<int>(rng() % 256); });
  const HogVotes v = Votes(ComputeHogVotes(noise.view(), 0, true));
  absl::StatusOr<HogBlocks> b = ComputeHogBlocks(v, 7, 7);
  ASSERT_TRUE(b.ok());
  for (int i = 0; i < 49; ++i) {
    const float* h = b->values.data() + i * kHogBlockFeatures;
    double norm = 0;
    for (int k = 0; k < kHogBlockFeatures; ++k) {
      EXPECT_GE(h[k], 0.f);
      norm += double{h[k]} * h[k];
    }
    EXPECT_LE(std::sqrt(norm), 1.0);
    EXPECT_GT(std::sqrt(norm), 0.9);
  }
  // OpenCV's +3.6 epsilon decides what gets clipped: a strong edge's largest votes reach 0.2 and
  // are flattened, a faint edge's stay below it and keep their proportions.
  auto block_of = [](int contrast) {
    const Image edge =
        Gray(16, 16, [contrast](int x, int) { return x < 5 ? 100 : 100 + contrast; });
    absl::StatusOr<HogBlocks> b =
        ComputeHogBlocks(Votes(ComputeHogVotes(edge.view(), 0, false)), 1, 1);
    EXPECT_TRUE(b.ok());
    std::vector<float> nonzero;
    for (float x : b->values) {
      if (x > 0) nonzero.push_back(x);
    }
    return nonzero;
  };
  const std::vector<float> strong = block_of(150);
  const std::vector<float> faint = block_of(1);
  ASSERT_EQ(strong.size(), faint.size());
  ASSERT_FALSE(strong.empty());
  const auto [smin, smax] = std::minmax_element(strong.begin(), strong.end());
  const auto [fmin, fmax] = std::minmax_element(faint.begin(), faint.end());
  EXPECT_LT(*smax / *smin, 0.8 * (*fmax / *fmin)) << *smax / *smin << " vs " << *fmax / *fmin;
}

TEST(HogReference, LevelListFollowsDetectMultiScale) {
  absl::StatusOr<DetectGeometry> hd = PlanDetection(Extent{1920, 1080, 1}, 64, 128, DetectSpec{});
  ASSERT_TRUE(hd.ok());
  EXPECT_EQ(hd->levels.size(), 44u);
  absl::StatusOr<DetectGeometry> vga = PlanDetection(Extent{640, 480, 1}, 64, 128, DetectSpec{});
  ASSERT_TRUE(vga.ok());
  EXPECT_EQ(vga->levels.size(), 28u);
  double scale = 1.0;
  for (const DetectLevel& l : hd->levels) {
    EXPECT_EQ(l.scale, scale);
    EXPECT_EQ(l.width, static_cast<int>(std::nearbyint(1920 / scale)));
    EXPECT_EQ(l.height, static_cast<int>(std::nearbyint(1080 / scale)));
    EXPECT_GE(l.height, 128);
    EXPECT_EQ(l.windows_x, (l.width - 64) / 8 + 1);
    EXPECT_EQ(l.blocks_x, l.windows_x + 6);
    EXPECT_EQ(l.blocks_y, l.windows_y + 14);
    scale *= 1.05;
  }
  DetectSpec few;
  few.max_levels = 3;
  EXPECT_EQ(PlanDetection(Extent{1920, 1080, 1}, 64, 128, few)->levels.size(), 3u);
  DetectSpec padded;
  padded.padding = 13;  // rounded up to 16
  padded.win_stride = 16;
  absl::StatusOr<DetectGeometry> p = PlanDetection(Extent{100, 150, 1}, 64, 128, padded);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->padding, 16);
  EXPECT_EQ(p->levels[0].windows_x, (100 + 32 - 64) / 16 + 1);
}

TEST(HogReference, RejectsBadSpecsNamingTheField) {
  DetectSpec s;
  s.win_stride = 12;
  EXPECT_THAT(ValidateDetectSpec(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("win_stride")));
  s = DetectSpec{};
  s.scale = 1.0;
  EXPECT_THAT(ValidateDetectSpec(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("scale")));
  s = DetectSpec{};
  s.group_eps = 0;
  EXPECT_THAT(ValidateDetectSpec(s),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("group_eps")));
  HogModel m = RandomModel(64, 128, 2);
  m.weights.pop_back();
  EXPECT_THAT(ValidateHogModel(m),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("weights")));
  m = RandomModel(64, 128, 2);
  m.window_width = 60;
  EXPECT_THAT(ValidateHogModel(m),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("window_width")));
}

TEST(HogReference, ImagesSmallerThanAWindowHaveNoWindowsAndNoError) {
  const HogModel model = RandomModel(64, 128, 3);
  for (const Extent e :
       {Extent{1, 1, 1}, Extent{63, 200, 1}, Extent{200, 127, 1}, Extent{50, 100, 1}}) {
    const Image image = Gray(static_cast<int>(e.width), static_cast<int>(e.height),
                             [](int x, int y) { return (x * 7 + y * 3) % 256; });
    absl::StatusOr<DetectResult> r = DetectReference(image.view(), model, DetectSpec{});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->geometry.levels.empty());
    EXPECT_EQ(r->geometry.windows, 0);
    EXPECT_TRUE(r->hits.empty());
  }
  // Padding can give a small image windows, as in OpenCV.
  DetectSpec padded;
  padded.padding = 40;
  const Image small = Gray(50, 100, [](int x, int) { return x * 5; });
  absl::StatusOr<DetectResult> r = DetectReference(small.view(), model, padded);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->geometry.levels.size(), 1u);
  EXPECT_GT(r->geometry.windows, 0);
}

TEST(HogReference, GrayBgrAndBgraOfTheSameContentAgreeOnOddSizes) {
  std::mt19937 rng(9);
  // Smooth blobs plus noise, so that windows score across the threshold.
  const Image gray = Gray(211, 277, [&](int x, int y) {
    return static_cast<int>(128 + 100 * std::sin(x * 0.11) * std::cos(y * 0.07)) +
           static_cast<int>(rng() % 20) - 10;
  });
  const HogModel model = RandomModel(64, 128, 4);
  DetectSpec spec;
  spec.hit_threshold = -0.5;
  absl::StatusOr<DetectResult> want = DetectReference(gray.view(), model, spec);
  ASSERT_TRUE(want.ok());
  ASSERT_FALSE(want->hits.empty());
  for (int channels : {3, 4}) {
    const Image colour = Replicate(gray, channels);
    absl::StatusOr<DetectResult> got = DetectReference(colour.view(), model, spec, 1);
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->hits.size(), want->hits.size()) << channels;
    for (std::size_t i = 0; i < got->hits.size(); ++i) {
      EXPECT_EQ(got->hits[i].score, want->hits[i].score);
      EXPECT_EQ(got->hits[i].window_x, want->hits[i].window_x);
    }
  }
}

TEST(HogReference, RejectsInputsThatAreNotEightBitWithOneThreeOrFourChannels) {
  const HogModel model = RandomModel(64, 128, 5);
  Image two(PixelType::kU8, Extent{80, 140, 1}, 2);
  EXPECT_THAT(DetectReference(two.view(), model, DetectSpec{}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("channels")));
  Image wide(PixelType::kU16, Extent{80, 140, 1}, 1);
  EXPECT_THAT(DetectReference(wide.view(), model, DetectSpec{}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("U8")));
}

TEST(HogReference, GroupingThresholdZeroReturnsRawHitsClipped) {
  DetectGeometry g;
  g.image = Extent{100, 200, 1};
  g.window_width = 64;
  g.window_height = 128;
  g.win_stride = 8;
  g.padding = 16;
  DetectLevel level;
  level.scale = 1.0;
  g.levels = {level};
  const std::vector<WindowHit> hits = {{0, 0, 0, 1.5}, {0, 1, 0, 2.5}, {0, 6, 6, 0.5}};
  DetectSpec raw;
  raw.group_threshold = 0;
  const std::vector<Detection> d = FinishDetections(g, hits, raw);
  ASSERT_EQ(d.size(), 3u);
  // Descending score; the first window started at (-16, -16): clipped to the image.
  EXPECT_EQ(d[0].score, 2.5);
  EXPECT_EQ(d[1].x, 0);
  EXPECT_EQ(d[1].y, 0);
  EXPECT_EQ(d[1].width, 48);
  EXPECT_EQ(d[1].height, 112);
  // Window (6, 6) starts at (32, 32) and ends at (96, 160): inside.
  EXPECT_EQ(d[2].x, 32);
  EXPECT_EQ(d[2].width, 64);
  DetectSpec none;
  none.grouping = DetectGrouping::kNone;
  EXPECT_EQ(FinishDetections(g, hits, none).size(), 3u);
  // With the default threshold 2, three scattered hits make no cluster of 3.
  EXPECT_TRUE(FinishDetections(g, hits, DetectSpec{}).empty());
}

}  // namespace
}  // namespace cuimg
