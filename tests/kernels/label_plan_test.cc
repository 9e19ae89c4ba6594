// LabelPlan and the device mask steps on the host side: what they refuse before touching a
// device, and how they size their workspace. Runs without a GPU.
#include <gtest/gtest.h>

#include <cstdint>

#include "cuimg/common/error.h"
#include "cuimg/kernels/label.h"
#include "cuimg/kernels/mask_steps.h"

namespace cuimg {
namespace {

TEST(LabelPlanTest, RefusesSpecsThatDoNotSuitTheImage) {
  LabelSpec spec;
  spec.connectivity = Connectivity::k6;
  absl::StatusOr<LabelPlan> plan = LabelPlan::Create(PixelType::kU8, {64, 64, 1}, spec);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorFieldOf(plan.status()), "connectivity");
  spec = LabelSpec{};
  spec.threshold = std::array<double, 2>{5, 1};
  EXPECT_EQ(ErrorFieldOf(LabelPlan::Create(PixelType::kU8, {4, 4, 1}, spec).status()), "threshold");
  spec = LabelSpec{};
  EXPECT_EQ(ErrorReasonOf(LabelPlan::Create(PixelType::kU8, {1 << 16, 1 << 16, 1}, spec).status()),
            "LIMIT_EXCEEDED");
  EXPECT_EQ(LabelPlan::Create(PixelType::kU8, {0, 4, 1}, spec).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LabelPlanTest, SizesTheRegionTableByTheMostRegionsAndTheIntensity) {
  LabelSpec spec;
  spec.connectivity = Connectivity::k4;
  const Extent hd{1920, 1080, 1};
  absl::StatusOr<LabelPlan> plain = LabelPlan::Create(PixelType::kU8, hd, spec);
  absl::StatusOr<LabelPlan> with_f32 = LabelPlan::Create(PixelType::kU8, hd, spec, PixelType::kF32);
  ASSERT_TRUE(plain.ok() && with_f32.ok());
  // 960 * 1080 regions at most (a checkerboard): 52 bytes each, 84 more with f32 sums; and the
  // root masks, 2 bytes for 16 pixels.
  const std::size_t regions = 960 * 1080;
  const std::size_t masks = 1920 * 1080 / 8;
  EXPECT_GE(plain->WorkspaceBytes(), regions * 52 + masks);
  EXPECT_LT(plain->WorkspaceBytes(), regions * 52 + masks + (1 << 16));
  EXPECT_GE(with_f32->WorkspaceBytes(), regions * (52 + 84));
  spec.connectivity = Connectivity::k8;
  absl::StatusOr<LabelPlan> eight = LabelPlan::Create(PixelType::kU8, hd, spec);
  ASSERT_TRUE(eight.ok());
  EXPECT_LT(eight->WorkspaceBytes(), plain->WorkspaceBytes() / 2 + masks / 2 + (1 << 16));
  // Local, merge, count, number (which sums the counts before it: 507 segments), the local
  // roots, resolve.
  EXPECT_EQ(eight->LaunchCount(), 6);
  spec.connectivity = Connectivity::k26;
  absl::StatusOr<LabelPlan> ct = LabelPlan::Create(PixelType::kU8, {512, 512, 300}, spec);
  ASSERT_TRUE(ct.ok());
  EXPECT_EQ(ct->LaunchCount(), 7);  // 19,200 segments: a scan kernel first
  int workspace = 0;
  EXPECT_EQ(static_cast<const void*>(eight->DeviceRegionCount(&workspace)),
            static_cast<const void*>(&workspace));
}

TEST(LabelPlanTest, MaskStepsRefuseBadSpecsBeforeTouchingTheDevice) {
  const Extent e{16, 16, 1};
  EXPECT_EQ(ErrorFieldOf(RemoveSmallOnDevice(PixelType::kU8, e, Connectivity::k4, -1, nullptr,
                                             nullptr, nullptr, nullptr)),
            "min_voxels");
  EXPECT_EQ(ErrorFieldOf(KeepLargestOnDevice(PixelType::kU8, e, Connectivity::k26, nullptr, nullptr,
                                             nullptr, nullptr)),
            "connectivity");
  SeededFillSpec spec;
  spec.range = std::array<double, 2>{1, 0};
  EXPECT_EQ(ErrorFieldOf(FillUnseededComponentsOnDevice(PixelType::kU8, e, spec, nullptr, nullptr,
                                                        PixelType::kU8, nullptr, nullptr, nullptr)),
            "range");
  EXPECT_EQ(MaskStepWorkspaceBytes(e), 256u + 16 * 16 * 4);
}

}  // namespace
}  // namespace cuimg
