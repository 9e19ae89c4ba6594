// The detection kernels' own code (hog_strip.h, through DetectPlan::EmulateOnHost) against the CPU
// reference, without a GPU: every window's score within 1e-4 on odd sizes, 1, 3 and 4 channels,
// gamma on and off, padding, strides, scales and windows, with the workspace poisoned (NaN) so
// any feature the blocks kernel does not write shows; 3-channel sampling from words and from
// bytes bit for bit the same; the hit buffer and its count; plan
// geometry and launch counts; and, on the kernels' own features, scores and hits that are the
// reference's arithmetic bit for bit. detect_gpu_test repeats the comparisons on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/hog_model_file.h"
#include "cuimg/reference/hog_reference.h"
#include "tests/testing/hog_testing.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using testing::RandomModel;
using testing::Synthetic;

// Every window's score (threshold far below) from the emulated kernels and from the reference.
void ExpectEmulationMatchesReference(const Image& image, const HogModel& model, DetectSpec spec,
                                     const std::string& what) {
  spec.hit_threshold = -1e9;
  absl::StatusOr<DetectResult> want = DetectReference(image.view(), model, spec, 2);
  ASSERT_TRUE(want.ok()) << want.status() << " " << what;
  absl::StatusOr<DetectPlan> plan =
      DetectPlan::Create(image.extent(), image.channels(), model, spec);
  ASSERT_TRUE(plan.ok()) << plan.status() << " " << what;
  std::vector<float> workspace(plan->WorkspaceBytes() / sizeof(float),
                               std::numeric_limits<float>::quiet_NaN());
  std::vector<std::uint8_t> hits(plan->HitsBytes(), 0x7F);
  ASSERT_TRUE(
      plan->EmulateOnHost({image.bytes()}, model.weights.data(), workspace.data(), hits.data())
          .ok());
  const std::uint32_t count = DetectPlan::HitCount(hits.data());
  ASSERT_EQ(count, want->geometry.windows) << what;
  const std::vector<WindowHit> got = DetectPlan::DecodeHits(hits.data(), count);
  ASSERT_EQ(got.size(), want->hits.size()) << what;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].level == want->hits[i].level && got[i].window_x == want->hits[i].window_x &&
                got[i].window_y == want->hits[i].window_y)
        << what << " hit " << i;
    ASSERT_TRUE(std::isfinite(got[i].score))
        << what << " level " << got[i].level << " window " << got[i].window_x << ","
        << got[i].window_y << ": read a feature nobody wrote";
    worst = std::max(worst, std::abs(got[i].score - want->hits[i].score));
  }
  EXPECT_LE(worst, 1e-4) << what;
}

// The emulated kernels' hits against the reference's ScoreWindow and threshold test applied to
// the kernels' own features: the same windows, each score the reference's double as a float.
void ExpectScoresFollowTheReference(const Image& image, const HogModel& model,
                                    const DetectSpec& spec, const std::string& what) {
  absl::StatusOr<DetectPlan> plan =
      DetectPlan::Create(image.extent(), image.channels(), model, spec);
  ASSERT_TRUE(plan.ok()) << plan.status() << " " << what;
  std::vector<float> workspace(plan->WorkspaceBytes() / sizeof(float));
  std::vector<std::uint8_t> hits(plan->HitsBytes(), 0x7F);
  ASSERT_TRUE(
      plan->EmulateOnHost({image.bytes()}, model.weights.data(), workspace.data(), hits.data())
          .ok());
  const std::vector<WindowHit> want =
      testing::ReferenceHitsOnWorkspace(*plan, workspace.data(), model, spec);
  const std::vector<WindowHit> got =
      DetectPlan::DecodeHits(hits.data(), DetectPlan::HitCount(hits.data()));
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_FALSE(got.empty()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].level == want[i].level && got[i].window_x == want[i].window_x &&
                got[i].window_y == want[i].window_y)
        << what << " hit " << i;
    ASSERT_EQ(got[i].score, static_cast<double>(static_cast<float>(want[i].score)))
        << what << " level " << got[i].level << " window " << got[i].window_x << ","
        << got[i].window_y;
  }
}

std::string Name(const Image& image, const HogModel& model, const DetectSpec& spec) {
  return absl::StrCat(image.extent().width, "x", image.extent().height, "x", image.channels(),
                      " window ", model.window_width, "x", model.window_height, " gamma ",
                      spec.gamma_correction, " pad ", spec.padding, " stride ", spec.win_stride,
                      " scale ", spec.scale);
}

TEST(HogDetectEmulation, KernelsScoreEveryWindowAsTheReference) {
  const HogModel people = RandomModel(64, 128, 1);
  const HogModel small = RandomModel(40, 72, 2);
  DetectSpec padded;
  padded.padding = 24;  // rounded up to 32
  padded.win_stride = 16;
  padded.scale = 1.3;
  DetectSpec no_gamma;
  no_gamma.gamma_correction = false;
  no_gamma.scale = 1.6;
  DetectSpec coarse;
  coarse.scale = 2.5;
  coarse.padding = 8;
  coarse.win_stride = 24;
  std::uint64_t seed = 10;
  // Sizes: exactly a window, one more, odd ones, and one spanning several tiles both ways.
  for (const Extent e :
       {Extent{64, 128, 1}, Extent{65, 129, 1}, Extent{97, 201, 1}, Extent{171, 263, 1}}) {
    for (int channels : {1, 3, 4}) {
      const Image image =
          Synthetic(static_cast<int>(e.width), static_cast<int>(e.height), channels, ++seed);
      for (const DetectSpec& spec : {padded, no_gamma, coarse}) {
        ExpectEmulationMatchesReference(image, people, spec, Name(image, people, spec));
      }
      ExpectEmulationMatchesReference(image, small, padded, Name(image, small, padded));
    }
  }
}

TEST(HogDetectEmulation, ScoresAreTheReferenceArithmeticOnTheKernelsFeatures) {
  const Image image = Synthetic(300, 260, 3, 21);
  DetectSpec all;
  all.hit_threshold = -1e9;
  DetectSpec some;  // about half the windows: the hit test is the reference's too
  some.hit_threshold = 0.3;
  DetectSpec stride;
  stride.hit_threshold = 0.3;
  stride.win_stride = 16;
  stride.padding = 16;
  stride.scale = 1.2;
  const HogModel people = RandomModel(64, 128, 22);
  const HogModel odd = RandomModel(40, 72, 23);
  const HogModel wide = RandomModel(96, 48, 24);  // 11 block columns: two rounds of warps
  // 465 blocks, more than the kernel's parameters take: every weight from global memory.
  const HogModel tall = RandomModel(128, 256, 25);
  for (const DetectSpec& spec : {all, some, stride}) {
    ExpectScoresFollowTheReference(image, people, spec, Name(image, people, spec));
    ExpectScoresFollowTheReference(image, odd, spec, Name(image, odd, spec));
    ExpectScoresFollowTheReference(image, wide, spec, Name(image, wide, spec));
  }
  ExpectScoresFollowTheReference(image, tall, all, Name(image, tall, all));
}

// The filter (hog_filter.h) with the people model: at each threshold the hits are the
// reference's on the kernels' features (no window the filter dropped scores above it), and the
// filter lists the hits and few windows besides: it is a filter, not a pass-through.
TEST(HogDetectEmulation, FilterListsFewWindowsAndDropsNoHit) {
  absl::StatusOr<HogModel> people = ReadHogModelFile(std::string(CUIMG_SOURCE_MODELS_DIR) +
                                                     "/opencv_people_64x128" + kHogModelExtension);
  ASSERT_TRUE(people.ok()) << people.status();
  const Image image = Synthetic(420, 330, 3, 31);
  for (const double threshold : {-4.0, -3.0, -2.5, -2.0}) {
    DetectSpec spec;
    spec.hit_threshold = threshold;
    absl::StatusOr<DetectPlan> plan = DetectPlan::Create(image.extent(), 3, *people, spec);
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::vector<float> workspace(plan->WorkspaceBytes() / sizeof(float));
    std::vector<std::uint8_t> hits(plan->HitsBytes(), 0x7F);
    ASSERT_TRUE(
        plan->EmulateOnHost({image.bytes()}, people->weights.data(), workspace.data(), hits.data())
            .ok());
    const std::vector<WindowHit> want =
        testing::ReferenceHitsOnWorkspace(*plan, workspace.data(), *people, spec);
    const std::vector<WindowHit> got =
        DetectPlan::DecodeHits(hits.data(), DetectPlan::HitCount(hits.data()));
    ASSERT_EQ(got.size(), want.size()) << threshold;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(got[i].level == want[i].level && got[i].window_x == want[i].window_x &&
                  got[i].window_y == want[i].window_y &&
                  got[i].score == static_cast<float>(want[i].score))
          << threshold << " hit " << i;
    }
    const std::uint32_t candidates = plan->FilterCandidates(workspace.data());
    const auto windows = static_cast<double>(plan->geometry().windows);
    EXPECT_GE(candidates, got.size()) << threshold;
    // This image's scores crowd around -3 (most windows lie within the margin of -3 or -4);
    // at -2 only a few windows come near.
    if (threshold == -2.0) {
      EXPECT_LE(candidates, 0.05 * windows) << got.size() << " hits";
    }
    std::printf("threshold %.1f: %zu hits, %u candidates of %.0f windows\n", threshold, got.size(),
                candidates, windows);
  }
}

// Thresholds past float's range: the filter lists every window (-1e300: all are hits) or none
// (1e300: no hits), as the exact test decides.
TEST(HogDetectEmulation, FilterTakesThresholdsPastFloatRange) {
  const HogModel model = RandomModel(64, 128, 41);
  const Image image = Synthetic(96, 160, 3, 42);
  for (const double threshold : {-1e300, 1e300}) {
    DetectSpec spec;
    spec.hit_threshold = threshold;
    absl::StatusOr<DetectPlan> plan = DetectPlan::Create(image.extent(), 3, model, spec);
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::vector<float> workspace(plan->WorkspaceBytes() / sizeof(float));
    std::vector<std::uint8_t> hits(plan->HitsBytes(), 0x7F);
    ASSERT_TRUE(
        plan->EmulateOnHost({image.bytes()}, model.weights.data(), workspace.data(), hits.data())
            .ok());
    const std::uint32_t want = threshold < 0 ? plan->geometry().windows : 0;
    EXPECT_EQ(DetectPlan::HitCount(hits.data()), want) << threshold;
    EXPECT_EQ(plan->FilterCandidates(workspace.data()), want) << threshold;
  }
}

TEST(HogDetectEmulation, DefaultSpecOnAWiderImage) {
  const Image image = Synthetic(300, 260, 3, 99);
  ExpectEmulationMatchesReference(image, RandomModel(64, 128, 3), DetectSpec{}, "300x260x3");
}

// All 44 levels of a 1080p frame: the first levels' strips are more than 16 block rows high (up
// to 32: StripRowsOf sizes them by the resident CUDA blocks, 132 x 6 without a device), the last
// ones' 3, and every block still equals the reference's.
TEST(HogDetectEmulation, TallAndShortStripsOfA1080pFrame) {
  const Image image = Synthetic(1920, 1080, 1, 12);
  const HogModel model = RandomModel(64, 128, 13);
  absl::StatusOr<DetectPlan> plan = DetectPlan::Create(image.extent(), 1, model, DetectSpec{});
  ASSERT_TRUE(plan.ok());
  const std::string described = plan->Describe();
  const std::size_t at = described.find("strips of 14x");
  ASSERT_NE(at, std::string::npos) << described;
  const int tallest = std::atoi(described.c_str() + at + std::strlen("strips of 14x"));
  EXPECT_GT(tallest, 16) << described;
  EXPECT_LE(tallest, 32) << described;
  EXPECT_THAT(described, ::testing::HasSubstr("..3 blocks"));
  ExpectEmulationMatchesReference(image, model, DetectSpec{}, "1920x1080x1");
}

// Issue 50: 3-channel inputs whose rows are whole 32-bit words are sampled from words
// (hog_words.h), others byte by byte. The same frames at an aligned and at an odd address take
// the two paths: features and hits bit for bit the same, at every level (downscaled, with taps
// clamped at the right and bottom edges, where the word path reads fewer words).
TEST(HogDetectEmulation, WordAndByteSamplingAgree) {
  const HogModel model = RandomModel(64, 128, 21);
  DetectSpec spec;
  spec.hit_threshold = -1e9;
  spec.padding = 16;
  spec.scale = 1.07;
  for (const int width : {300, 404}) {
    std::vector<Image> frames;
    for (int i = 0; i < 2; ++i) frames.push_back(Synthetic(width, 260, 3, 30 + i));
    absl::StatusOr<DetectPlan> plan = DetectPlan::Create(frames[0].extent(), 3, model, spec, 2);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const std::size_t bytes = frames[0].size_bytes();
    // Word-aligned copies, and the same bytes one past an aligned address.
    std::vector<std::uint32_t> aligned((bytes + 3) / 4 * 2 + 2);
    std::vector<const void*> words;
    std::vector<const void*> odd;
    std::vector<std::uint8_t> shifted(2 * bytes + 8);
    for (int f = 0; f < 2; ++f) {
      auto* a = reinterpret_cast<std::uint8_t*>(aligned.data() + f * ((bytes + 3) / 4));
      std::memcpy(a, frames[f].bytes(), bytes);
      words.push_back(a);
      std::uint8_t* o = shifted.data() + f * (bytes + 4) + 1;
      std::memcpy(o, frames[f].bytes(), bytes);
      odd.push_back(o);
    }
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(odd[0]) % 4 == 0, false);
    std::vector<float> ws_words(plan->WorkspaceBytes() / sizeof(float), 0.f);
    std::vector<float> ws_bytes(ws_words.size(), 0.f);
    std::vector<std::uint8_t> hits_words(plan->HitsBytes());
    std::vector<std::uint8_t> hits_bytes(plan->HitsBytes());
    ASSERT_TRUE(
        plan->EmulateOnHost(words, model.weights.data(), ws_words.data(), hits_words.data()).ok());
    ASSERT_TRUE(
        plan->EmulateOnHost(odd, model.weights.data(), ws_bytes.data(), hits_bytes.data()).ok());
    EXPECT_EQ(std::memcmp(ws_words.data(), ws_bytes.data(), ws_words.size() * sizeof(float)), 0)
        << width;
    EXPECT_EQ(hits_words, hits_bytes) << width;
    EXPECT_GT(DetectPlan::HitCount(hits_words.data()), 0u) << width;
  }
}

TEST(HogDetectEmulation, NoWindowsMeansNoLaunchesAndAZeroCount) {
  const HogModel people = RandomModel(64, 128, 4);
  const Image image = Synthetic(63, 300, 1, 5);
  absl::StatusOr<DetectPlan> plan = DetectPlan::Create(image.extent(), 1, people, DetectSpec{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->LaunchCount(), 0);
  EXPECT_EQ(plan->WorkspaceBytes(), 0u);
  std::vector<std::uint8_t> hits(plan->HitsBytes(), 0x7F);
  ASSERT_TRUE(
      plan->EmulateOnHost({image.bytes()}, people.weights.data(), nullptr, hits.data()).ok());
  EXPECT_EQ(DetectPlan::HitCount(hits.data()), 0u);
}

TEST(HogDetectEmulation, PlansThreeLaunchesPer64Levels) {
  const HogModel people = RandomModel(64, 128, 6);
  DetectSpec spec;
  spec.scale = 1.005;
  spec.max_levels = 150;
  absl::StatusOr<DetectPlan> plan = DetectPlan::Create(Extent{400, 300, 1}, 3, people, spec);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->geometry().levels.size(), 150u);
  EXPECT_EQ(plan->LaunchCount(), 9);  // win_stride 8: blocks, filter and exact per 64 levels
  absl::StatusOr<DetectPlan> hd =
      DetectPlan::Create(Extent{1920, 1080, 1}, 3, people, DetectSpec{});
  ASSERT_TRUE(hd.ok());
  EXPECT_EQ(hd->LaunchCount(), 3);
  EXPECT_EQ(hd->geometry().levels.size(), 44u);
  EXPECT_EQ(hd->HitsBytes(), 16 + 16 * static_cast<std::size_t>(hd->geometry().windows));
}

TEST(HogDetectEmulation, ManyLevelsSplitOverLaunchesStillMatch) {
  const HogModel people = RandomModel(64, 128, 7);
  DetectSpec spec;
  spec.scale = 1.01;
  spec.max_levels = 80;  // two launch pairs: 64 + 16 levels
  const Image image = Synthetic(150, 300, 1, 8);
  absl::StatusOr<DetectPlan> plan = DetectPlan::Create(image.extent(), 1, people, spec);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->geometry().levels.size(), 80u);
  ExpectEmulationMatchesReference(image, people, spec, "80 levels");
}

TEST(HogDetectEmulation, RejectsTwoChannels) {
  EXPECT_THAT(
      DetectPlan::Create(Extent{100, 200, 1}, 2, RandomModel(64, 128, 9), DetectSpec{}).status(),
      testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace cuimg
