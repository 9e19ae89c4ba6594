// The segmentation steps' and Label's validation (issue 48): each bad parameter is INVALID_ARGUMENT
// naming its field (the payload the wire's ErrorInfo carries) and its reason; good requests give
// the jobs the kernels run; work and byte estimates grow with the worst case; a streamed chain
// splits at its first global step.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "cuimg/common/error.h"
#include "server/scheduling/volume_stream_plan.h"
#include "server/scheduling/work_estimate.h"
#include "server/validation/request_validation.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;

v1::Image Image(v1::PixelType type, int w, int h, int d, int bytes_per_pixel) {
  v1::Image image;
  image.set_pixel_type(type);
  image.set_width(w);
  image.set_height(h);
  image.set_depth(d);
  image.set_data(
      std::string(static_cast<std::size_t>(w * h * std::max(d, 1) * bytes_per_pixel), '\0'));
  return image;
}

v1::MorphologyStep Step(v1::MorphologyOp op) {
  v1::MorphologyStep step;
  step.set_op(op);
  return step;
}

v1::StructuringElement Box(int size) {
  v1::StructuringElement e;
  e.set_shape(v1::ELEMENT_SHAPE_RECT);
  e.set_width(size);
  e.set_height(size);
  return e;
}

// A 2D u8 image (8x6) with one fill_holes step.
v1::MorphologyRequest FillHoles() {
  v1::MorphologyRequest r;
  *r.mutable_input()->mutable_image() = Image(v1::PIXEL_TYPE_U8, 8, 6, 0, 1);
  *r.add_steps() = Step(v1::MORPHOLOGY_OP_FILL_HOLES);
  return r;
}

struct Bad {
  const char* name;
  std::function<void(v1::MorphologyRequest&)> mutate;
  const char* field;
  ErrorReason reason;
};

class SegmentationStepValidation : public ::testing::TestWithParam<Bad> {};

TEST_P(SegmentationStepValidation, RefusesNamingTheFieldAndReason) {
  v1::MorphologyRequest request = FillHoles();
  GetParam().mutate(request);
  const absl::StatusOr<MorphologyJob> job = ValidateMorphologyRequest(request, RequestLimits{});
  ASSERT_THAT(job, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorFieldOf(job.status()), GetParam().field) << job.status();
  EXPECT_EQ(ErrorReasonOf(job.status()), ErrorReasonName(GetParam().reason)) << job.status();
}

const Bad kBad[] = {
    {"NegativeH",
     [](auto& r) {
       r.mutable_steps(0)->set_op(v1::MORPHOLOGY_OP_HMAX);
       r.mutable_steps(0)->set_h(-1);
     },
     "steps[0].h", ErrorReason::kValueOutOfRange},
    {"InfiniteH",
     [](auto& r) {
       r.mutable_steps(0)->set_op(v1::MORPHOLOGY_OP_HMIN);
       r.mutable_steps(0)->set_h(std::numeric_limits<double>::infinity());
     },
     "steps[0].h", ErrorReason::kValueOutOfRange},
    {"UnknownConnectivity",
     [](auto& r) { r.mutable_steps(0)->set_connectivity(static_cast<v1::Connectivity>(5)); },
     "steps[0].connectivity", ErrorReason::kUnknownEnumValue},
    {"VolumeConnectivityOn2D",
     [](auto& r) { r.mutable_steps(0)->set_connectivity(v1::CONNECTIVITY_18); },
     "steps[0].connectivity", ErrorReason::kValueOutOfRange},
    {"ImageConnectivityOnAVolume",
     [](auto& r) {
       *r.mutable_input()->mutable_image() = Image(v1::PIXEL_TYPE_U8, 8, 6, 3, 1);
       r.mutable_steps(0)->set_connectivity(v1::CONNECTIVITY_8);
     },
     "steps[0].connectivity", ErrorReason::kValueOutOfRange},
    {"ThresholdUpsideDown",
     [](auto& r) {
       *r.mutable_steps(0) = Step(v1::MORPHOLOGY_OP_THRESHOLD);
       r.mutable_steps(0)->set_lo(3);
       r.mutable_steps(0)->set_hi(2);
     },
     "steps[0].hi", ErrorReason::kValueOutOfRange},
    {"ThresholdNaN",
     [](auto& r) {
       *r.mutable_steps(0) = Step(v1::MORPHOLOGY_OP_THRESHOLD);
       r.mutable_steps(0)->set_lo(std::nan(""));
     },
     "steps[0].lo", ErrorReason::kValueOutOfRange},
    {"ElementOnFillHoles", [](auto& r) { *r.mutable_steps(0)->mutable_element() = Box(3); },
     "steps[0].element", ErrorReason::kInvalidCombination},
    {"BorderOnFillHoles",
     [](auto& r) { r.mutable_steps(0)->set_border_mode(v1::BORDER_MODE_CONSTANT); },
     "steps[0].border_mode", ErrorReason::kInvalidCombination},
    {"IterationsOnKeepLargest",
     [](auto& r) {
       r.mutable_steps(0)->set_op(v1::MORPHOLOGY_OP_KEEP_LARGEST);
       r.mutable_steps(0)->set_iterations(2);
     },
     "steps[0].iterations", ErrorReason::kInvalidCombination},
    {"HOnThreshold",
     [](auto& r) {
       *r.mutable_steps(0) = Step(v1::MORPHOLOGY_OP_THRESHOLD);
       r.mutable_steps(0)->set_h(1);
     },
     "steps[0].h", ErrorReason::kInvalidCombination},
    {"MinVoxelsOnFillHoles", [](auto& r) { r.mutable_steps(0)->set_min_voxels(3); },
     "steps[0].min_voxels", ErrorReason::kInvalidCombination},
    {"ConnectivityOnErode",
     [](auto& r) {
       *r.mutable_steps(0) = Step(v1::MORPHOLOGY_OP_ERODE);
       *r.mutable_steps(0)->mutable_element() = Box(3);
       r.mutable_steps(0)->set_connectivity(v1::CONNECTIVITY_8);
     },
     "steps[0].connectivity", ErrorReason::kInvalidCombination},
    {"MarkerMissing",
     [](auto& r) { r.mutable_steps(0)->set_op(v1::MORPHOLOGY_OP_RECONSTRUCT_DILATE); }, "marker",
     ErrorReason::kFieldRequired},
    {"MarkerUnread",
     [](auto& r) { *r.mutable_marker()->mutable_image() = Image(v1::PIXEL_TYPE_U8, 8, 6, 0, 1); },
     "marker", ErrorReason::kInvalidCombination},
    {"MarkerOfAnotherSize",
     [](auto& r) {
       r.mutable_steps(0)->set_op(v1::MORPHOLOGY_OP_RECONSTRUCT_ERODE);
       *r.mutable_marker()->mutable_image() = Image(v1::PIXEL_TYPE_U8, 8, 7, 0, 1);
     },
     "marker", ErrorReason::kShapeMismatch},
    {"MarkerOfAnotherType",
     [](auto& r) {
       r.mutable_steps(0)->set_op(v1::MORPHOLOGY_OP_RECONSTRUCT_DILATE);
       *r.mutable_marker()->mutable_image() = Image(v1::PIXEL_TYPE_I16, 8, 6, 0, 2);
     },
     "marker", ErrorReason::kShapeMismatch},
    {"U32IntoErode",
     [](auto& r) {
       *r.mutable_input()->mutable_image() = Image(v1::PIXEL_TYPE_U32, 8, 6, 0, 4);
       *r.add_steps() = Step(v1::MORPHOLOGY_OP_ERODE);
       *r.mutable_steps(1)->mutable_element() = Box(3);
     },
     "steps[1].op", ErrorReason::kUnsupportedPixelType},
    {"U32IntoOpenRec",
     [](auto& r) {
       *r.mutable_input()->mutable_image() = Image(v1::PIXEL_TYPE_U32, 8, 6, 0, 4);
       *r.mutable_steps(0) = Step(v1::MORPHOLOGY_OP_OPEN_REC);
       *r.mutable_steps(0)->mutable_element() = Box(3);
     },
     "steps[0].op", ErrorReason::kUnsupportedPixelType},
    {"MinVoxelsTooLarge",
     [](auto& r) {
       r.mutable_steps(0)->set_op(v1::MORPHOLOGY_OP_REMOVE_SMALL);
       r.mutable_steps(0)->set_min_voxels(~std::uint64_t{0});
     },
     "steps[0].min_voxels", ErrorReason::kValueOutOfRange},
};

INSTANTIATE_TEST_SUITE_P(Table, SegmentationStepValidation, ::testing::ValuesIn(kBad),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(SegmentationStepValidationOk, TakesEveryStepWithItsParameters) {
  v1::MorphologyRequest r;
  *r.mutable_input()->mutable_image() = Image(v1::PIXEL_TYPE_U32, 8, 6, 4, 4);
  *r.mutable_marker()->mutable_image() = Image(v1::PIXEL_TYPE_U32, 8, 6, 4, 4);
  v1::MorphologyStep threshold = Step(v1::MORPHOLOGY_OP_THRESHOLD);
  threshold.set_lo(-std::numeric_limits<double>::infinity());
  threshold.set_hi(7);
  v1::MorphologyStep hmax = Step(v1::MORPHOLOGY_OP_HMAX);
  hmax.set_h(2.5);
  hmax.set_connectivity(v1::CONNECTIVITY_26);
  v1::MorphologyStep small = Step(v1::MORPHOLOGY_OP_REMOVE_SMALL);
  small.set_min_voxels(9);
  small.set_iterations(1);
  for (const v1::MorphologyStep& s :
       {threshold, hmax, small, Step(v1::MORPHOLOGY_OP_RECONSTRUCT_ERODE),
        Step(v1::MORPHOLOGY_OP_KEEP_LARGEST)}) {
    *r.add_steps() = s;
  }
  const absl::StatusOr<MorphologyJob> job = ValidateMorphologyRequest(r, RequestLimits{});
  ASSERT_THAT(job, IsOk());
  ASSERT_EQ(job->steps.size(), 5u);
  EXPECT_EQ(job->steps[0].op, MorphOp::kThreshold);
  EXPECT_EQ(job->steps[0].hi, 7);
  EXPECT_EQ(job->steps[1].connectivity, Connectivity::k26);
  EXPECT_EQ(job->steps[1].h, 2.5);
  EXPECT_EQ(job->steps[2].min_voxels, 9);
  EXPECT_EQ(job->steps[3].iterations, 1);
  ASSERT_TRUE(job->marker.has_value());
  EXPECT_EQ(job->marker->field, "marker.image");
  // Steps without an element echo an empty one, so the list stays one per step.
  EXPECT_TRUE(job->resolved_elements.empty());
}

TEST(SegmentationStepValidationOk, AResidentInputIsCheckedOnceItsShapeIsKnown) {
  v1::MorphologyRequest r;
  r.mutable_input()->set_handle("labels-1");
  v1::MorphologyStep keep = Step(v1::MORPHOLOGY_OP_KEEP_LARGEST);
  keep.set_connectivity(v1::CONNECTIVITY_8);
  *r.add_steps() = keep;
  const absl::StatusOr<MorphologyJob> job = ValidateMorphologyRequest(r, RequestLimits{});
  ASSERT_THAT(job, IsOk());  // the handle's shape is not known yet
  const ImageView image{PixelType::kU32, Extent{8, 6, 1}, 1, nullptr};
  EXPECT_THAT(CheckMorphologyInput(image, *job), IsOk());
  const ImageView volume{PixelType::kU32, Extent{8, 6, 5}, 1, nullptr};
  const absl::Status status = CheckMorphologyInput(volume, *job);
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorFieldOf(status), "steps[0].connectivity");
}

v1::LabelRequest Label2D() {
  v1::LabelRequest r;
  *r.mutable_input()->mutable_image() = Image(v1::PIXEL_TYPE_U16, 9, 7, 0, 2);
  return r;
}

TEST(LabelValidation, RefusesEachBadFieldByName) {
  const struct {
    const char* name;
    std::function<void(v1::LabelRequest&)> mutate;
    const char* field;
  } cases[] = {
      {"no input", [](auto& r) { r.clear_input(); }, "input.source"},
      {"3D connectivity", [](auto& r) { r.set_connectivity(v1::CONNECTIVITY_6); }, "connectivity"},
      {"unknown connectivity",
       [](auto& r) { r.set_connectivity(static_cast<v1::Connectivity>(12)); }, "connectivity"},
      {"NaN lo", [](auto& r) { r.mutable_threshold()->set_lo(std::nan("")); }, "threshold.lo"},
      {"hi below lo",
       [](auto& r) {
         r.mutable_threshold()->set_lo(4);
         r.mutable_threshold()->set_hi(3);
       },
       "threshold.hi"},
      {"huge min_voxels", [](auto& r) { r.set_min_voxels(~std::uint64_t{0}); }, "min_voxels"},
      {"intensity of another size",
       [](auto& r) {
         *r.mutable_intensity()->mutable_image() = Image(v1::PIXEL_TYPE_F32, 9, 6, 0, 4);
       },
       "intensity"},
      {"colour input",
       [](auto& r) {
         v1::Image image = Image(v1::PIXEL_TYPE_U8, 9, 7, 0, 3);
         image.set_channels(3);
         *r.mutable_input()->mutable_image() = image;
       },
       "input.image"},
      {"shared-memory output",
       [](auto& r) { r.mutable_output()->mutable_shared_memory()->set_region("r"); },
       "output.shared_memory"},
  };
  for (const auto& c : cases) {
    v1::LabelRequest request = Label2D();
    c.mutate(request);
    const absl::StatusOr<LabelJob> job = ValidateLabelRequest(request, RequestLimits{});
    ASSERT_THAT(job, StatusIs(absl::StatusCode::kInvalidArgument)) << c.name;
    const std::string field = ErrorFieldOf(job.status());
    EXPECT_EQ(field, c.field) << c.name << ": " << job.status();
  }
}

TEST(LabelValidation, TakesEveryField) {
  v1::LabelRequest r = Label2D();
  r.set_connectivity(v1::CONNECTIVITY_8);
  r.mutable_threshold()->set_lo(2);
  r.mutable_threshold()->set_hi(2);
  r.set_min_voxels(4);
  *r.mutable_intensity()->mutable_image() = Image(v1::PIXEL_TYPE_F32, 9, 7, 0, 4);
  r.mutable_output()->set_keep_resident(true);
  const absl::StatusOr<LabelJob> job = ValidateLabelRequest(r, RequestLimits{});
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->spec.connectivity, Connectivity::k8);
  ASSERT_TRUE(job->spec.threshold.has_value());
  EXPECT_EQ((*job->spec.threshold)[1], 2);
  EXPECT_EQ(job->spec.min_voxels, 4);
  EXPECT_TRUE(job->intensity.has_value());
  EXPECT_TRUE(job->output.keep_resident);
}

v1::VolumeStreamHeader StreamHeader(std::initializer_list<v1::MorphologyStep> steps) {
  v1::VolumeStreamHeader h;
  v1::Image volume = Image(v1::PIXEL_TYPE_U16, 8, 6, 10, 2);
  volume.clear_data();
  *h.mutable_volume() = volume;
  for (const v1::MorphologyStep& s : steps) *h.mutable_morphology()->add_steps() = s;
  return h;
}

TEST(SegmentationStreamValidation, AMarkerMustBeResidentOrInSharedMemory) {
  v1::VolumeStreamHeader h = StreamHeader({Step(v1::MORPHOLOGY_OP_RECONSTRUCT_DILATE)});
  h.mutable_morphology()->mutable_marker()->set_handle("marker-1");
  EXPECT_THAT(ValidateVolumeStreamHeader(h, RequestLimits{}), IsOk());
  *h.mutable_morphology()->mutable_marker()->mutable_image() =
      Image(v1::PIXEL_TYPE_U16, 8, 6, 10, 2);
  const absl::StatusOr<VolumeStreamJob> inline_marker =
      ValidateVolumeStreamHeader(h, RequestLimits{});
  EXPECT_THAT(inline_marker, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorFieldOf(inline_marker.status()), "header.morphology.marker");
  h.mutable_morphology()->clear_marker();
  const absl::StatusOr<VolumeStreamJob> missing = ValidateVolumeStreamHeader(h, RequestLimits{});
  EXPECT_EQ(ErrorFieldOf(missing.status()), "header.morphology.marker");
  v1::MorphologyStep bad = Step(v1::MORPHOLOGY_OP_FILL_HOLES);
  bad.set_connectivity(v1::CONNECTIVITY_4);  // 2D connectivity on a volume
  const absl::StatusOr<VolumeStreamJob> two_d =
      ValidateVolumeStreamHeader(StreamHeader({bad}), RequestLimits{});
  EXPECT_EQ(ErrorFieldOf(two_d.status()), "header.morphology.steps[0].connectivity");
}

TEST(SegmentationStreamPlan, SlabsRunTheStepsBeforeTheFirstGlobalOne) {
  v1::MorphologyStep dilate = Step(v1::MORPHOLOGY_OP_DILATE);
  *dilate.mutable_element() = Box(3);
  dilate.mutable_element()->set_depth(5);  // reach 2
  v1::MorphologyStep threshold = Step(v1::MORPHOLOGY_OP_THRESHOLD);
  const absl::StatusOr<VolumeStreamJob> job = ValidateVolumeStreamHeader(
      StreamHeader({dilate, threshold, Step(v1::MORPHOLOGY_OP_FILL_HOLES), dilate}),
      RequestLimits{});
  ASSERT_THAT(job, IsOk());
  const auto [local, rest] = SplitAtFirstGlobalStep(job->steps);
  ASSERT_EQ(local.size(), 2u);
  EXPECT_EQ(local[1].op, MorphOp::kThreshold);  // local: pixel by pixel
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].op, MorphOp::kFillHoles);
  EXPECT_EQ(VolumeStreamZReach(*job), 2);  // the last dilation runs on the whole volume
}

TEST(SegmentationWork, GlobalStepsArePricedByTheirWorstCase) {
  MorphologyStep fill;
  fill.op = MorphOp::kFillHoles;
  MorphologyStep threshold;
  threshold.op = MorphOp::kThreshold;
  const Extent small{64, 64, 1};
  const Extent large{1024, 1024, 1};
  // Reconstruction's queue costs log2(pixels) per entry: more than linear in the size.
  const double ratio = SegmentationStepWork(large, fill) / SegmentationStepWork(small, fill);
  EXPECT_GT(ratio, 256.0);
  EXPECT_EQ(SegmentationStepWork(large, threshold), static_cast<double>(large.Pixels()));
  // More neighbours, more work.
  MorphologyStep fill26 = fill;
  fill26.connectivity = Connectivity::k26;
  const Extent volume{64, 64, 64};
  EXPECT_GT(SegmentationStepWork(volume, fill26), SegmentationStepWork(volume, fill));
  // A chain's work adds its global steps' to its passes'.
  MorphologyStep dilate;
  dilate.op = MorphOp::kDilate;
  EXPECT_EQ(MorphologyWork(small, {dilate, fill}, WorkModel::kCpuReference),
            MorphologyWork(small, {dilate}, WorkModel::kCpuReference) +
                SegmentationStepWork(small, fill));
  LabelSpec spec;
  EXPECT_GT(LabelWork(small, spec, true), LabelWork(small, spec, false));
}

}  // namespace
}  // namespace cuimg
