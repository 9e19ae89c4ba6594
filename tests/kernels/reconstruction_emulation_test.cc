// The GPU reconstruction's kernels, emulated on the host (ReconstructionPlan::EmulateOnHost runs
// the bricks' own code, reconstruction_brick.h), equal the CPU reference bit for bit on every
// type, 2D and 3D, each connectivity and both methods, over random images with plateaus and NaN,
// a grey spiral whose path crosses many bricks, mazes and basketball1.png.
#include <gtest/gtest.h>

#include "cuimg/kernels/reconstruction.h"
#include "cuimg/reference/reconstruction_reference.h"
#include "cuimg/reference/segmentation_images.h"
#include "tests/testing/random_image.h"
#include "tests/testing/reconstruction_cases.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

// Both routes: the bricks on every case, and the automatic choice, which sends the two-valued
// cases (the mazes' fills) through the labelling's binary reconstruction.
TEST(ReconstructionEmulation, EqualsTheReferenceOnEveryCaseFamily) {
  ASSERT_TRUE(testing::NaturalImage(Extent{8, 8, 1}).ok()) << "basketball1.png is missing";
  int multi_run = 0;
  int two_levels = 0;
  for (const testing::ReconstructionCase& c : testing::ReconstructionCases()) {
    Image expected(c.mask.type(), c.mask.extent(), 1);
    CUIMG_ASSERT_OK(ReconstructionReferenceInto(c.marker.view(), c.mask.view(), expected.view(),
                                                c.method, c.connectivity));
    for (ReconstructionRoute route : {ReconstructionRoute::kBricks, ReconstructionRoute::kAuto}) {
      // Arrange
      absl::StatusOr<ReconstructionPlan> plan = ReconstructionPlan::Create(
          c.mask.type(), c.mask.extent(), c.method, c.connectivity, route);
      ASSERT_TRUE(plan.ok()) << plan.status();
      Image actual = c.marker;
      ReconstructionStats stats;
      // Act
      CUIMG_ASSERT_OK(plan->EmulateOnHost(c.mask.bytes(), actual.bytes(), &stats));
      // Assert
      const std::int64_t at = testing::FirstMismatch(actual, expected);
      EXPECT_EQ(at, -1) << c.name << (route == ReconstructionRoute::kAuto ? " auto " : " bricks ")
                        << (at >= 0 ? testing::DescribeMismatch(actual, expected, at) : "");
      if (route == ReconstructionRoute::kBricks) {
        EXPECT_GE(stats.bricks, plan->Bricks()) << c.name;
        multi_run += stats.bricks > plan->Bricks() + 2;
      } else {
        two_levels += stats.two_levels;
      }
    }
  }
  // The spirals and mazes must have made bricks hand work on to their neighbours (bricks run
  // again), and the two-valued cases must have taken the union-find.
  EXPECT_GT(multi_run, 40);
  EXPECT_GT(two_levels, 20);
}

// Every tuning (ReconstructionTuning: both schedules, either first order) on every case
// family, and on a small CT-like volume's hmax.
TEST(ReconstructionEmulation, EveryTuningEqualsTheReference) {
  std::vector<testing::ReconstructionCase> cases = testing::ReconstructionCases(false);
  const Image ct = CtLikeVolume(Extent{100, 70, 40}, 5);
  Image marker = ct;
  for (std::int64_t i = 0; i < ct.extent().Pixels(); ++i) {
    marker.As<std::int16_t>()[i] = static_cast<std::int16_t>(marker.As<std::int16_t>()[i] - 10);
  }
  cases.push_back({"ct_hmax", ct, marker, ReconstructionMethod::kDilation, Connectivity::k6});
  for (const testing::ReconstructionCase& c : cases) {
    Image expected(c.mask.type(), c.mask.extent(), 1);
    CUIMG_ASSERT_OK(ReconstructionReferenceInto(c.marker.view(), c.mask.view(), expected.view(),
                                                c.method, c.connectivity));
    for (const auto& [name, tuning] : testing::ReconstructionTunings()) {
      // Arrange
      absl::StatusOr<ReconstructionPlan> plan =
          ReconstructionPlan::Create(c.mask.type(), c.mask.extent(), c.method, c.connectivity,
                                     ReconstructionRoute::kBricks, tuning);
      ASSERT_TRUE(plan.ok()) << c.name << " " << plan.status();
      Image actual = c.marker;
      // Act
      CUIMG_ASSERT_OK(plan->EmulateOnHost(c.mask.bytes(), actual.bytes()));
      // Assert
      const std::int64_t at = testing::FirstMismatch(actual, expected);
      EXPECT_EQ(at, -1) << c.name << " " << name
                        << (at >= 0 ? testing::DescribeMismatch(actual, expected, at) : "");
    }
  }
}

TEST(ReconstructionEmulation, SpiralRoundsFollowThePathAcrossBricks) {
  // Arrange: a 1-pixel spiral of 192 x 160 crosses bricks hundreds of times along its path.
  const Extent e{192, 160, 1};
  const Image ramp = SpiralImage(PixelType::kU16, e, /*ramp=*/true);
  const Image marker = testing::SeedMarker(ramp, true, 0, 0, {e.width + 1});
  Image expected(PixelType::kU16, e, 1);
  CUIMG_ASSERT_OK(ReconstructionReferenceInto(marker.view(), ramp.view(), expected.view(),
                                              ReconstructionMethod::kDilation, Connectivity::k4));
  for (const auto& [name, tuning] : testing::ReconstructionTunings()) {
    absl::StatusOr<ReconstructionPlan> plan =
        ReconstructionPlan::Create(PixelType::kU16, e, ReconstructionMethod::kDilation,
                                   Connectivity::k4, ReconstructionRoute::kBricks, tuning);
    ASSERT_TRUE(plan.ok());
    Image r = marker;
    ReconstructionStats stats;
    // Act
    CUIMG_ASSERT_OK(plan->EmulateOnHost(ramp.bytes(), r.bytes(), &stats));
    // Assert: rounds (or runs beyond one a brick) follow the path.
    EXPECT_EQ(testing::FirstMismatch(r, expected), -1) << name;
    if (tuning.schedule == ReconstructionSchedule::kRounds) {
      EXPECT_GT(stats.rounds, 20) << name;
      EXPECT_LE(stats.rounds, ReconstructionPlan::WorstCaseRounds(e)) << name;
    } else {
      EXPECT_GT(stats.bricks, plan->Bricks() + 20) << name;
    }
  }
}

TEST(ReconstructionPlan, RefusesAConnectivityThatDoesNotSuitTheImage) {
  EXPECT_THAT(ReconstructionPlan::Create(PixelType::kU8, Extent{8, 8, 1},
                                         ReconstructionMethod::kDilation, Connectivity::k26)
                  .status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ReconstructionPlan::Create(PixelType::kU8, Extent{0, 8, 1},
                                         ReconstructionMethod::kDilation, Connectivity::k4)
                  .status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace cuimg
