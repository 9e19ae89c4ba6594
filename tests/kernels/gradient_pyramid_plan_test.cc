// Planning of the gradient and pyramid runs on the host: validation, the taps the kernel applies,
// the level table and buffer sizes, launch counts, and Run()'s argument checks (which fail before
// any CUDA call). No GPU needed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cuimg/kernels/gradient.h"
#include "cuimg/kernels/pyramid.h"
#include "kernels/src/pyramid/pyramid_rect_rows.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

TEST(GradientPlan, ExposesTheFloatTapsItApplies) {
  absl::StatusOr<GradientPlan> plan =
      GradientPlan::Create(PixelType::kU8, Extent{1920, 1080, 1}, GradientSpec{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<GradientTaps> taps = ComputeGradientTaps(GradientSpec{});
  ASSERT_TRUE(taps.ok());
  ASSERT_EQ(plan->SmoothingTaps().size(), 7u);
  ASSERT_EQ(plan->DerivativeTaps().size(), 7u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(plan->SmoothingTaps()[i], static_cast<float>(taps->smoothing[i]));
    EXPECT_EQ(plan->DerivativeTaps()[i], static_cast<float>(taps->derivative[i]));
  }
  EXPECT_DOUBLE_EQ(plan->sigma(), 1.4);
  EXPECT_EQ(plan->LaunchCount(), 1);
  EXPECT_THAT(plan->Describe(), HasSubstr("radius 3"));
}

// The strip kernel reflects each row once, which needs slices taller than the radius; shorter
// ones take the tile kernel.
TEST(GradientPlan, StripsOnlyForSlicesTallerThanTheRadius) {
  for (int height : {1, 2, 3, 4, 5}) {
    absl::StatusOr<GradientPlan> plan =
        GradientPlan::Create(PixelType::kU8, Extent{64, height, 2}, GradientSpec{});
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_THAT(plan->Describe(), HasSubstr(height > 3 ? "fused(strips" : "fused(tile"))
        << "height " << height;
  }
}

TEST(GradientPlan, RejectsBadSpecsAndExtents) {
  EXPECT_THAT(GradientPlan::Create(PixelType::kU8, Extent{8, 8, 1}, GradientSpec{9, -1.0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("sigma")));
  EXPECT_THAT(GradientPlan::Create(PixelType::kF32, Extent{8, 8, 1}, GradientSpec{33, 0.0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("kernel_length")));
  EXPECT_THAT(GradientPlan::Create(PixelType::kF32, Extent{0, 8, 1}, GradientSpec{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("extent")));
  EXPECT_THAT(GradientPlan::Create(PixelType::kF32, Extent{8, 8, 0}, GradientSpec{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("extent")));
  EXPECT_TRUE(
      GradientPlan::Create(PixelType::kI16, Extent{512, 512, 300}, GradientSpec{31, 64.0}).ok());
}

TEST(GradientPlan, RunRejectsOutputsThatDisagreeWithTheSpec) {
  GradientSpec spec;
  spec.magnitude = true;
  absl::StatusOr<GradientPlan> plan = GradientPlan::Create(PixelType::kU8, Extent{4, 4, 1}, spec);
  ASSERT_TRUE(plan.ok());
  float dummy = 0;
  EXPECT_THAT(plan->Run(&dummy, &dummy, &dummy, nullptr, nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("magnitude")));
  EXPECT_THAT(plan->Run(&dummy, &dummy, &dummy, &dummy, &dummy, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("angle")));
}

TEST(PyramidPlan, FromBaseIsOneLaunchWithPackedLevels) {
  absl::StatusOr<PyramidPlan> plan =
      PyramidPlan::Create(PixelType::kU8, Extent{1920, 1080, 1}, PyramidSpec{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->Levels().size(), 31u);
  EXPECT_EQ(plan->LaunchCount(), 1);
  EXPECT_EQ(plan->WorkspaceBytes(), 0u);
  EXPECT_EQ(plan->OutputBytes(), PyramidOutputBytes(plan->Levels()));
  EXPECT_GE(plan->OutputBytes(), 21224637u * 4);
  EXPECT_EQ(plan->Levels().back().width, 444);
  EXPECT_EQ(plan->Levels().back().height, 250);
  EXPECT_THAT(plan->Describe(), HasSubstr("from_base(31 levels, launches 1,"));
}

TEST(PyramidPlan, RectanglesSpreadEvenlyOverTheSms) {
  using pyramid::RectBlocks;
  using pyramid::RectRows;
  // 1080p on an H200's 132 SMs: 31 rows (525 blocks, 4 per SM at most); 32 rows would leave 18
  // SMs with 3 of 510 blocks and 30 rows would need a fifth block on 12 SMs.
  EXPECT_EQ(RectRows(1920, 1080, 132), 31);
  EXPECT_EQ(RectBlocks(1920, 1080, 31), 525);
  // Unknown device: the tallest rectangles.
  EXPECT_EQ(RectRows(1920, 1080, 0), pyramid::kRectH);
  // Any size and SM count: rows within bounds, and no other height puts fewer rows on the busiest
  // SM.
  for (int sms : {1, 7, 78, 114, 132, 144}) {
    for (std::int64_t w : {1, 2, 127, 128, 129, 640, 1920, 4000}) {
      for (std::int64_t h : {1, 3, 24, 25, 480, 1080, 2161}) {
        const int rows = RectRows(w, h, sms);
        ASSERT_GE(rows, pyramid::kMinRectH);
        ASSERT_LE(rows, pyramid::kRectH);
        auto cost = [&](int r) { return (RectBlocks(w, h, r) + sms - 1) / sms * (r + 1); };
        for (int r = pyramid::kMinRectH; r <= pyramid::kRectH; ++r) {
          EXPECT_LE(cost(rows), cost(r)) << w << "x" << h << " on " << sms << " SMs, rows " << r;
        }
      }
    }
  }
}

TEST(PyramidPlan, CascadedLaunchesPerLevelAndNeedsWorkspaceOnlyForIntegerOutputs) {
  PyramidSpec spec;
  spec.mode = PyramidMode::kCascaded;
  absl::StatusOr<PyramidPlan> f32 = PyramidPlan::Create(PixelType::kU8, Extent{640, 480, 1}, spec);
  ASSERT_TRUE(f32.ok());
  EXPECT_EQ(f32->LaunchCount(), static_cast<int>(f32->Levels().size()) - 1);
  EXPECT_EQ(f32->WorkspaceBytes(), 0u);
  spec.output_type = PixelType::kU8;
  absl::StatusOr<PyramidPlan> u8 = PyramidPlan::Create(PixelType::kU8, Extent{640, 480, 1}, spec);
  ASSERT_TRUE(u8.ok());
  // Two f32 buffers of level 1 (610x457), 256-byte aligned.
  EXPECT_EQ(u8->WorkspaceBytes(), 2 * ((610u * 457u * 4u + 255u) / 256u * 256u));
  EXPECT_EQ(u8->OutputBytes(), PyramidOutputBytes(u8->Levels()));
}

TEST(PyramidPlan, SplitsLongPyramidsIntoLaunchesOf64Levels) {
  PyramidSpec spec;
  spec.levels = 150;
  spec.ratio = 1.01;
  spec.min_width = 1;
  spec.min_height = 1;
  absl::StatusOr<PyramidPlan> plan =
      PyramidPlan::Create(PixelType::kF32, Extent{1000, 40, 1}, spec);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->Levels().size(), 150u);
  EXPECT_EQ(plan->LaunchCount(), 3);
}

TEST(PyramidPlan, RejectsBadSpecsAndNullBuffers) {
  PyramidSpec spec;
  spec.output_type = PixelType::kI16;
  EXPECT_THAT(PyramidPlan::Create(PixelType::kU8, Extent{64, 64, 1}, spec),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("output_type")));
  EXPECT_THAT(PyramidPlan::Create(PixelType::kU8, Extent{4, 4, 1}, PyramidSpec{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no level")));
  spec = PyramidSpec{};
  spec.mode = PyramidMode::kCascaded;
  spec.output_type = PixelType::kU8;
  absl::StatusOr<PyramidPlan> plan = PyramidPlan::Create(PixelType::kU8, Extent{64, 64, 1}, spec);
  ASSERT_TRUE(plan.ok());
  ASSERT_GT(plan->WorkspaceBytes(), 0u);
  int dummy = 0;
  EXPECT_THAT(plan->Run(&dummy, &dummy, nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("workspace")));
}

}  // namespace
}  // namespace cuimg
