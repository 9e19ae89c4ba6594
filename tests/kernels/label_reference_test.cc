// The labelling reference on small cases worked out by hand: numbering in raster order of first
// voxels, each connectivity, min_voxels, the statistics (boxes, centroids, exact sums), the mask
// steps and binary reconstruction, and the refusals. label_reference_scipy_test.py compares the
// same functions with SciPy on random and adversarial images.
#include "cuimg/reference/label_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cuimg/common/error.h"
#include "segmentation/region_stats.h"

namespace cuimg {
namespace {

template <typename T>
Image Make(PixelType type, Extent e, const std::vector<T>& values) {
  Image image(type, e, 1);
  for (std::size_t i = 0; i < values.size(); ++i) image.As<T>()[i] = values[i];
  return image;
}

std::vector<std::uint32_t> Labels(const LabelResult& r) {
  const std::uint32_t* p = r.labels.As<std::uint32_t>();
  return std::vector<std::uint32_t>(p, p + r.labels.extent().Pixels());
}

TEST(LabelReferenceTest, NumbersRegionsInRasterOrderOfTheirFirstPixel) {
  // The U's arms start on row 0 and join on row 2: one region, found first at (0, 0); the
  // pixel at (2, 1) comes before the second arm's rows, but is its own region.
  const Image in = Make<std::uint8_t>(PixelType::kU8, {4, 3, 1},
                                      {1, 0, 0, 1,  //
                                       1, 0, 1, 1,  //
                                       1, 1, 1, 1});
  const Image dot = Make<std::uint8_t>(PixelType::kU8, {4, 3, 1},
                                       {0, 0, 1, 0,  //
                                        1, 0, 0, 0,  //
                                        0, 0, 0, 1});
  absl::StatusOr<LabelResult> u = LabelReference(in.view(), LabelSpec{});
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(Labels(*u), (std::vector<std::uint32_t>{1, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1}));
  absl::StatusOr<LabelResult> d = LabelReference(dot.view(), LabelSpec{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(Labels(*d), (std::vector<std::uint32_t>{0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 3}));
}

TEST(LabelReferenceTest, DiagonalsConnectOnlyWithEightConnectivity) {
  const Image in = Make<std::uint16_t>(PixelType::kU16, {3, 3, 1}, {1, 0, 0, 0, 7, 0, 0, 0, 9});
  LabelSpec spec;
  absl::StatusOr<LabelResult> four = LabelReference(in.view(), spec);
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->regions.size(), 3u);
  spec.connectivity = Connectivity::k8;
  absl::StatusOr<LabelResult> eight = LabelReference(in.view(), spec);
  ASSERT_TRUE(eight.ok());
  ASSERT_EQ(eight->regions.size(), 1u);
  EXPECT_EQ(eight->regions[0].voxels, 3);
}

TEST(LabelReferenceTest, VolumeConnectivitiesReachFacesEdgesAndCorners) {
  // (0,0,0) and (1,1,1) touch at a corner; (0,0,0) and (1,0,1) along an edge.
  Image corner(PixelType::kU8, {2, 2, 2});
  corner.As<std::uint8_t>()[0] = 1;
  corner.As<std::uint8_t>()[7] = 1;
  Image edge(PixelType::kU8, {2, 2, 2});
  edge.As<std::uint8_t>()[0] = 1;
  edge.As<std::uint8_t>()[5] = 1;
  auto regions = [](const Image& image, Connectivity c) {
    LabelSpec spec;
    spec.connectivity = c;
    return LabelReference(image.view(), spec)->regions.size();
  };
  EXPECT_EQ(regions(corner, Connectivity::k6), 2u);
  EXPECT_EQ(regions(corner, Connectivity::k18), 2u);
  EXPECT_EQ(regions(corner, Connectivity::k26), 1u);
  EXPECT_EQ(regions(edge, Connectivity::kDefault), 2u);
  EXPECT_EQ(regions(edge, Connectivity::k18), 1u);
}

TEST(LabelReferenceTest, ThresholdSelectsTheForegroundAndNaNIsBackground) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Image in = Make<float>(PixelType::kF32, {5, 1, 1}, {0.5f, nan, 2.0f, 3.0f, -1.0f});
  absl::StatusOr<LabelResult> nonzero = LabelReference(in.view(), LabelSpec{});
  ASSERT_TRUE(nonzero.ok());
  EXPECT_EQ(Labels(*nonzero), (std::vector<std::uint32_t>{1, 0, 2, 2, 2}));
  LabelSpec spec;
  spec.threshold = std::array<double, 2>{1.0, 3.0};
  absl::StatusOr<LabelResult> range = LabelReference(in.view(), spec);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(Labels(*range), (std::vector<std::uint32_t>{0, 0, 1, 1, 0}));
}

TEST(LabelReferenceTest, MinVoxelsDropsSmallRegionsBeforeNumbering) {
  const Image in = Make<std::uint8_t>(PixelType::kU8, {7, 1, 1}, {1, 0, 1, 1, 0, 1, 1});
  LabelSpec spec;
  spec.min_voxels = 2;
  absl::StatusOr<LabelResult> r = LabelReference(in.view(), spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Labels(*r), (std::vector<std::uint32_t>{0, 0, 1, 1, 0, 2, 2}));
  ASSERT_EQ(r->regions.size(), 2u);
  EXPECT_EQ(r->regions[1].bbox_begin, (std::array<std::int64_t, 3>{5, 0, 0}));
}

TEST(LabelReferenceTest, RegionsHaveHalfOpenBoxesAndCentroidsInVoxels) {
  // An L in a 4x3x2 volume: (1,0,0), (1,1,0), (2,1,0), (2,1,1).
  Image in(PixelType::kU8, {4, 3, 2});
  for (int p : {1, 5, 6, 18}) in.As<std::uint8_t>()[p] = 1;
  LabelSpec spec;
  spec.connectivity = Connectivity::k6;
  absl::StatusOr<LabelResult> r = LabelReference(in.view(), spec);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->regions.size(), 1u);
  const RegionStats& s = r->regions[0];
  EXPECT_EQ(s.voxels, 4);
  EXPECT_EQ(s.bbox_begin, (std::array<std::int64_t, 3>{1, 0, 0}));
  EXPECT_EQ(s.bbox_end, (std::array<std::int64_t, 3>{3, 2, 2}));
  EXPECT_EQ(s.centroid, (std::array<double, 3>{6.0 / 4, 3.0 / 4, 1.0 / 4}));
  EXPECT_EQ(s.sum, 0.0);  // no intensity
}

TEST(LabelReferenceTest, IntensitySumsAreExactWhateverTheOrder) {
  // 1e20 + 1 - 1e20 in double is 0; the exact sum is 1. Integers: i16 extremes.
  const Image mask = Make<std::uint8_t>(PixelType::kU8, {3, 1, 1}, {1, 1, 1});
  const Image f = Make<float>(PixelType::kF32, {3, 1, 1}, {1e20f, 1.0f, -1e20f});
  const ImageView fv = f.view();
  absl::StatusOr<LabelResult> r = LabelReference(mask.view(), LabelSpec{}, &fv);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->regions[0].sum, 1.0);
  EXPECT_EQ(r->regions[0].mean, 1.0 / 3);
  EXPECT_EQ(r->regions[0].min, -1e20f);
  EXPECT_EQ(r->regions[0].max, 1e20f);
  const Image i = Make<std::int16_t>(PixelType::kI16, {3, 1, 1}, {-32768, 32767, -5});
  const ImageView iv = i.view();
  absl::StatusOr<LabelResult> ri = LabelReference(mask.view(), LabelSpec{}, &iv);
  ASSERT_TRUE(ri.ok());
  EXPECT_EQ(ri->regions[0].sum, -6.0);
  EXPECT_EQ(ri->regions[0].min, -32768.0);
  EXPECT_EQ(ri->regions[0].max, 32767.0);
}

TEST(LabelReferenceTest, NonFiniteIntensitiesFollowIeeeSumsAndNeverWinMinMax) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Image mask = Make<std::uint8_t>(PixelType::kU8, {7, 1, 1}, {1, 1, 0, 1, 1, 0, 1});
  const Image f = Make<float>(PixelType::kF32, {7, 1, 1}, {inf, 2, 0, nan, 3, 0, nan});
  const ImageView fv = f.view();
  absl::StatusOr<LabelResult> r = LabelReference(mask.view(), LabelSpec{}, &fv);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->regions.size(), 3u);
  EXPECT_EQ(r->regions[0].sum, inf);
  EXPECT_EQ(r->regions[0].min, 2.0);
  EXPECT_TRUE(std::isnan(r->regions[1].sum));
  EXPECT_EQ(r->regions[1].min, 3.0);           // NaN never wins
  EXPECT_TRUE(std::isnan(r->regions[2].min));  // NaN alone
  EXPECT_TRUE(std::isnan(r->regions[2].max));
}

TEST(LabelReferenceTest, ExactLimbSumRoundsHalfToEven) {
  // 2^53 + 1 is a tie between 2^53 and 2^53 + 2: even wins; 2^53 + 3 rounds up to 2^53 + 4.
  auto sum_of = [](std::int64_t integer) {
    seg::SumLimbs limbs{};
    // limb 5 has weight 2^(160 - 149) = 2^11.
    limbs[5] = integer / 2048;
    limbs[4] = (integer % 2048) * (std::int64_t{1} << 21);  // weight 2^(128 - 149) = 2^-21
    return seg::ExactLimbSum(limbs);
  };
  const std::int64_t two53 = std::int64_t{1} << 53;
  EXPECT_EQ(sum_of(two53 + 1), 9007199254740992.0);
  EXPECT_EQ(sum_of(two53 + 3), 9007199254740996.0);
  EXPECT_EQ(sum_of(-(two53 + 3)), -9007199254740996.0);
  seg::SumLimbs tiny{};
  tiny[0] = 1;  // 2^-149, the smallest f32
  EXPECT_EQ(seg::ExactLimbSum(tiny), std::ldexp(1.0, -149));
}

TEST(LabelReferenceTest, RemoveSmallAndKeepLargestKeepValuesOfKeptComponents) {
  const Image in = Make<std::uint32_t>(PixelType::kU32, {8, 1, 1}, {5, 0, 6, 7, 0, 8, 9, 4});
  Image out(PixelType::kU32, in.extent());
  ASSERT_TRUE(RemoveSmallReference(in.view(), out.view(), Connectivity::kDefault, 2).ok());
  EXPECT_EQ(std::vector<std::uint32_t>(out.As<std::uint32_t>(), out.As<std::uint32_t>() + 8),
            (std::vector<std::uint32_t>{0, 0, 6, 7, 0, 8, 9, 4}));
  ASSERT_TRUE(KeepLargestReference(in.view(), out.view(), Connectivity::kDefault).ok());
  EXPECT_EQ(std::vector<std::uint32_t>(out.As<std::uint32_t>(), out.As<std::uint32_t>() + 8),
            (std::vector<std::uint32_t>{0, 0, 0, 0, 0, 8, 9, 4}));
  // A tie keeps the first; in place works.
  Image tie = Make<std::uint32_t>(PixelType::kU32, {5, 1, 1}, {1, 1, 0, 2, 2});
  ASSERT_TRUE(KeepLargestReference(tie.view(), tie.view(), Connectivity::kDefault).ok());
  EXPECT_EQ(std::vector<std::uint32_t>(tie.As<std::uint32_t>(), tie.As<std::uint32_t>() + 5),
            (std::vector<std::uint32_t>{1, 1, 0, 0, 0}));
}

TEST(LabelReferenceTest, FillHolesFillsBackgroundThatTheBorderCannotReach) {
  // A ring whose hole meets the outside only at a corner: 4-connected background is a hole,
  // 8-connected background is not (scipy's binary_fill_holes with that structure).
  const Image ring = Make<std::uint8_t>(PixelType::kU8, {5, 5, 1}, {0, 0, 0, 0, 0,  //
                                                                    0, 9, 9, 0, 0,  //
                                                                    0, 9, 0, 9, 0,  //
                                                                    0, 9, 9, 9, 0,  //
                                                                    0, 0, 0, 0, 0});
  SeededFillSpec spec;
  spec.range = std::array<double, 2>{0, 0};
  spec.seed_border = true;
  spec.fill = 9;
  Image out(PixelType::kU8, ring.extent());
  ASSERT_TRUE(FillUnseededComponentsReference(ring.view(), nullptr, out.view(), spec).ok());
  EXPECT_EQ(out.As<std::uint8_t>()[12], 9);
  spec.connectivity = Connectivity::k8;
  ASSERT_TRUE(FillUnseededComponentsReference(ring.view(), nullptr, out.view(), spec).ok());
  EXPECT_EQ(out.As<std::uint8_t>()[12], 0);
}

TEST(LabelReferenceTest, MarkerSeedsKeepTheComponentsTheyTouch) {
  const Image mask = Make<std::int16_t>(PixelType::kI16, {6, 1, 1}, {3, 3, 0, -2, 0, 4});
  const Image marker = Make<float>(PixelType::kF32, {6, 1, 1},
                                   {0, 1, 0, std::numeric_limits<float>::quiet_NaN(), 0, 0});
  SeededFillSpec spec;
  spec.seed_marker = true;
  Image out(PixelType::kI16, mask.extent());
  const ImageView mv = marker.view();
  ASSERT_TRUE(FillUnseededComponentsReference(mask.view(), &mv, out.view(), spec).ok());
  EXPECT_EQ(std::vector<std::int16_t>(out.As<std::int16_t>(), out.As<std::int16_t>() + 6),
            (std::vector<std::int16_t>{3, 3, 0, 0, 0, 0}));
}

TEST(LabelReferenceTest, RefusesBadSpecsAndViewsNamingTheField) {
  const Image in(PixelType::kU8, {4, 4, 1});
  LabelSpec spec;
  spec.connectivity = Connectivity::k26;
  EXPECT_EQ(ErrorFieldOf(LabelReference(in.view(), spec).status()), "connectivity");
  spec = LabelSpec{};
  spec.threshold = std::array<double, 2>{3, 2};
  EXPECT_EQ(ErrorFieldOf(LabelReference(in.view(), spec).status()), "threshold");
  spec = LabelSpec{};
  spec.min_voxels = -1;
  EXPECT_EQ(LabelReference(in.view(), spec).status().code(), absl::StatusCode::kInvalidArgument);
  const Image other(PixelType::kU8, {4, 3, 1});
  const ImageView ov = other.view();
  EXPECT_EQ(ErrorReasonOf(LabelReference(in.view(), LabelSpec{}, &ov).status()), "SHAPE_MISMATCH");
  Image out(PixelType::kU16, in.extent());
  EXPECT_EQ(ErrorFieldOf(KeepLargestReference(in.view(), out.view(), Connectivity::k4)), "output");
  SeededFillSpec fill;
  fill.seed_marker = true;
  Image same(PixelType::kU8, in.extent());
  EXPECT_EQ(ErrorReasonOf(FillUnseededComponentsReference(in.view(), nullptr, same.view(), fill)),
            "FIELD_REQUIRED");
}

TEST(LabelReferenceTest, StopsWhenCancelled) {
  const Image in(PixelType::kU8, {64, 64, 1});
  CancelToken cancel;
  cancel.Cancel();
  EXPECT_EQ(LabelReference(in.view(), LabelSpec{}, nullptr, cancel).status().code(),
            absl::StatusCode::kCancelled);
  Image out(PixelType::kU8, in.extent());
  EXPECT_EQ(RemoveSmallReference(in.view(), out.view(), Connectivity::k4, 3, cancel).code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace cuimg
