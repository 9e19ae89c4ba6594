// A DetectPlan of several frames against plans of one frame, through the kernels' own code on the
// host (DetectPlan::EmulateOnHost), without a GPU: each frame's block features and hits bit for
// bit those of the frame detected alone, for 1, 3 and 4 channels, frames whose windows share the
// scores kernel's tiles, models of two warp rounds and of no weights in the kernel parameters,
// more than 64 levels, frames given as one buffer twice; the plan's sizes, limits and strip
// heights as the frames grow; and the refusals of a wrong number of inputs. detect_gpu_test
// repeats the comparison on the device.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cuimg/common/error.h"
#include "cuimg/kernels/hog_detect.h"
#include "tests/testing/hog_testing.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using testing::ErrorIs;
using testing::RandomModel;
using testing::StatusIs;
using testing::Synthetic;

struct Emulated {
  std::vector<float> workspace;
  std::vector<std::uint8_t> hits;
};

// The emulated kernels of `plan` on `in`, the workspace poisoned (NaN) first so that a feature no
// strip writes shows.
Emulated Emulate(const DetectPlan& plan, const std::vector<const void*>& in,
                 const HogModel& model) {
  Emulated out;
  out.workspace.assign(plan.WorkspaceBytes() / sizeof(float),
                       std::numeric_limits<float>::quiet_NaN());
  out.hits.assign(plan.HitsBytes(), 0x7F);
  const absl::Status s =
      plan.EmulateOnHost(in, model.weights.data(), out.workspace.data(), out.hits.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// `frames` as one plan of frames.size() frames and each alone: features and hits bit for bit.
void ExpectBatchMatchesAlone(const std::vector<Image>& frames, const HogModel& model,
                             const DetectSpec& spec, const std::string& what) {
  const Image& first = frames[0];
  absl::StatusOr<DetectPlan> batch = DetectPlan::Create(first.extent(), first.channels(), model,
                                                        spec, static_cast<int>(frames.size()));
  ASSERT_TRUE(batch.ok()) << batch.status() << " " << what;
  absl::StatusOr<DetectPlan> alone =
      DetectPlan::Create(first.extent(), first.channels(), model, spec);
  ASSERT_TRUE(alone.ok()) << alone.status() << " " << what;
  std::vector<const void*> in;
  for (const Image& f : frames) in.push_back(f.bytes());
  const Emulated got = Emulate(*batch, in, model);
  const std::vector<std::vector<WindowHit>> got_hits =
      batch->DecodeFrameHits(got.hits.data(), DetectPlan::HitCount(got.hits.data()));
  ASSERT_EQ(got_hits.size(), frames.size()) << what;
  std::size_t hits = 0;
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const Emulated want = Emulate(*alone, {frames[f].bytes()}, model);
    const std::vector<WindowHit> want_hits =
        DetectPlan::DecodeHits(want.hits.data(), DetectPlan::HitCount(want.hits.data()));
    EXPECT_EQ(
        testing::FrameDifference(*batch, got.workspace.data(), got_hits[f], static_cast<int>(f),
                                 *alone, want.workspace.data(), want_hits, 0),
        "")
        << what;
    hits += want_hits.size();
  }
  EXPECT_GT(hits, 0u) << what << ": a comparison of no hits";
}

std::vector<Image> Frames(int w, int h, int channels, int count, std::uint64_t seed) {
  std::vector<Image> frames;
  for (int i = 0; i < count; ++i) frames.push_back(Synthetic(w, h, channels, seed + i));
  return frames;
}

TEST(HogDetectBatch, EachFrameIsItsDetectionAlone) {
  const HogModel people = RandomModel(64, 128, 1);
  DetectSpec all;  // every window a hit: every score compared
  all.hit_threshold = -1e9;
  DetectSpec padded;
  padded.padding = 24;
  padded.win_stride = 16;
  padded.scale = 1.2;
  padded.hit_threshold = 0.3;
  // 171 wide: 14 windows a row at level 0, so the scores kernel's tiles hold parts of 2 or 3
  // frames; 1, 3 and 4 channels.
  for (int channels : {1, 3, 4}) {
    ExpectBatchMatchesAlone(Frames(171, 263, channels, 3, 10 * channels), people, all,
                            absl::StrCat("171x263x", channels, " x3"));
  }
  ExpectBatchMatchesAlone(Frames(333, 257, 3, 4, 40), people, padded, "333x257x3 x4 padded");
  // An odd model, a wide one (11 block columns: two rounds of the scores kernel's warps) and a
  // tall one (465 blocks: no weights in the kernel parameters).
  ExpectBatchMatchesAlone(Frames(201, 163, 4, 2, 50), RandomModel(40, 72, 2), all,
                          "201x163x4 x2 40x72");
  ExpectBatchMatchesAlone(Frames(250, 97, 1, 3, 60), RandomModel(96, 48, 3), all,
                          "250x97x1 x3 96x48");
  ExpectBatchMatchesAlone(Frames(260, 300, 3, 2, 70), RandomModel(128, 256, 4), all,
                          "260x300x3 x2 128x256");
}

TEST(HogDetectBatch, FramesOverMoreThan64LevelsMatchAlone) {
  DetectSpec spec;
  spec.scale = 1.01;
  spec.max_levels = 80;  // two launch pairs, each over both frames
  spec.hit_threshold = -1e9;
  ExpectBatchMatchesAlone(Frames(150, 300, 1, 2, 80), RandomModel(64, 128, 5), spec,
                          "150x300x1 x2, 80 levels");
}

TEST(HogDetectBatch, OneBufferTwiceGivesTheSameDetectionTwice) {
  const HogModel people = RandomModel(64, 128, 6);
  const Image image = Synthetic(190, 260, 3, 90);
  DetectSpec spec;
  spec.hit_threshold = 0.2;
  absl::StatusOr<DetectPlan> plan = DetectPlan::Create(image.extent(), 3, people, spec, 2);
  ASSERT_TRUE(plan.ok());
  const Emulated got = Emulate(*plan, {image.bytes(), image.bytes()}, people);
  const std::vector<std::vector<WindowHit>> hits =
      plan->DecodeFrameHits(got.hits.data(), DetectPlan::HitCount(got.hits.data()));
  ASSERT_EQ(hits.size(), 2u);
  ASSERT_FALSE(hits[0].empty());
  EXPECT_EQ(testing::FrameDifference(*plan, got.workspace.data(), hits[1], 1, *plan,
                                     got.workspace.data(), hits[0], 0),
            "");
}

// The strips of the blocks launch, from Describe ("... launches 2 (N strips of ...").
int Strips(const DetectPlan& plan) {
  const std::string d = plan.Describe();
  const std::size_t at = d.find(" strips of ");
  const std::size_t from = d.rfind('(', at) + 1;
  int n = 0;
  EXPECT_TRUE(absl::SimpleAtoi(d.substr(from, at - from), &n)) << d;
  return n;
}

TEST(HogDetectBatch, PlanGrowsWithTheFramesButNotItsLaunches) {
  const HogModel people = RandomModel(64, 128, 7);
  absl::StatusOr<DetectPlan> one = DetectPlan::Create(Extent{1920, 1080, 1}, 3, people, {});
  absl::StatusOr<DetectPlan> eight = DetectPlan::Create(Extent{1920, 1080, 1}, 3, people, {}, 8);
  ASSERT_TRUE(one.ok() && eight.ok());
  EXPECT_EQ(one->frames(), 1);
  EXPECT_EQ(eight->frames(), 8);
  EXPECT_EQ(eight->LaunchCount(), one->LaunchCount());
  EXPECT_EQ(eight->geometry().windows, one->geometry().windows);
  EXPECT_EQ(eight->WorkspaceBytes(), 8 * one->WorkspaceBytes());
  EXPECT_EQ(eight->WorkspaceBytes() % 256, 0u);
  EXPECT_EQ(eight->HitsBytes(), 16 + 8 * 16 * static_cast<std::size_t>(one->geometry().windows));
  // Frame f's features lie f strides past frame 0's; the filter's candidate list follows them.
  const std::int64_t stride = eight->Features(0, 1).offset - eight->Features(0).offset;
  EXPECT_EQ(eight->Features(3, 5).offset, one->Features(3).offset + 5 * stride);
  EXPECT_LT(8 * stride * static_cast<std::int64_t>(sizeof(float)),
            static_cast<std::int64_t>(eight->WorkspaceBytes()));
  EXPECT_THAT(eight->Describe(), ::testing::StartsWith("8 frames of 44 levels"));
  // With 8 frames' work in the launch, more levels get tall strips: fewer strips a frame.
  EXPECT_LT(Strips(*eight), 8 * Strips(*one)) << one->Describe() << " / " << eight->Describe();
}

TEST(HogDetectBatch, RefusesFrameCountsOutsideOneTo64) {
  const HogModel people = RandomModel(64, 128, 8);
  for (int frames : {0, -1, kMaxDetectFrames + 1}) {
    EXPECT_THAT(DetectPlan::Create(Extent{200, 200, 1}, 1, people, {}, frames).status(),
                ErrorIs(absl::StatusCode::kInvalidArgument, "VALUE_OUT_OF_RANGE", "frames"))
        << frames;
  }
  EXPECT_TRUE(DetectPlan::Create(Extent{200, 200, 1}, 1, people, {}, kMaxDetectFrames).ok());
}

TEST(HogDetectBatch, RunsRefuseAWrongNumberOfInputs) {
  const HogModel people = RandomModel(64, 128, 9);
  const Image image = Synthetic(120, 200, 1, 9);
  absl::StatusOr<DetectPlan> plan = DetectPlan::Create(image.extent(), 1, people, {}, 3);
  ASSERT_TRUE(plan.ok());
  std::vector<float> workspace(plan->WorkspaceBytes() / sizeof(float));
  std::vector<std::uint8_t> hits(plan->HitsBytes());
  const void* two[] = {image.bytes(), image.bytes()};
  const void* with_null[] = {image.bytes(), nullptr, image.bytes()};
  // The checks come before any CUDA call, so Run refuses here too, without a device.
  EXPECT_THAT(plan->EmulateOnHost(two, people.weights.data(), workspace.data(), hits.data()),
              ErrorIs(absl::StatusCode::kInvalidArgument, "INVALID_COMBINATION", "in"));
  EXPECT_THAT(plan->Run(two, people.weights.data(), workspace.data(), hits.data(), nullptr),
              ErrorIs(absl::StatusCode::kInvalidArgument, "INVALID_COMBINATION", "in"));
  EXPECT_THAT(
      plan->Run({image.bytes()}, people.weights.data(), workspace.data(), hits.data(), nullptr),
      ErrorIs(absl::StatusCode::kInvalidArgument, "INVALID_COMBINATION", "in"));
  EXPECT_THAT(plan->RunBlocks(with_null, workspace.data(), hits.data(), nullptr),
              ErrorIs(absl::StatusCode::kInvalidArgument, "FIELD_REQUIRED", "in[1]"));
  EXPECT_THAT(plan->EmulateOnHost(with_null, people.weights.data(), workspace.data(), hits.data()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(HogDetectBatch, FramesWithoutWindowsGiveAZeroCount) {
  const HogModel people = RandomModel(64, 128, 10);
  const Image image = Synthetic(63, 300, 1, 11);
  absl::StatusOr<DetectPlan> plan = DetectPlan::Create(image.extent(), 1, people, {}, 4);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->LaunchCount(), 0);
  EXPECT_EQ(plan->WorkspaceBytes(), 0u);
  std::vector<std::uint8_t> hits(plan->HitsBytes(), 0x7F);
  const void* in[] = {image.bytes(), image.bytes(), image.bytes(), image.bytes()};
  ASSERT_TRUE(plan->EmulateOnHost(in, people.weights.data(), nullptr, hits.data()).ok());
  EXPECT_EQ(DetectPlan::HitCount(hits.data()), 0u);
  EXPECT_EQ(plan->DecodeFrameHits(hits.data(), 0).size(), 4u);
}

}  // namespace
}  // namespace cuimg
