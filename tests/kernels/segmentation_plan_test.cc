// MorphologyPlan's segmentation steps and ReconstructionPlan as planned on the host (no GPU
// needed): which types and steps they take, what they refuse naming the field, and the workspace
// the reconstruction adds.
#include <gtest/gtest.h>

#include <string>

#include "cuimg/common/error.h"
#include "cuimg/kernels/mask_steps.h"
#include "cuimg/kernels/morphology.h"
#include "cuimg/kernels/reconstruction.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;

MorphologyStep Step(MorphOp op, Connectivity c = Connectivity::kDefault) {
  MorphologyStep s;
  s.op = op;
  s.connectivity = c;
  return s;
}

TEST(SegmentationPlan, PlansEverySegmentationStepOnEveryType) {
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32,
                             PixelType::kU32};
  for (PixelType type : types) {
    for (const Extent& e : {Extent{1920, 1080, 1}, Extent{512, 512, 300}, Extent{1, 1, 1}}) {
      for (MorphOp op :
           {MorphOp::kFillHoles, MorphOp::kReconstructDilate, MorphOp::kReconstructErode,
            MorphOp::kOpenRec, MorphOp::kCloseRec, MorphOp::kHMax, MorphOp::kHMin,
            MorphOp::kThreshold, MorphOp::kRemoveSmall, MorphOp::kKeepLargest}) {
        const MorphologyStep step = Step(op);
        absl::StatusOr<MorphologyPlan> plan = MorphologyPlan::Create(type, e, {step});
        if (type == PixelType::kU32 && !StepTakesU32(step)) {
          EXPECT_THAT(plan, StatusIs(absl::StatusCode::kInvalidArgument)) << MorphOpName(op);
          continue;
        }
        ASSERT_TRUE(plan.ok()) << plan.status() << " " << MorphOpName(op);
        EXPECT_NE(plan->Describe().find(std::string(MorphOpName(op))), std::string::npos)
            << plan->Describe();
        EXPECT_FALSE(plan->WritesOutputOnce());
      }
    }
  }
}

TEST(SegmentationPlan, AddsTheReconstructionWorkspace) {
  // Arrange
  const Extent e{1920, 1080, 1};
  auto threshold = MorphologyPlan::Create(PixelType::kU8, e, {Step(MorphOp::kThreshold)});
  auto fill = MorphologyPlan::Create(PixelType::kU8, e, {Step(MorphOp::kFillHoles)});
  auto reconstruction = ReconstructionPlan::Create(
      PixelType::kU8, e, ReconstructionMethod::kErosion, Connectivity::kDefault);
  // Assert
  ASSERT_TRUE(threshold.ok() && fill.ok() && reconstruction.ok());
  EXPECT_GE(fill->WorkspaceBytes(), threshold->WorkspaceBytes() + reconstruction->WorkspaceBytes());
  // The union-find route's share: the labelling's links, a seed byte a pixel.
  auto bricks_only =
      ReconstructionPlan::Create(PixelType::kU8, e, ReconstructionMethod::kErosion,
                                 Connectivity::kDefault, ReconstructionRoute::kBricks);
  ASSERT_TRUE(bricks_only.ok());
  EXPECT_GE(reconstruction->WorkspaceBytes(),
            bricks_only->WorkspaceBytes() + MaskStepWorkspaceBytes(e) + e.Pixels());
  EXPECT_EQ(reconstruction->Bricks(), 60 * 34);  // 32 x 32 bricks
  EXPECT_EQ(ReconstructionPlan::Create(PixelType::kI16, Extent{512, 512, 300},
                                       ReconstructionMethod::kDilation, Connectivity::k26)
                ->Bricks(),
            16 * 64 * 75);  // 32 x 8 x 4 bricks
}

TEST(SegmentationPlan, RefusesWhatTheStepsDoNotTake) {
  const Extent e{64, 48, 1};
  // An element step on labels.
  absl::Status u32 = MorphologyPlan::Create(PixelType::kU32, e, {Step(MorphOp::kErode)}).status();
  EXPECT_THAT(u32, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorReasonOf(u32), "UNSUPPORTED_PIXEL_TYPE");
  // A 3D connectivity on a 2D image, named under the step.
  absl::Status conn =
      MorphologyPlan::Create(PixelType::kU8, e,
                             {Step(MorphOp::kThreshold), Step(MorphOp::kHMax, Connectivity::k26)})
          .status();
  EXPECT_THAT(conn, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorFieldOf(conn), "steps[1].connectivity");
  EXPECT_THAT(ReconstructionPlan::Create(PixelType::kU8, Extent{1 << 16, 1 << 15, 2},
                                         ReconstructionMethod::kDilation, Connectivity::k6),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(SegmentationPlan, WorstCaseRoundsBoundEveryImage) {
  EXPECT_EQ(ReconstructionPlan::WorstCaseRounds(Extent{1920, 1080, 1}), 1920 * 1080 + 1);
}

}  // namespace
}  // namespace cuimg
