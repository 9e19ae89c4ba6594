// Validation is a pure function: each malformed request gets INVALID_ARGUMENT naming its field.
#include "server/validation/request_validation.h"

#include <gtest/gtest.h>

#include <functional>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

v1::MorphologyRequest ValidRequest() {
  v1::MorphologyRequest r;
  v1::Image* image = r.mutable_input()->mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_U8);
  image->set_width(4);
  image->set_height(3);
  image->set_data(std::string(12, '\x07'));
  v1::MorphologyStep* step = r.add_steps();
  step->set_op(v1::MORPHOLOGY_OP_DILATE);
  step->mutable_element()->set_shape(v1::ELEMENT_SHAPE_RECT);
  step->mutable_element()->set_width(3);
  step->mutable_element()->set_height(3);
  return r;
}

struct BadCase {
  const char* name;
  std::function<void(v1::MorphologyRequest&)> mutate;
  const char* field;
};

class MorphologyValidation : public ::testing::TestWithParam<BadCase> {};

TEST_P(MorphologyValidation, RejectsNamingTheField) {
  v1::MorphologyRequest request = ValidRequest();
  GetParam().mutate(request);
  EXPECT_THAT(ValidateMorphologyRequest(request, RequestLimits{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().field)));
}

const BadCase kBadCases[] = {
    {"NoInput", [](auto& r) { r.clear_input(); }, "input"},
    {"ZeroWidth", [](auto& r) { r.mutable_input()->mutable_image()->set_width(0); },
     "input.image.width"},
    {"ZeroHeight", [](auto& r) { r.mutable_input()->mutable_image()->set_height(0); },
     "input.image.height"},
    {"HugeWidth", [](auto& r) { r.mutable_input()->mutable_image()->set_width(70000); },
     "input.image.width"},
    {"NegativeWidthAsUint", [](auto& r) { r.mutable_input()->mutable_image()->set_width(-5); },
     "input.image.width"},
    {"HugeDepth", [](auto& r) { r.mutable_input()->mutable_image()->set_depth(1u << 20); },
     "input.image.depth"},
    {"TooManyPixels",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_width(65536);
       r.mutable_input()->mutable_image()->set_height(65536);
     },
     "max_pixels"},
    {"ShortData", [](auto& r) { r.mutable_input()->mutable_image()->set_data("abc"); },
     "input.image.data"},
    {"LongData", [](auto& r) { r.mutable_input()->mutable_image()->set_data(std::string(13, 'x')); },
     "input.image.data"},
    {"UnspecifiedPixelType",
     [](auto& r) { r.mutable_input()->mutable_image()->set_pixel_type(v1::PIXEL_TYPE_UNSPECIFIED); },
     "input.image.pixel_type"},
    {"UnknownPixelType",
     [](auto& r) { r.mutable_input()->mutable_image()->set_pixel_type(static_cast<v1::PixelType>(42)); },
     "input.image.pixel_type"},
    {"ThreeChannels",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_channels(3);
       r.mutable_input()->mutable_image()->set_data(std::string(36, 'x'));
     },
     "input.image"},
    {"NaNSpacing",
     [](auto& r) { r.mutable_input()->mutable_image()->mutable_spacing()->set_x_mm(NAN); },
     "input.image.spacing.x_mm"},
    {"EmptyHandle", [](auto& r) { r.mutable_input()->set_handle(""); }, "input.handle"},
    {"EmptyEncoded", [](auto& r) { r.mutable_input()->set_encoded(""); }, "input.encoded"},
    {"NoSteps", [](auto& r) { r.clear_steps(); }, "steps"},
    {"TooManySteps",
     [](auto& r) {
       for (int i = 0; i < 64; ++i) *r.add_steps() = r.steps(0);
     },
     "max_steps"},
    {"UnspecifiedOp", [](auto& r) { r.mutable_steps(0)->set_op(v1::MORPHOLOGY_OP_UNSPECIFIED); },
     "steps[0].op"},
    {"UnknownOp", [](auto& r) { r.mutable_steps(0)->set_op(static_cast<v1::MorphologyOp>(99)); },
     "steps[0].op"},
    {"UnspecifiedShape",
     [](auto& r) { r.mutable_steps(0)->mutable_element()->set_shape(v1::ELEMENT_SHAPE_UNSPECIFIED); },
     "steps[0].element.shape"},
    {"ElementTooWide", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_width(1024); },
     "steps[0].element.width"},
    {"ElementZeroHeight", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_height(0); },
     "steps[0].element.height"},
    {"ElementTooDeep", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_depth(5000); },
     "steps[0].element.depth"},
    {"AnchorOutside", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_anchor_x(3); },
     "steps[0].element.anchor_x"},
    {"AnchorZOutside2D", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_anchor_z(1); },
     "steps[0].element.anchor_z"},
    {"MaskOnRect", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_mask("123456789"); },
     "steps[0].element.mask"},
    {"CustomMaskWrongSize",
     [](auto& r) {
       r.mutable_steps(0)->mutable_element()->set_shape(v1::ELEMENT_SHAPE_CUSTOM);
       r.mutable_steps(0)->mutable_element()->set_mask("1234");
     },
     "steps[0].element.mask"},
    {"CustomMaskEmpty",
     [](auto& r) {
       r.mutable_steps(0)->mutable_element()->set_shape(v1::ELEMENT_SHAPE_CUSTOM);
       r.mutable_steps(0)->mutable_element()->set_mask(std::string(9, '\0'));
     },
     "steps[0].element.mask"},
    {"TooManyIterations", [](auto& r) { r.mutable_steps(0)->set_iterations(1001); },
     "steps[0].iterations"},
    {"UnknownBorder",
     [](auto& r) { r.mutable_steps(0)->set_border_mode(static_cast<v1::BorderMode>(7)); },
     "steps[0].border_mode"},
    {"InfiniteBorderOnU8",
     [](auto& r) {
       r.mutable_steps(0)->set_border_mode(v1::BORDER_MODE_CONSTANT);
       r.mutable_steps(0)->set_border_value(INFINITY);
     },
     "steps[0].border_value"},
    {"OmitWithoutResident", [](auto& r) { r.mutable_output()->set_omit_data(true); },
     "output.omit_data"},
    {"TtlWithoutResident", [](auto& r) { r.mutable_output()->set_ttl_seconds(5); },
     "output.ttl_seconds"},
    {"SecondStepBad",
     [](auto& r) {
       *r.add_steps() = r.steps(0);
       r.mutable_steps(1)->mutable_element()->set_width(0);
     },
     "steps[1].element.width"},
};

INSTANTIATE_TEST_SUITE_P(BadRequests, MorphologyValidation, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MorphologyValidationOk, AcceptsAValidRequestWithDefaults) {
  absl::StatusOr<MorphologyJob> job = ValidateMorphologyRequest(ValidRequest(), RequestLimits{});
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->steps.size(), 1u);
  EXPECT_EQ(job->steps[0].iterations, 1);
  EXPECT_EQ(job->steps[0].border, BorderMode::kNeutral);
  EXPECT_EQ(job->steps[0].element.anchor_x(), 1);
  EXPECT_EQ(job->input.extent, (Extent{4, 3, 1}));
}

TEST(MorphologyValidationOk, DetachedPixelsStandForTheImageData) {
  v1::MorphologyRequest request = ValidRequest();
  request.mutable_input()->mutable_image()->clear_data();
  const std::string pixels(12, '\x05');
  absl::StatusOr<MorphologyJob> job =
      ValidateMorphologyRequest(request, RequestLimits{}, absl::string_view(pixels));
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->input.bytes.data(), pixels.data());
  EXPECT_EQ(job->input.bytes.size(), 12u);
  const std::string short_pixels(11, '\x05');
  EXPECT_THAT(ValidateMorphologyRequest(request, RequestLimits{}, absl::string_view(short_pixels)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input.image.data: 11 bytes")));
  // A source that is not an inline image ignores them.
  request.mutable_input()->set_handle("h");
  job = ValidateMorphologyRequest(request, RequestLimits{}, absl::string_view(pixels));
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->input.kind, ImageInput::Kind::kHandle);
}

TEST(MorphologyValidationOk, AcceptsInfiniteBorderOnF32) {
  v1::MorphologyRequest r = ValidRequest();
  r.mutable_input()->mutable_image()->set_pixel_type(v1::PIXEL_TYPE_F32);
  r.mutable_input()->mutable_image()->set_data(std::string(48, '\0'));
  r.mutable_steps(0)->set_border_mode(v1::BORDER_MODE_CONSTANT);
  r.mutable_steps(0)->set_border_value(-INFINITY);
  EXPECT_THAT(ValidateMorphologyRequest(r, RequestLimits{}), IsOk());
}

TEST(MorphologyValidationOk, HonoursTheElementExtentLimit) {
  RequestLimits limits;
  limits.max_element_extent = 5;
  v1::MorphologyRequest r = ValidRequest();
  r.mutable_steps(0)->mutable_element()->set_width(7);
  EXPECT_THAT(ValidateMorphologyRequest(r, limits),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_element_extent")));
}

v1::DetectPedestriansRequest ValidDetectRequest() {
  v1::DetectPedestriansRequest r;
  v1::Image* image = r.mutable_input()->mutable_image();
  image->set_pixel_type(v1::PIXEL_TYPE_U8);
  image->set_width(70);
  image->set_height(130);
  image->set_channels(3);
  image->set_data(std::string(70 * 130 * 3, '\x07'));
  return r;
}

struct BadDetectCase {
  const char* name;
  std::function<void(v1::DetectPedestriansRequest&)> mutate;
  const char* field;
};

class DetectValidation : public ::testing::TestWithParam<BadDetectCase> {};

TEST_P(DetectValidation, RejectsNamingTheField) {
  v1::DetectPedestriansRequest request = ValidDetectRequest();
  GetParam().mutate(request);
  EXPECT_THAT(ValidateDetectRequest(request, RequestLimits{}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().field)));
}

const BadDetectCase kBadDetectCases[] = {
    {"NoInput", [](auto& r) { r.clear_input(); }, "input"},
    {"ShortData", [](auto& r) { r.mutable_input()->mutable_image()->set_data("x"); },
     "input.image.data"},
    {"TwoChannels",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_channels(2);
       r.mutable_input()->mutable_image()->set_data(std::string(70 * 130 * 2, '\0'));
     },
     "input.image: has 2 channels"},
    {"U16",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_pixel_type(v1::PIXEL_TYPE_U16);
       r.mutable_input()->mutable_image()->set_data(std::string(70 * 130 * 3 * 2, '\0'));
     },
     "input.image: is u16"},
    {"Volume",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_depth(2);
       r.mutable_input()->mutable_image()->set_data(std::string(70 * 130 * 3 * 2, '\0'));
     },
     "input.image: is a volume"},
    {"BadModelName", [](auto& r) { r.set_model("../etc/passwd"); }, "model"},
    {"NanThreshold", [](auto& r) { r.set_hit_threshold(NAN); }, "hit_threshold"},
    {"StrideNotMultipleOf8", [](auto& r) { r.set_win_stride(12); }, "win_stride"},
    {"StrideTooLarge", [](auto& r) { r.set_win_stride(72); }, "win_stride"},
    {"PaddingTooLarge", [](auto& r) { r.set_padding(300); }, "padding"},
    {"ScaleOne", [](auto& r) { r.set_scale(1.0); }, "scale"},
    {"ScaleTooLarge", [](auto& r) { r.set_scale(5.0); }, "scale"},
    {"ScaleInfinite", [](auto& r) { r.set_scale(INFINITY); }, "scale"},
    {"TooManyLevels", [](auto& r) { r.set_max_levels(65); }, "max_levels"},
    {"UnknownGrouping", [](auto& r) { r.set_grouping(static_cast<v1::Grouping>(9)); },
     "grouping"},
    {"GroupThresholdTooLarge", [](auto& r) { r.set_group_threshold(1001); }, "group_threshold"},
    {"NegativeEps", [](auto& r) { r.set_group_eps(-0.1); }, "group_eps"},
    {"EpsTooLarge", [](auto& r) { r.set_group_eps(5); }, "group_eps"},
};

INSTANTIATE_TEST_SUITE_P(All, DetectValidation, ::testing::ValuesIn(kBadDetectCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(DetectValidationOk, AppliesOpenCvDefaults) {
  absl::StatusOr<DetectJob> job = ValidateDetectRequest(ValidDetectRequest(), RequestLimits{});
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->model, "opencv_people_64x128");
  EXPECT_EQ(job->spec.win_stride, 8);
  EXPECT_EQ(job->spec.padding, 0);
  EXPECT_EQ(job->spec.scale, 1.05);
  EXPECT_EQ(job->spec.max_levels, 64);
  EXPECT_EQ(job->spec.hit_threshold, 0);
  EXPECT_EQ(job->spec.group_threshold, 2);
  EXPECT_EQ(job->spec.group_eps, 0.2);
  EXPECT_EQ(job->spec.grouping, DetectGrouping::kGroupRectangles);
  EXPECT_TRUE(job->gamma_from_model);
}

TEST(DetectValidationOk, TakesExplicitValues) {
  v1::DetectPedestriansRequest r = ValidDetectRequest();
  r.set_model("opencv_daimler_48x96");
  r.set_gamma_correction(false);
  r.set_group_threshold(0);
  r.set_grouping(v1::GROUPING_NONE);
  r.set_win_stride(16);
  r.set_padding(13);
  r.set_max_levels(3);
  absl::StatusOr<DetectJob> job = ValidateDetectRequest(r, RequestLimits{});
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->model, "opencv_daimler_48x96");
  EXPECT_FALSE(job->gamma_from_model);
  EXPECT_FALSE(job->spec.gamma_correction);
  EXPECT_EQ(job->spec.group_threshold, 0);
  EXPECT_EQ(job->spec.grouping, DetectGrouping::kNone);
  EXPECT_EQ(job->spec.win_stride, 16);
  EXPECT_EQ(job->spec.padding, 13);
  EXPECT_EQ(job->spec.max_levels, 3);
}

TEST(DetectValidationOk, DefaultLevelsRespectTheServerLimit) {
  RequestLimits limits;
  limits.max_pyramid_levels = 20;
  absl::StatusOr<DetectJob> job = ValidateDetectRequest(ValidDetectRequest(), limits);
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->spec.max_levels, 20);
}

}  // namespace
}  // namespace cuimg
