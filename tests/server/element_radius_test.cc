// Elements in millimetres: the resolution rule (element_radius.h) and how validation applies it
// to each kind of input, naming the field of every refusal.
#include "server/validation/element_radius.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "server/validation/request_validation.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

v1::StructuringElement Ellipse(double x, double y, double z) {
  v1::StructuringElement e;
  e.set_shape(v1::ELEMENT_SHAPE_ELLIPSE);
  e.mutable_radius()->set_x_mm(x);
  e.mutable_radius()->set_y_mm(y);
  e.mutable_radius()->set_z_mm(z);
  return e;
}

ElementFrame Frame(double x, double y, double z, bool volume = true) {
  ElementFrame f;
  f.spacing.set_x_mm(x);
  f.spacing.set_y_mm(y);
  f.spacing.set_z_mm(z);
  f.volume = volume;
  f.spacing_field = "input.image.spacing";
  return f;
}

// {width, height, depth} of the resolved element.
std::array<std::uint32_t, 3> Extents(const v1::StructuringElement& e, const ElementFrame& f,
                                     int max_extent = 1023) {
  absl::StatusOr<v1::StructuringElement> r = ResolveElementRadius(e, "el", f, max_extent);
  EXPECT_THAT(r.status(), IsOk());
  if (!r.ok()) return {0, 0, 0};
  EXPECT_FALSE(r->has_radius());
  EXPECT_EQ(r->shape(), e.shape());
  return {r->width(), r->height(), r->depth()};
}

using E = std::array<std::uint32_t, 3>;

TEST(ElementRadius, AnisotropicCtSpacing) {
  // 5 mm at 0.7 mm is 7.14 voxels -> 7 either side; at 2.5 mm it is 2.
  EXPECT_EQ(Extents(Ellipse(5, 5, 5), Frame(0.7, 0.7, 2.5)), (E{15, 15, 5}));
  EXPECT_EQ(Extents(Ellipse(5, 5, 10), Frame(0.7, 0.7, 2.5)), (E{15, 15, 9}));
}

TEST(ElementRadius, HalvesRoundUp) {
  EXPECT_EQ(Extents(Ellipse(6.25, 0.35, 1.25), Frame(2.5, 0.7, 2.5)), (E{7, 3, 3}));
  // 0.3 / 0.2 is 1.4999999999999998 in double: still the half the user wrote.
  EXPECT_EQ(Extents(Ellipse(0.3, 0.3, 0), Frame(0.2, 0.2, 1)), (E{5, 5, 0}));
  // Just under a half rounds down.
  EXPECT_EQ(Extents(Ellipse(0.299, 6.24, 0), Frame(0.2, 2.5, 1)), (E{3, 5, 0}));
}

TEST(ElementRadius, UnderHalfAVoxelIsExtentOne) {
  EXPECT_EQ(Extents(Ellipse(0.34, 0.01, 1.2), Frame(0.7, 0.7, 2.5)), (E{1, 1, 1}));
  // A zero radius needs no spacing on its axis.
  EXPECT_EQ(Extents(Ellipse(0, 2, 0), Frame(0, 1, 0)), (E{1, 5, 0}));
}

TEST(ElementRadius, ZeroZOrATwoDimensionalInputMakesATwoDimensionalElement) {
  EXPECT_EQ(Extents(Ellipse(1, 1, 0), Frame(1, 1, 1)), (E{3, 3, 0}));
  // On an image, the ball's section: z_mm and the z spacing are not used.
  EXPECT_EQ(Extents(Ellipse(1, 1, 5), Frame(1, 1, 0, /*volume=*/false)), (E{3, 3, 0}));
}

TEST(ElementRadius, ZeroSpacingIsRefusedNamingTheSpacingField) {
  EXPECT_THAT(ResolveElementRadius(Ellipse(5, 5, 5), "steps[0].element", Frame(0.7, 0.7, 0), 1023),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("input.image.spacing.z_mm: is 0"),
                             HasSubstr("steps[0].element.radius.z_mm"))));
  EXPECT_THAT(
      ResolveElementRadius(Ellipse(5, 5, 0), "steps[0].element", Frame(0, 0, 0), 1023),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input.image.spacing.x_mm: is 0")));
}

TEST(ElementRadius, NoSpacingAtAllSaysWhy) {
  ElementFrame f;
  f.why_no_spacing = "input.encoded (PNG/JPEG) carries none";
  EXPECT_THAT(ResolveElementRadius(Ellipse(5, 5, 0), "steps[0].element", f, 1023),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("steps[0].element.radius.x_mm"),
                             HasSubstr("input.encoded (PNG/JPEG) carries none"))));
}

TEST(ElementRadius, ExtentOverTheCapIsRefusedNamingTheRadius) {
  // 2.5 * 204.5 mm -> k = 82 (204.5 / 2.5 = 81.8): extent 165 > 101.
  EXPECT_THAT(
      ResolveElementRadius(Ellipse(1, 1, 204.5), "steps[2].element", Frame(0.7, 0.7, 2.5), 101),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("steps[2].element.radius.z_mm"), HasSubstr("165"),
                     HasSubstr("max_element_extent 101"))));
  // The largest allowed extent passes; a ratio past any integer does not overflow.
  EXPECT_EQ(Extents(Ellipse(50, 1, 1), Frame(1, 1, 1), 101), (E{101, 3, 3}));
  EXPECT_THAT(ResolveElementRadius(Ellipse(1e300, 1, 1), "el", Frame(1e-300, 1, 1), 1023),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("el.radius.x_mm")));
}

TEST(ElementRadius, RefusesWhatCannotGoWithARadius) {
  const ElementFrame f = Frame(1, 1, 1);
  auto refused = [&](v1::StructuringElement e, const char* field) {
    EXPECT_THAT(ResolveElementRadius(e, "el", f, 1023),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(field)))
        << field;
  };
  v1::StructuringElement e = Ellipse(1, 1, 1);
  e.mutable_radius()->set_y_mm(-1);
  refused(e, "el.radius.y_mm");
  e = Ellipse(1, 1, std::nan(""));
  refused(e, "el.radius.z_mm");
  e = Ellipse(1, 1, 1);
  e.set_width(3);
  refused(e, "el.width");
  e = Ellipse(1, 1, 1);
  e.set_anchor_y(0);
  refused(e, "el.anchor_y");
  e = Ellipse(1, 1, 1);
  e.set_shape(v1::ELEMENT_SHAPE_CUSTOM);
  refused(e, "el.radius");
}

v1::MorphologyRequest VolumeRequest(double z_spacing) {
  v1::MorphologyRequest r;
  v1::Image* image = r.mutable_input()->mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_U8);
  image->set_width(4);
  image->set_height(3);
  image->set_depth(2);
  image->set_data(std::string(24, '\x07'));
  image->mutable_spacing()->set_x_mm(0.7);
  image->mutable_spacing()->set_y_mm(0.7);
  image->mutable_spacing()->set_z_mm(z_spacing);
  v1::MorphologyStep* voxels = r.add_steps();
  voxels->set_op(v1::MORPHOLOGY_OP_ERODE);
  voxels->mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
  voxels->mutable_element()->set_width(3);
  voxels->mutable_element()->set_height(1);
  v1::MorphologyStep* mm = r.add_steps();
  mm->set_op(v1::MORPHOLOGY_OP_DILATE);
  *mm->mutable_element() = Ellipse(5, 5, 5);
  return r;
}

TEST(ElementRadiusValidation, ResolvesAgainstTheRequestsSpacingAndReportsEveryStep) {
  absl::StatusOr<MorphologyJob> job =
      ValidateMorphologyRequest(VolumeRequest(2.5), RequestLimits{});
  ASSERT_THAT(job.status(), IsOk());
  ASSERT_EQ(job->resolved_elements.size(), 2u);
  EXPECT_EQ(job->resolved_elements[0].width(), 3u);
  EXPECT_EQ(job->resolved_elements[1].width(), 15u);
  EXPECT_EQ(job->resolved_elements[1].depth(), 5u);
  // The step runs with the resolved element.
  EXPECT_EQ(job->steps[1].element.depth(), 5);
  EXPECT_EQ(job->steps[1].element.width(), 15);
}

TEST(ElementRadiusValidation, VoxelOnlyChainsReportNothing) {
  v1::MorphologyRequest r = VolumeRequest(2.5);
  r.mutable_steps()->RemoveLast();
  absl::StatusOr<MorphologyJob> job = ValidateMorphologyRequest(r, RequestLimits{});
  ASSERT_THAT(job.status(), IsOk());
  EXPECT_TRUE(job->resolved_elements.empty());
}

TEST(ElementRadiusValidation, NamesTheFieldsOfTheRequest) {
  EXPECT_THAT(ValidateMorphologyRequest(VolumeRequest(0), RequestLimits{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("input.image.spacing.z_mm"),
                             HasSubstr("steps[1].element.radius.z_mm"))));
  RequestLimits small;
  small.max_element_extent = 9;
  EXPECT_THAT(
      ValidateMorphologyRequest(VolumeRequest(2.5), small),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("steps[1].element.radius.x_mm")));
  v1::MorphologyRequest encoded = VolumeRequest(2.5);
  encoded.mutable_input()->set_encoded("\x89PNG");
  EXPECT_THAT(
      ValidateMorphologyRequest(encoded, RequestLimits{}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("steps[1].element.radius.x_mm"), HasSubstr("input.encoded"))));
}

TEST(ElementRadiusValidation, AResidentInputWaitsForItsObjectsSpacing) {
  v1::MorphologyRequest r = VolumeRequest(2.5);
  r.mutable_input()->set_handle("h");
  absl::StatusOr<MorphologyJob> job = ValidateMorphologyRequest(r, RequestLimits{});
  ASSERT_THAT(job.status(), IsOk());
  EXPECT_TRUE(job->steps_await_spacing);
  EXPECT_TRUE(job->steps.empty());
  v1::Spacing spacing;
  spacing.set_x_mm(1);
  spacing.set_y_mm(2.5);
  // The object's spacing is no request field: the error names the radius that needs it.
  const absl::Status unknown_z =
      ResolveMorphologyOnResident(r, spacing, Extent{4, 3, 2}, RequestLimits{}, &*job);
  EXPECT_EQ(ErrorReasonOf(unknown_z), "INVALID_COMBINATION");
  EXPECT_EQ(ErrorFieldOf(unknown_z), "steps[1].element.radius.z_mm");
  EXPECT_THAT(unknown_z,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("input.handle's spacing.z_mm"), HasSubstr("is 0"))));
  spacing.set_z_mm(1);
  ASSERT_THAT(ResolveMorphologyOnResident(r, spacing, Extent{4, 3, 2}, RequestLimits{}, &*job),
              IsOk());
  EXPECT_FALSE(job->steps_await_spacing);
  ASSERT_EQ(job->steps.size(), 2u);
  EXPECT_EQ(job->resolved_elements[1].width(), 11u);
  EXPECT_EQ(job->resolved_elements[1].height(), 5u);
  EXPECT_EQ(job->resolved_elements[1].depth(), 11u);
}

TEST(ElementRadiusValidation, StreamedVolumesResolveAgainstTheHeader) {
  v1::VolumeStreamHeader header;
  v1::MorphologyRequest r = VolumeRequest(2.5);
  *header.mutable_volume() = r.input().image();
  header.mutable_volume()->clear_data();
  r.clear_input();
  *header.mutable_morphology() = r;
  absl::StatusOr<VolumeStreamJob> job = ValidateVolumeStreamHeader(header, RequestLimits{});
  ASSERT_THAT(job.status(), IsOk());
  ASSERT_EQ(job->resolved_elements.size(), 2u);
  EXPECT_EQ(job->resolved_elements[1].depth(), 5u);
  header.mutable_volume()->mutable_spacing()->set_x_mm(0);
  EXPECT_THAT(ValidateVolumeStreamHeader(header, RequestLimits{}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("header.volume.spacing.x_mm"),
                             HasSubstr("header.morphology.steps[1].element.radius.x_mm"))));
}

}  // namespace
}  // namespace cuimg
