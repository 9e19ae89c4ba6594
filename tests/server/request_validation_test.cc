// Validation is a pure function: each malformed request gets INVALID_ARGUMENT (NOT_FOUND for an
// unknown model) with the reason and field set where it was raised (cuimg/common/error.h); the
// field resolves in the request message (tests/testing/error_contract.h).
#include "server/validation/request_validation.h"

#include <gtest/gtest.h>

#include <functional>
#include <tuple>

#include "cuimg/v1/resident.pb.h"
#include "tests/testing/error_contract.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::ErrorIs;
using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// The refusal keeps the error contract for `request` (the message its field is a path of).
void ExpectContract(const absl::Status& status, const google::protobuf::Message& request,
                    const std::string& name) {
  EXPECT_EQ(::cuimg::testing::ErrorContractError(status, request, true), "")
      << name << ": " << status;
}

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
  const char* reason;
  const char* field;
};

class MorphologyValidation : public ::testing::TestWithParam<BadCase> {};

TEST_P(MorphologyValidation, RejectsWithTheReasonAndTheField) {
  v1::MorphologyRequest request = ValidRequest();
  GetParam().mutate(request);
  const absl::Status status = ValidateMorphologyRequest(request, RequestLimits{}).status();
  EXPECT_THAT(status, ErrorIs(kInvalid, GetParam().reason, GetParam().field));
  ExpectContract(status, request, GetParam().name);
}

const BadCase kBadCases[] = {
    {"NoInput", [](auto& r) { r.clear_input(); }, "FIELD_REQUIRED", "input.source"},
    {"ZeroWidth", [](auto& r) { r.mutable_input()->mutable_image()->set_width(0); },
     "VALUE_OUT_OF_RANGE", "input.image.width"},
    {"ZeroHeight", [](auto& r) { r.mutable_input()->mutable_image()->set_height(0); },
     "VALUE_OUT_OF_RANGE", "input.image.height"},
    {"HugeWidth", [](auto& r) { r.mutable_input()->mutable_image()->set_width(70000); },
     "LIMIT_EXCEEDED", "input.image.width"},
    {"NegativeWidthAsUint", [](auto& r) { r.mutable_input()->mutable_image()->set_width(-5); },
     "LIMIT_EXCEEDED", "input.image.width"},
    {"HugeDepth", [](auto& r) { r.mutable_input()->mutable_image()->set_depth(1u << 20); },
     "LIMIT_EXCEEDED", "input.image.depth"},
    {"TooManyPixels",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_width(65536);
       r.mutable_input()->mutable_image()->set_height(65536);
     },
     "LIMIT_EXCEEDED", "input.image"},
    {"ShortData", [](auto& r) { r.mutable_input()->mutable_image()->set_data("abc"); },
     "DATA_SIZE_MISMATCH", "input.image.data"},
    {"LongData",
     [](auto& r) { r.mutable_input()->mutable_image()->set_data(std::string(13, 'x')); },
     "DATA_SIZE_MISMATCH", "input.image.data"},
    {"UnspecifiedPixelType",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_pixel_type(v1::PIXEL_TYPE_UNSPECIFIED);
     },
     "FIELD_REQUIRED", "input.image.pixel_type"},
    {"UnknownPixelType",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_pixel_type(static_cast<v1::PixelType>(42));
     },
     "UNKNOWN_ENUM_VALUE", "input.image.pixel_type"},
    {"ThreeChannels",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_channels(3);
       r.mutable_input()->mutable_image()->set_data(std::string(36, 'x'));
     },
     "UNSUPPORTED_IMAGE_SHAPE", "input.image"},
    {"NaNSpacing",
     [](auto& r) { r.mutable_input()->mutable_image()->mutable_spacing()->set_x_mm(NAN); },
     "VALUE_OUT_OF_RANGE", "input.image.spacing.x_mm"},
    {"EmptyHandle", [](auto& r) { r.mutable_input()->set_handle(""); }, "INVALID_FORMAT",
     "input.handle"},
    {"EmptyEncoded", [](auto& r) { r.mutable_input()->set_encoded(""); }, "FIELD_REQUIRED",
     "input.encoded"},
    {"NoSteps", [](auto& r) { r.clear_steps(); }, "FIELD_REQUIRED", "steps"},
    {"TooManySteps",
     [](auto& r) {
       for (int i = 0; i < 64; ++i) *r.add_steps() = r.steps(0);
     },
     "LIMIT_EXCEEDED", "steps"},
    {"UnspecifiedOp", [](auto& r) { r.mutable_steps(0)->set_op(v1::MORPHOLOGY_OP_UNSPECIFIED); },
     "FIELD_REQUIRED", "steps[0].op"},
    {"UnknownOp", [](auto& r) { r.mutable_steps(0)->set_op(static_cast<v1::MorphologyOp>(99)); },
     "UNKNOWN_ENUM_VALUE", "steps[0].op"},
    {"UnspecifiedShape",
     [](auto& r) {
       r.mutable_steps(0)->mutable_element()->set_shape(v1::ELEMENT_SHAPE_UNSPECIFIED);
     },
     "FIELD_REQUIRED", "steps[0].element.shape"},
    {"ElementTooWide", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_width(1024); },
     "ELEMENT_TOO_LARGE", "steps[0].element.width"},
    {"ElementZeroHeight", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_height(0); },
     "VALUE_OUT_OF_RANGE", "steps[0].element.height"},
    {"ElementTooDeep", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_depth(5000); },
     "ELEMENT_TOO_LARGE", "steps[0].element.depth"},
    {"AnchorOutside", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_anchor_x(3); },
     "VALUE_OUT_OF_RANGE", "steps[0].element.anchor_x"},
    {"AnchorZOutside2D", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_anchor_z(1); },
     "VALUE_OUT_OF_RANGE", "steps[0].element.anchor_z"},
    {"MaskOnRect", [](auto& r) { r.mutable_steps(0)->mutable_element()->set_mask("123456789"); },
     "INVALID_COMBINATION", "steps[0].element.mask"},
    {"CustomMaskWrongSize",
     [](auto& r) {
       r.mutable_steps(0)->mutable_element()->set_shape(v1::ELEMENT_SHAPE_CUSTOM);
       r.mutable_steps(0)->mutable_element()->set_mask("1234");
     },
     "DATA_SIZE_MISMATCH", "steps[0].element.mask"},
    {"CustomMaskEmpty",
     [](auto& r) {
       r.mutable_steps(0)->mutable_element()->set_shape(v1::ELEMENT_SHAPE_CUSTOM);
       r.mutable_steps(0)->mutable_element()->set_mask(std::string(9, '\0'));
     },
     "VALUE_OUT_OF_RANGE", "steps[0].element.mask"},
    {"TooManyIterations", [](auto& r) { r.mutable_steps(0)->set_iterations(1001); },
     "LIMIT_EXCEEDED", "steps[0].iterations"},
    {"UnknownBorder",
     [](auto& r) { r.mutable_steps(0)->set_border_mode(static_cast<v1::BorderMode>(7)); },
     "UNKNOWN_ENUM_VALUE", "steps[0].border_mode"},
    {"InfiniteBorderOnU8",
     [](auto& r) {
       r.mutable_steps(0)->set_border_mode(v1::BORDER_MODE_CONSTANT);
       r.mutable_steps(0)->set_border_value(INFINITY);
     },
     "VALUE_OUT_OF_RANGE", "steps[0].border_value"},
    {"OmitWithoutResident", [](auto& r) { r.mutable_output()->set_omit_data(true); },
     "INVALID_COMBINATION", "output.omit_data"},
    {"TtlWithoutResident", [](auto& r) { r.mutable_output()->set_ttl_seconds(5); },
     "INVALID_COMBINATION", "output.ttl_seconds"},
    {"SecondStepBad",
     [](auto& r) {
       *r.add_steps() = r.steps(0);
       r.mutable_steps(1)->mutable_element()->set_width(0);
     },
     "VALUE_OUT_OF_RANGE", "steps[1].element.width"},
    {"RadiusOnEncoded",
     [](auto& r) {
       r.mutable_input()->set_encoded("png");
       v1::StructuringElement* e = r.mutable_steps(0)->mutable_element();
       e->clear_width();
       e->clear_height();
       e->mutable_radius()->set_x_mm(1);
     },
     "INVALID_COMBINATION", "steps[0].element.radius.x_mm"},
    {"RadiusWithoutSpacing",
     [](auto& r) {
       v1::StructuringElement* e = r.mutable_steps(0)->mutable_element();
       e->clear_width();
       e->clear_height();
       e->mutable_radius()->set_x_mm(1);
     },
     "FIELD_REQUIRED", "input.image.spacing.x_mm"},
    {"RadiusBesideWidth",
     [](auto& r) { r.mutable_steps(0)->mutable_element()->mutable_radius()->set_x_mm(1); },
     "INVALID_COMBINATION", "steps[0].element.width"},
    {"RadiusOverTheExtent",
     [](auto& r) {
       r.mutable_input()->mutable_image()->mutable_spacing()->set_x_mm(0.001);
       r.mutable_input()->mutable_image()->mutable_spacing()->set_y_mm(1);
       v1::StructuringElement* e = r.mutable_steps(0)->mutable_element();
       e->clear_width();
       e->clear_height();
       e->mutable_radius()->set_x_mm(5);
     },
     "ELEMENT_TOO_LARGE", "steps[0].element.radius.x_mm"},
    {"SharedMemoryWithoutShape",
     [](auto& r) { r.mutable_input()->mutable_shared_memory()->set_region("r"); }, "FIELD_REQUIRED",
     "input.shared_memory.image"},
    {"SharedMemoryWithData",
     [](auto& r) {
       v1::Image image = r.input().image();
       r.mutable_input()->mutable_shared_memory()->set_region("r");
       *r.mutable_input()->mutable_shared_memory()->mutable_image() = image;
     },
     "INVALID_COMBINATION", "input.shared_memory.image.data"},
    {"SharedMemoryWithoutRegion", [](auto& r) { r.mutable_input()->mutable_shared_memory(); },
     "INVALID_FORMAT", "input.shared_memory.region"},
    {"SharedMemoryOutputKeptResident",
     [](auto& r) {
       r.mutable_output()->set_keep_resident(true);
       r.mutable_output()->mutable_shared_memory()->set_region("r");
     },
     "INVALID_COMBINATION", "output.shared_memory"},
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
  EXPECT_THAT(
      ValidateMorphologyRequest(request, RequestLimits{}, absl::string_view(short_pixels)),
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

// Two in-memory models: the default (gamma on) and one with gamma off.
const ModelRegistry& Models() {
  static const ModelRegistry* const models = [] {
    auto* registry = new ModelRegistry();
    for (const auto& [name, width, height, gamma] :
         {std::tuple<const char*, int, int, bool>{kDefaultDetectorModel, 64, 128, true},
          {"small_48x96", 48, 96, false}}) {
      HogModel model;
      model.name = name;
      model.window_width = width;
      model.window_height = height;
      model.gamma_correction = gamma;
      model.weights.assign(model.DescriptorSize(), 0.5f);
      EXPECT_THAT(registry->Add(std::move(model)), IsOk());
    }
    return registry;
  }();
  return *models;
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
  const char* reason;
  const char* field;
  const char* message;  // a part of it
  absl::StatusCode code = absl::StatusCode::kInvalidArgument;
};

class DetectValidation : public ::testing::TestWithParam<BadDetectCase> {};

TEST_P(DetectValidation, RejectsWithTheReasonAndTheField) {
  v1::DetectPedestriansRequest request = ValidDetectRequest();
  GetParam().mutate(request);
  const absl::Status status = ValidateDetectRequest(request, RequestLimits{}, Models()).status();
  EXPECT_THAT(status, ErrorIs(GetParam().code, GetParam().reason, GetParam().field));
  EXPECT_THAT(status.message(), HasSubstr(GetParam().message));
  ExpectContract(status, request, GetParam().name);
}

const BadDetectCase kBadDetectCases[] = {
    {"NoInput", [](auto& r) { r.clear_input(); }, "FIELD_REQUIRED", "input.source", "input"},
    {"ShortData", [](auto& r) { r.mutable_input()->mutable_image()->set_data("x"); },
     "DATA_SIZE_MISMATCH", "input.image.data", "input.image.data"},
    {"TwoChannels",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_channels(2);
       r.mutable_input()->mutable_image()->set_data(std::string(70 * 130 * 2, '\0'));
     },
     "UNSUPPORTED_IMAGE_SHAPE", "input.image", "input.image: has 2 channels"},
    {"U16",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_pixel_type(v1::PIXEL_TYPE_U16);
       r.mutable_input()->mutable_image()->set_data(std::string(70 * 130 * 3 * 2, '\0'));
     },
     "UNSUPPORTED_PIXEL_TYPE", "input.image", "input.image: is u16"},
    {"Volume",
     [](auto& r) {
       r.mutable_input()->mutable_image()->set_depth(2);
       r.mutable_input()->mutable_image()->set_data(std::string(70 * 130 * 3 * 2, '\0'));
     },
     "UNSUPPORTED_IMAGE_SHAPE", "input.image", "input.image: is a volume"},
    // Any name not loaded, a path too, is NOT_FOUND, before the other fields are read.
    {"PathAsModel", [](auto& r) { r.set_model("../etc/passwd"); }, "MODEL_NOT_FOUND", "model",
     "model: '../etc/passwd'", absl::StatusCode::kNotFound},
    {"UnknownModelBeforeBadFields",
     [](auto& r) {
       r.set_model("nope");
       r.set_win_stride(12);
       r.clear_input();
     },
     "MODEL_NOT_FOUND", "model",
     "model: 'nope' is not loaded (loaded: ", absl::StatusCode::kNotFound},
    {"StrideOverInt", [](auto& r) { r.set_win_stride(4000000000u); }, "VALUE_OUT_OF_RANGE",
     "win_stride", "win_stride: 4000000000 is too large"},
    {"PaddingOverInt", [](auto& r) { r.set_padding(4000000000u); }, "VALUE_OUT_OF_RANGE", "padding",
     "padding: 4000000000"},
    {"NanThreshold", [](auto& r) { r.set_hit_threshold(NAN); }, "VALUE_OUT_OF_RANGE",
     "hit_threshold", "hit_threshold"},
    {"StrideNotMultipleOf8", [](auto& r) { r.set_win_stride(12); }, "VALUE_OUT_OF_RANGE",
     "win_stride", "win_stride"},
    {"StrideTooLarge", [](auto& r) { r.set_win_stride(72); }, "VALUE_OUT_OF_RANGE", "win_stride",
     "win_stride"},
    {"PaddingTooLarge", [](auto& r) { r.set_padding(300); }, "VALUE_OUT_OF_RANGE", "padding",
     "padding"},
    {"ScaleOne", [](auto& r) { r.set_scale(1.0); }, "VALUE_OUT_OF_RANGE", "scale", "scale"},
    {"ScaleTooLarge", [](auto& r) { r.set_scale(5.0); }, "VALUE_OUT_OF_RANGE", "scale", "scale"},
    {"ScaleInfinite", [](auto& r) { r.set_scale(INFINITY); }, "VALUE_OUT_OF_RANGE", "scale",
     "scale"},
    {"TooManyLevels", [](auto& r) { r.set_max_levels(65); }, "LIMIT_EXCEEDED", "max_levels",
     "max_levels"},
    {"UnknownGrouping", [](auto& r) { r.set_grouping(static_cast<v1::Grouping>(9)); },
     "UNKNOWN_ENUM_VALUE", "grouping", "grouping"},
    {"GroupThresholdTooLarge", [](auto& r) { r.set_group_threshold(1001); }, "VALUE_OUT_OF_RANGE",
     "group_threshold", "group_threshold"},
    {"NegativeEps", [](auto& r) { r.set_group_eps(-0.1); }, "VALUE_OUT_OF_RANGE", "group_eps",
     "group_eps"},
    {"EpsTooLarge", [](auto& r) { r.set_group_eps(5); }, "VALUE_OUT_OF_RANGE", "group_eps",
     "group_eps"},
};

INSTANTIATE_TEST_SUITE_P(All, DetectValidation, ::testing::ValuesIn(kBadDetectCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(DetectValidationOk, AppliesOpenCvDefaults) {
  absl::StatusOr<DetectJob> job =
      ValidateDetectRequest(ValidDetectRequest(), RequestLimits{}, Models());
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->model, Models().Find("opencv_people_64x128"));
  EXPECT_EQ(job->spec.win_stride, 8);
  EXPECT_EQ(job->spec.padding, 0);
  EXPECT_EQ(job->spec.scale, 1.05);
  EXPECT_EQ(job->spec.max_levels, 64);
  EXPECT_EQ(job->spec.hit_threshold, 0);
  EXPECT_EQ(job->spec.group_threshold, 2);
  EXPECT_EQ(job->spec.group_eps, 0.2);
  EXPECT_EQ(job->spec.grouping, DetectGrouping::kGroupRectangles);
  EXPECT_TRUE(job->spec.gamma_correction);  // the model's
}

TEST(DetectValidationOk, TakesExplicitValues) {
  v1::DetectPedestriansRequest r = ValidDetectRequest();
  r.set_model("small_48x96");
  r.set_gamma_correction(true);
  r.set_group_threshold(0);
  r.set_grouping(v1::GROUPING_NONE);
  r.set_win_stride(16);
  r.set_padding(13);
  r.set_max_levels(3);
  absl::StatusOr<DetectJob> job = ValidateDetectRequest(r, RequestLimits{}, Models());
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->model, Models().Find("small_48x96"));
  EXPECT_TRUE(job->spec.gamma_correction);  // the request's over the model's
  EXPECT_EQ(job->spec.group_threshold, 0);
  EXPECT_EQ(job->spec.grouping, DetectGrouping::kNone);
  EXPECT_EQ(job->spec.win_stride, 16);
  EXPECT_EQ(job->spec.padding, 13);
  EXPECT_EQ(job->spec.max_levels, 3);
}

TEST(DetectValidationOk, UnsetGammaIsTheModels) {
  v1::DetectPedestriansRequest r = ValidDetectRequest();
  r.set_model("small_48x96");
  absl::StatusOr<DetectJob> job = ValidateDetectRequest(r, RequestLimits{}, Models());
  ASSERT_THAT(job, IsOk());
  EXPECT_FALSE(job->spec.gamma_correction);
}

TEST(DetectValidationOk, DefaultLevelsRespectTheServerLimit) {
  RequestLimits limits;
  limits.max_pyramid_levels = 20;
  absl::StatusOr<DetectJob> job = ValidateDetectRequest(ValidDetectRequest(), limits, Models());
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->spec.max_levels, 20);
}

// A table for each remaining validator: a valid request, then one mutation per row, each refused
// with its reason and field, its message holding `message`.
template <typename Request>
struct Row {
  const char* name;
  std::function<void(Request&)> mutate;
  const char* reason;
  const char* field;
  const char* message;
};

v1::Image* GrayImage(v1::Image* image, int width = 16, int height = 12) {
  image->set_pixel_type(v1::PIXEL_TYPE_U8);
  image->set_width(width);
  image->set_height(height);
  image->set_data(std::string(width * height, '\x07'));
  return image;
}

v1::GradientRequest ValidGradientRequest() {
  v1::GradientRequest r;
  GrayImage(r.mutable_input()->mutable_image());
  return r;
}

TEST(GradientValidation, Table) {
  ASSERT_THAT(ValidateGradientRequest(ValidGradientRequest(), RequestLimits{}), IsOk());
  const Row<v1::GradientRequest> rows[] = {
      {"no input", [](auto& r) { r.clear_input(); }, "FIELD_REQUIRED", "input.source",
       "input.source: one of"},
      {"even kernel", [](auto& r) { r.set_kernel_length(4); }, "VALUE_OUT_OF_RANGE",
       "kernel_length", "kernel_length: 4"},
      {"kernel 1", [](auto& r) { r.set_kernel_length(1); }, "VALUE_OUT_OF_RANGE", "kernel_length",
       "kernel_length: 1"},
      // The kernel's maximum, whatever it is: the edge does not repeat it.
      {"kernel over the max", [](auto& r) { r.set_kernel_length(kMaxGradientKernelLength + 2); },
       "VALUE_OUT_OF_RANGE", "kernel_length", "kernel_length: "},
      {"kernel over int", [](auto& r) { r.set_kernel_length(4000000001u); }, "VALUE_OUT_OF_RANGE",
       "kernel_length", "kernel_length: 4000000001 is too large"},
      {"negative sigma", [](auto& r) { r.set_sigma(-1); }, "VALUE_OUT_OF_RANGE", "sigma",
       "sigma: -1"},
      {"NaN sigma", [](auto& r) { r.set_sigma(NAN); }, "VALUE_OUT_OF_RANGE", "sigma", "sigma: nan"},
      {"huge sigma", [](auto& r) { r.set_sigma(kMaxGradientSigma * 2); }, "VALUE_OUT_OF_RANGE",
       "sigma", "sigma: "},
      {"two channels",
       [](auto& r) {
         r.mutable_input()->mutable_image()->set_channels(2);
         r.mutable_input()->mutable_image()->set_data(std::string(16 * 12 * 2, '\0'));
       },
       "UNSUPPORTED_IMAGE_SHAPE", "input.image", "input.image: has 2 channels"},
      {"shared-memory output",
       [](auto& r) { r.mutable_output()->mutable_shared_memory()->set_region("r"); },
       "INVALID_COMBINATION", "output.shared_memory", "output.shared_memory: Gradient returns"},
  };
  for (const auto& row : rows) {
    v1::GradientRequest r = ValidGradientRequest();
    row.mutate(r);
    const absl::Status status = ValidateGradientRequest(r, RequestLimits{}).status();
    EXPECT_THAT(status, ErrorIs(kInvalid, row.reason, row.field)) << row.name;
    EXPECT_THAT(status.message(), HasSubstr(row.message)) << row.name;
    ExpectContract(status, r, row.name);
  }
}

TEST(GradientValidation, KeepsTheKernelsMaximumAndDefault) {
  v1::GradientRequest r = ValidGradientRequest();
  r.set_kernel_length(kMaxGradientKernelLength);
  EXPECT_THAT(ValidateGradientRequest(r, RequestLimits{}), IsOk());
  absl::StatusOr<GradientJob> job =
      ValidateGradientRequest(ValidGradientRequest(), RequestLimits{});
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(job->spec.kernel_length, kDefaultGradientKernelLength);
}

v1::PyramidRequest ValidPyramidRequest() {
  v1::PyramidRequest r;
  GrayImage(r.mutable_input()->mutable_image(), 64, 48);
  return r;
}

TEST(PyramidValidation, Table) {
  ASSERT_THAT(ValidatePyramidRequest(ValidPyramidRequest(), RequestLimits{}), IsOk());
  RequestLimits limits;
  const Row<v1::PyramidRequest> rows[] = {
      {"no input", [](auto& r) { r.clear_input(); }, "FIELD_REQUIRED", "input.source",
       "input.source: one of"},
      {"too many levels",
       [&](auto& r) { r.set_levels(static_cast<std::uint32_t>(limits.max_pyramid_levels) + 1); },
       "LIMIT_EXCEEDED", "levels", "levels: "},
      {"ratio 1", [](auto& r) { r.set_ratio(1.0); }, "VALUE_OUT_OF_RANGE", "ratio", "ratio: 1"},
      {"ratio NaN", [](auto& r) { r.set_ratio(NAN); }, "VALUE_OUT_OF_RANGE", "ratio", "ratio: nan"},
      {"min_width over max_side",
       [&](auto& r) { r.set_min_width(static_cast<std::uint32_t>(limits.max_side) + 1); },
       "LIMIT_EXCEEDED", "min_width", "min_width: "},
      {"unknown mode", [](auto& r) { r.set_mode(static_cast<v1::PyramidMode>(7)); },
       "UNKNOWN_ENUM_VALUE", "mode", "mode: unknown value 7"},
      {"unknown output type", [](auto& r) { r.set_output_type(static_cast<v1::PixelType>(99)); },
       "UNKNOWN_ENUM_VALUE", "output_type", "output_type"},
      {"other integer output type", [](auto& r) { r.set_output_type(v1::PIXEL_TYPE_U16); },
       "UNSUPPORTED_PIXEL_TYPE", "output_type",
       "output_type: u16 is neither F32 nor the input's u8"},
      {"volume",
       [](auto& r) {
         r.mutable_input()->mutable_image()->set_depth(2);
         r.mutable_input()->mutable_image()->set_data(std::string(64 * 48 * 2, '\0'));
       },
       "UNSUPPORTED_IMAGE_SHAPE", "input.image", "input.image: is a volume"},
      {"shared-memory output",
       [](auto& r) { r.mutable_output()->mutable_shared_memory()->set_region("r"); },
       "INVALID_COMBINATION", "output.shared_memory", "output.shared_memory: Pyramid returns"},
      // The kernel judges the minimum against the image and names PyramidRequest's own field.
      {"min_width over the image", [](auto& r) { r.set_min_width(65); }, "VALUE_OUT_OF_RANGE",
       "min_width", "min_width: 65 exceeds the image's 64x48"},
      {"min_height over the image", [](auto& r) { r.set_min_height(49); }, "VALUE_OUT_OF_RANGE",
       "min_height", "min_height: 49 exceeds the image's 64x48"},
  };
  for (const auto& row : rows) {
    v1::PyramidRequest r = ValidPyramidRequest();
    row.mutate(r);
    const absl::Status status = ValidatePyramidRequest(r, limits).status();
    EXPECT_THAT(status, ErrorIs(kInvalid, row.reason, row.field)) << row.name;
    EXPECT_THAT(status.message(), HasSubstr(row.message)) << row.name;
    ExpectContract(status, r, row.name);
  }
}

v1::DeformRequest ValidDeformRequest() {
  v1::DeformRequest r;
  r.mutable_mesh()->set_handle("mesh-1");
  v1::Lattice* l = r.mutable_lattice();
  l->mutable_s()->set_x(1);
  l->mutable_t()->set_y(1);
  l->mutable_u()->set_z(1);
  l->set_count_s(2);
  l->set_count_t(2);
  l->set_count_u(2);
  for (int i = 0; i < 3 * 8; ++i) l->add_displacements(0);
  return r;
}

TEST(DeformValidation, Table) {
  ASSERT_THAT(ValidateDeformRequest(ValidDeformRequest(), RequestLimits{}), IsOk());
  const Row<v1::DeformRequest> rows[] = {
      {"no mesh", [](auto& r) { r.clear_mesh(); }, "FIELD_REQUIRED", "mesh.source",
       "mesh.source: one of mesh or handle"},
      {"empty handle", [](auto& r) { r.mutable_mesh()->set_handle(""); }, "INVALID_FORMAT",
       "mesh.handle", "mesh.handle: must be 1 to 128 characters"},
      {"long handle", [](auto& r) { r.mutable_mesh()->set_handle(std::string(129, 'h')); },
       "INVALID_FORMAT", "mesh.handle", "mesh.handle: must be 1 to 128 characters"},
      {"no lattice", [](auto& r) { r.clear_lattice(); }, "FIELD_REQUIRED", "lattice",
       "lattice: is required"},
      // The lattice's ranges are the kernel's (ValidateLattice).
      {"count 1", [](auto& r) { r.mutable_lattice()->set_count_s(1); }, "VALUE_OUT_OF_RANGE",
       "lattice.count_s", "lattice.count_s: must be in ["},
      {"count over int", [](auto& r) { r.mutable_lattice()->set_count_u(4000000000u); },
       "VALUE_OUT_OF_RANGE", "lattice.count_u", "lattice.count_u: 4000000000 is too large"},
      {"flat", [](auto& r) { r.mutable_lattice()->mutable_u()->set_z(0); }, "VALUE_OUT_OF_RANGE",
       "lattice", "lattice: s, t and u must span a volume"},
      {"short displacements",
       [](auto& r) { r.mutable_lattice()->mutable_displacements()->RemoveLast(); },
       "DATA_SIZE_MISMATCH", "lattice.displacements", "lattice.displacements: must hold"},
      {"NaN displacement", [](auto& r) { r.mutable_lattice()->set_displacements(5, NAN); },
       "VALUE_OUT_OF_RANGE", "lattice.displacements[5]",
       "lattice.displacements[5]: must be finite"},
      {"unknown outputs", [](auto& r) { r.set_outputs(static_cast<v1::DeformOutputs>(9)); },
       "UNKNOWN_ENUM_VALUE", "outputs", "outputs: unknown value 9"},
      {"omit_data alone", [](auto& r) { r.mutable_output()->set_omit_data(true); },
       "INVALID_COMBINATION", "output.omit_data", "output.omit_data: requires keep_resident"},
      {"inline positions short",
       [](auto& r) {
         v1::Mesh* m = r.mutable_mesh()->mutable_mesh();
         m->set_vertex_count(3);
         m->set_positions(std::string(35, '\0'));
       },
       "DATA_SIZE_MISMATCH", "mesh.mesh.positions", "mesh.mesh.positions: 35 bytes"},
      // Indices into the mesh's bytes fields are the message's, not the field path's.
      {"inline triangle index out of range",
       [](auto& r) {
         v1::Mesh* m = r.mutable_mesh()->mutable_mesh();
         const float positions[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
         const std::uint32_t triangles[3] = {0, 1, 3};
         m->set_vertex_count(3);
         m->set_triangle_count(1);
         m->set_positions(reinterpret_cast<const char*>(positions), sizeof(positions));
         m->set_triangles(reinterpret_cast<const char*>(triangles), sizeof(triangles));
       },
       "VALUE_OUT_OF_RANGE", "mesh.mesh.triangles",
       "mesh.mesh.triangles: index 2 (triangle 0) is 3, out of range: vertex_count is 3"},
      {"NaN axis", [](auto& r) { r.mutable_lattice()->mutable_s()->set_x(NAN); },
       "VALUE_OUT_OF_RANGE", "lattice.s.x", "lattice.s.x: must be finite"},
  };
  for (const auto& row : rows) {
    v1::DeformRequest r = ValidDeformRequest();
    row.mutate(r);
    const absl::Status status = ValidateDeformRequest(r, RequestLimits{}).status();
    EXPECT_THAT(status, ErrorIs(kInvalid, row.reason, row.field)) << row.name;
    EXPECT_THAT(status.message(), HasSubstr(row.message)) << row.name;
    ExpectContract(status, r, row.name);
  }
}

v1::VolumeStreamHeader ValidVolumeHeader() {
  v1::VolumeStreamHeader h;
  v1::Image* volume = h.mutable_volume();
  volume->set_pixel_type(v1::PIXEL_TYPE_U8);
  volume->set_width(8);
  volume->set_height(8);
  volume->set_depth(4);
  h.mutable_gradient()->set_kernel_length(3);
  return h;
}

TEST(VolumeStreamValidation, Table) {
  ASSERT_THAT(ValidateVolumeStreamHeader(ValidVolumeHeader(), RequestLimits{}), IsOk());
  const Row<v1::VolumeStreamHeader> rows[] = {
      {"no volume", [](auto& h) { h.clear_volume(); }, "FIELD_REQUIRED", "header.volume",
       "header.volume: is required"},
      {"data in the header", [](auto& h) { h.mutable_volume()->set_data("x"); },
       "INVALID_COMBINATION", "header.volume.data", "header.volume.data: must be empty"},
      {"two channels", [](auto& h) { h.mutable_volume()->set_channels(2); },
       "UNSUPPORTED_IMAGE_SHAPE", "header.volume.channels", "header.volume.channels: 2"},
      {"no operation", [](auto& h) { h.clear_gradient(); }, "FIELD_REQUIRED", "header.operation",
       "header.operation: one of morphology or gradient"},
      // The kernel's rule, with the stream's path before the field.
      {"even kernel", [](auto& h) { h.mutable_gradient()->set_kernel_length(4); },
       "VALUE_OUT_OF_RANGE", "header.gradient.kernel_length", "header.gradient.kernel_length: 4"},
      {"gradient input",
       [](auto& h) { GrayImage(h.mutable_gradient()->mutable_input()->mutable_image()); },
       "INVALID_COMBINATION", "header.gradient.input", "header.gradient.input: must be unset"},
      {"morphology without steps", [](auto& h) { h.mutable_morphology(); }, "FIELD_REQUIRED",
       "header.morphology.steps", "header.morphology.steps: at least one step"},
  };
  for (const auto& row : rows) {
    v1::VolumeStreamRequest first;  // the stream's first message: the fields' root
    v1::VolumeStreamHeader& h = *first.mutable_header();
    h = ValidVolumeHeader();
    row.mutate(h);
    const absl::Status status = ValidateVolumeStreamHeader(h, RequestLimits{}).status();
    EXPECT_THAT(status, ErrorIs(kInvalid, row.reason, row.field)) << row.name;
    EXPECT_THAT(status.message(), HasSubstr(row.message)) << row.name;
    ExpectContract(status, first, row.name);
  }
}

TEST(HandleValidation, OneToOneHundredTwentyEightCharacters) {
  EXPECT_THAT(ValidateHandle("h", "handle"), IsOk());
  EXPECT_THAT(ValidateHandle(std::string(128, 'h'), "handle"), IsOk());
  EXPECT_THAT(ValidateHandle("", "input.handle"),
              ErrorIs(kInvalid, "INVALID_FORMAT", "input.handle"));
  EXPECT_THAT(ValidateHandle(std::string(129, 'h'), "x"), ErrorIs(kInvalid, "INVALID_FORMAT", "x"));
}

TEST(UploadValidation, HeadersNameTheUploadRequestsFields) {
  v1::UploadRequest image_upload;
  GrayImage(image_upload.mutable_image())->set_width(0);
  const absl::Status image = ValidateUploadHeader(image_upload.image(), RequestLimits{}).status();
  EXPECT_THAT(image, ErrorIs(kInvalid, "VALUE_OUT_OF_RANGE", "image.width"));
  ExpectContract(image, image_upload, "image width 0");

  const struct {
    const char* name;
    std::function<void(v1::Mesh&)> mutate;
    const char* reason;
    const char* field;
  } rows[] = {
      {"no vertices", [](v1::Mesh& m) { m.set_vertex_count(0); }, "VALUE_OUT_OF_RANGE",
       "mesh.vertex_count"},
      {"too many triangles", [](v1::Mesh& m) { m.set_triangle_count(4000000000u); },
       "LIMIT_EXCEEDED", "mesh.triangle_count"},
      {"positions past the count", [](v1::Mesh& m) { m.set_positions(std::string(37, '\0')); },
       "DATA_SIZE_MISMATCH", "mesh.positions"},
      {"triangles before positions", [](v1::Mesh& m) { m.set_triangles(std::string(12, '\0')); },
       "MESSAGE_OUT_OF_ORDER", "mesh.triangles"},
      {"triangles past the count",
       [](v1::Mesh& m) {
         m.set_positions(std::string(36, '\0'));
         m.set_triangles(std::string(13, '\0'));
       },
       "DATA_SIZE_MISMATCH", "mesh.triangles"},
  };
  for (const auto& row : rows) {
    v1::UploadRequest upload;
    v1::Mesh& mesh = *upload.mutable_mesh();
    mesh.set_vertex_count(3);
    mesh.set_triangle_count(1);
    row.mutate(mesh);
    const absl::Status status = ValidateUploadMeshHeader(mesh, RequestLimits{});
    EXPECT_THAT(status, ErrorIs(kInvalid, row.reason, row.field)) << row.name;
    ExpectContract(status, upload, row.name);
  }
}

}  // namespace
}  // namespace cuimg
