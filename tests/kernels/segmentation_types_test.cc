// The segmentation steps' vocabulary: connectivity per dimensionality, which steps are global,
// and the parameter checks, each refusal naming its field and reason.
#include "cuimg/kernels/segmentation_types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cuimg/common/error.h"
#include "cuimg/kernels/morphology_types.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;

const Extent kImage{16, 8, 1};
const Extent kVolume{16, 8, 4};

MorphologyStep StepOf(MorphOp op) {
  MorphologyStep step;
  step.op = op;
  return step;
}

TEST(Connectivity, DefaultIsFaceConnectivity) {
  EXPECT_EQ(ResolveConnectivity(Connectivity::kDefault, kImage), Connectivity::k4);
  EXPECT_EQ(ResolveConnectivity(Connectivity::kDefault, kVolume), Connectivity::k6);
  EXPECT_EQ(ResolveConnectivity(Connectivity::k26, kVolume), Connectivity::k26);
}

TEST(Connectivity, SuitsTheDimensionality) {
  for (Connectivity c : {Connectivity::kDefault, Connectivity::k4, Connectivity::k8}) {
    CUIMG_EXPECT_OK(ValidateConnectivity(c, kImage, "c"));
  }
  for (Connectivity c :
       {Connectivity::kDefault, Connectivity::k6, Connectivity::k18, Connectivity::k26}) {
    CUIMG_EXPECT_OK(ValidateConnectivity(c, kVolume, "c"));
  }
  const absl::Status wrong =
      ValidateConnectivity(Connectivity::k6, kImage, "steps[1].connectivity");
  EXPECT_THAT(wrong, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorFieldOf(wrong), "steps[1].connectivity");
  EXPECT_EQ(ErrorReasonOf(wrong), "VALUE_OUT_OF_RANGE");
  EXPECT_THAT(ValidateConnectivity(Connectivity::k8, kVolume, "c"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(MorphologyStep, GlobalStepsAreTheOnesThatReadTheWholeImage) {
  for (MorphOp op :
       {MorphOp::kErode, MorphOp::kDilate, MorphOp::kOpen, MorphOp::kClose, MorphOp::kGradient,
        MorphOp::kTopHat, MorphOp::kBlackHat, MorphOp::kThreshold}) {
    EXPECT_FALSE(IsGlobalStep(StepOf(op))) << MorphOpName(op);
  }
  for (MorphOp op : {MorphOp::kFillHoles, MorphOp::kReconstructDilate, MorphOp::kReconstructErode,
                     MorphOp::kOpenRec, MorphOp::kCloseRec, MorphOp::kHMax, MorphOp::kHMin,
                     MorphOp::kRemoveSmall, MorphOp::kKeepLargest}) {
    EXPECT_TRUE(IsGlobalStep(StepOf(op))) << MorphOpName(op);
  }
  EXPECT_TRUE(UsesMarker(StepOf(MorphOp::kReconstructErode)));
  EXPECT_FALSE(UsesMarker(StepOf(MorphOp::kFillHoles)));
  EXPECT_TRUE(AnyStepUsesMarker({StepOf(MorphOp::kErode), StepOf(MorphOp::kReconstructDilate)}));
}

TEST(MorphologyStep, OpenRecCountsItsElementPassesOnly) {
  MorphologyStep step = StepOf(MorphOp::kOpenRec);
  step.iterations = 3;
  EXPECT_EQ(PrimitivePassCount(step), 3);
  EXPECT_EQ(PrimitivePassCount(StepOf(MorphOp::kHMax)), 0);
}

void ExpectRefused(const MorphologyStep& step, const Extent& extent, const char* field,
                   const char* reason) {
  const absl::Status status = ValidateMorphologyStep(step, extent, "steps[3]");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument)) << MorphOpName(step.op);
  EXPECT_EQ(ErrorFieldOf(status), field) << status;
  EXPECT_EQ(ErrorReasonOf(status), reason) << status;
}

TEST(MorphologyStep, RefusesParametersOutOfRangeNamingTheField) {
  MorphologyStep hmax = StepOf(MorphOp::kHMax);
  hmax.h = -1;
  ExpectRefused(hmax, kImage, "steps[3].h", "VALUE_OUT_OF_RANGE");
  hmax.h = std::numeric_limits<double>::infinity();
  ExpectRefused(hmax, kImage, "steps[3].h", "VALUE_OUT_OF_RANGE");
  MorphologyStep threshold = StepOf(MorphOp::kThreshold);
  threshold.lo = 5;
  threshold.hi = 4;
  ExpectRefused(threshold, kImage, "steps[3].hi", "VALUE_OUT_OF_RANGE");
  threshold.lo = std::nan("");
  ExpectRefused(threshold, kImage, "steps[3].lo", "VALUE_OUT_OF_RANGE");
  MorphologyStep small = StepOf(MorphOp::kRemoveSmall);
  small.min_voxels = -2;
  ExpectRefused(small, kImage, "steps[3].min_voxels", "VALUE_OUT_OF_RANGE");
  MorphologyStep fill = StepOf(MorphOp::kFillHoles);
  fill.connectivity = Connectivity::k26;
  ExpectRefused(fill, kImage, "steps[3].connectivity", "VALUE_OUT_OF_RANGE");
  fill.connectivity = Connectivity::k8;
  fill.iterations = 2;
  ExpectRefused(fill, kImage, "steps[3].iterations", "INVALID_COMBINATION");
}

TEST(MorphologyStep, AcceptsParametersInRange) {
  MorphologyStep hmax = StepOf(MorphOp::kHMin);
  hmax.h = 0;
  CUIMG_EXPECT_OK(ValidateMorphologyStep(hmax, kVolume, "s"));
  MorphologyStep threshold = StepOf(MorphOp::kThreshold);
  threshold.lo = -std::numeric_limits<double>::infinity();
  threshold.hi = -std::numeric_limits<double>::infinity();
  CUIMG_EXPECT_OK(ValidateMorphologyStep(threshold, kVolume, "s"));
  MorphologyStep open = StepOf(MorphOp::kOpenRec);
  open.iterations = 4;
  open.connectivity = Connectivity::k18;
  CUIMG_EXPECT_OK(ValidateMorphologyStep(open, kVolume, "s"));
}

}  // namespace
}  // namespace cuimg
