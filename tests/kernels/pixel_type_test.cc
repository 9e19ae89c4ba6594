// Pixel types: U32 (the label type) has its size, name and saturation; the type-generic visit
// reaches it, and the filters refuse it by name before their per-type dispatch could see it.
#include "cuimg/common/pixel_type.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

#include "cuimg/common/error.h"
#include "cuimg/common/image.h"
#include "cuimg/reference/gradient_reference.h"
#include "cuimg/reference/morphology_reference.h"
#include "cuimg/reference/pyramid_reference.h"

namespace cuimg {
namespace {

TEST(PixelTypeTest, U32HasItsSizeNameAndCppType) {
  EXPECT_EQ(PixelSize(PixelType::kU32), 4u);
  EXPECT_EQ(PixelTypeName(PixelType::kU32), "u32");
  EXPECT_EQ(PixelTypeOf<std::uint32_t>::value, PixelType::kU32);
  EXPECT_FALSE(IsFilterPixelType(PixelType::kU32));
  EXPECT_TRUE(IsFilterPixelType(PixelType::kF32));
}

TEST(PixelTypeTest, VisitAnyPixelTypeGivesEachTypeItsCppType) {
  for (PixelType t :
       {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32, PixelType::kU32}) {
    const PixelType seen =
        VisitAnyPixelType(t, [](auto tag) { return PixelTypeOf<decltype(tag)>::value; });
    EXPECT_EQ(seen, t) << PixelTypeName(t);
  }
}

TEST(PixelTypeTest, SaturateCastToU32RoundsAndClamps) {
  EXPECT_EQ(SaturateCast<std::uint32_t>(-5.0), 0u);
  EXPECT_EQ(SaturateCast<std::uint32_t>(2.5), 2u);  // ties to even
  EXPECT_EQ(SaturateCast<std::uint32_t>(3.5), 4u);
  EXPECT_EQ(SaturateCast<std::uint32_t>(5e9), 4294967295u);
  EXPECT_EQ(SaturateCast<std::uint32_t>(4294967295.0), 4294967295u);
}

TEST(PixelTypeTest, FiltersRefuseU32NamingTheField) {
  const Image labels(PixelType::kU32, Extent{8, 8, 1});
  const absl::StatusOr<Image> morph = MorphologyReference(labels, {MorphologyStep{}});
  EXPECT_EQ(morph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorReasonOf(morph.status()), "UNSUPPORTED_PIXEL_TYPE");
  EXPECT_EQ(ErrorFieldOf(morph.status()), "input");

  const absl::StatusOr<GradientImages> gradient = GradientReference(labels, GradientSpec{});
  EXPECT_EQ(gradient.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorReasonOf(gradient.status()), "UNSUPPORTED_PIXEL_TYPE");

  const absl::StatusOr<std::vector<Image>> pyramid = PyramidReference(labels, PyramidSpec{});
  EXPECT_EQ(pyramid.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorReasonOf(pyramid.status()), "UNSUPPORTED_PIXEL_TYPE");
  EXPECT_EQ(ErrorFieldOf(pyramid.status()), "input_type");

  PyramidSpec to_u32;
  to_u32.output_type = PixelType::kU32;
  EXPECT_EQ(ErrorFieldOf(ValidatePyramidSpec(PixelType::kU8, Extent{8, 8, 1}, to_u32)),
            "output_type");
}

}  // namespace
}  // namespace cuimg
