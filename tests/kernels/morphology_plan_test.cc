// Planning runs on the host: every element up to the 1023-per-axis limit, on every pixel type,
// 2D and 3D, gets a plan (bands when it is too large for one shared-memory region). No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "cuimg/kernels/morphology.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

TEST(MorphologyPlan, PlansElementsUpToTheLimitForEveryType) {
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32};
  const ElementShape shapes[] = {ElementShape::kRect, ElementShape::kEllipse, ElementShape::kCross};
  const std::pair<int, int> sizes[] = {{1, 1},     {3, 3},    {9, 9},    {63, 63},  {64, 2},
                                       {255, 255}, {1023, 1}, {1, 1023}, {1023, 3}, {1023, 1023}};
  for (PixelType type : types) {
    for (ElementShape shape : shapes) {
      for (const auto& [w, h] : sizes) {
        for (const Extent& extent :
             {Extent{1920, 1080, 1}, Extent{512, 512, 300}, Extent{7, 5, 3}}) {
          auto se = StructuringElement::Create(ElementSpec{shape, w, h, 0, -1, -1, -1, {}});
          ASSERT_TRUE(se.ok());
          auto plan = MorphologyPlan::Create(type, extent,
                                             {{MorphOp::kOpen, *se, 1, BorderMode::kNeutral, 0}});
          ASSERT_TRUE(plan.ok()) << plan.status() << " " << w << "x" << h;
          EXPECT_FALSE(plan->Describe().empty());
          EXPECT_GT(plan->LaunchCount(), 0);
        }
      }
    }
  }
}

TEST(MorphologyPlan, Plans3DElements) {
  for (PixelType type : {PixelType::kU8, PixelType::kI16, PixelType::kF32}) {
    for (int size : {3, 9, 31, 101}) {
      auto ball = StructuringElement::Create(
          ElementSpec{ElementShape::kEllipse, size, size, size, -1, -1, -1, {}});
      ASSERT_TRUE(ball.ok());
      auto plan = MorphologyPlan::Create(type, Extent{512, 512, 300},
                                         {{MorphOp::kErode, *ball, 1, BorderMode::kNeutral, 0}});
      ASSERT_TRUE(plan.ok()) << plan.status() << " ball " << size;
    }
  }
}

TEST(MorphologyPlan, UsesSeparablePassesForBoxesAndChordsOtherwise) {
  auto rect =
      StructuringElement::Create(ElementSpec{ElementShape::kRect, 63, 63, 0, -1, -1, -1, {}});
  auto disk =
      StructuringElement::Create(ElementSpec{ElementShape::kEllipse, 63, 63, 0, -1, -1, -1, {}});
  auto box_plan = MorphologyPlan::Create(PixelType::kU8, Extent{1920, 1080, 1},
                                         {{MorphOp::kDilate, *rect, 1, BorderMode::kNeutral, 0}});
  auto disk_plan = MorphologyPlan::Create(PixelType::kU8, Extent{1920, 1080, 1},
                                          {{MorphOp::kDilate, *disk, 1, BorderMode::kNeutral, 0}});
  ASSERT_TRUE(box_plan.ok() && disk_plan.ok());
  // Large windows: a van Herk/Gil-Werman line pass per axis; small ones: one fused launch.
  EXPECT_EQ(box_plan->Describe(), "box(vhgw axis 0 length 63, vhgw axis 1 length 63)");
  EXPECT_EQ(box_plan->LaunchCount(), 2);
  EXPECT_EQ(disk_plan->LaunchCount(), 1);
  auto small =
      StructuringElement::Create(ElementSpec{ElementShape::kRect, 3, 3, 0, -1, -1, -1, {}});
  auto small_plan =
      MorphologyPlan::Create(PixelType::kU8, Extent{640, 480, 1},
                             {{MorphOp::kDilate, *small, 1, BorderMode::kNeutral, 0}});
  ASSERT_TRUE(small_plan.ok());
  EXPECT_EQ(small_plan->Describe().rfind("box(xy 3x3 tile ", 0), 0u) << small_plan->Describe();
  EXPECT_EQ(small_plan->LaunchCount(), 1);
  // The line passes take any window up to the element limit, and skip axes of length 1.
  for (auto [w, h, want] :
       {std::tuple{1023, 1023, "box(vhgw axis 0 length 1023, vhgw axis 1 length 1023)"},
        std::tuple{1, 255, "box(vhgw axis 1 length 255)"}}) {
    auto big =
        StructuringElement::Create(ElementSpec{ElementShape::kRect, w, h, 0, -1, -1, -1, {}});
    ASSERT_TRUE(big.ok());
    for (PixelType type : {PixelType::kU8, PixelType::kF32}) {
      auto big_plan = MorphologyPlan::Create(
          type, Extent{1920, 1080, 1}, {{MorphOp::kDilate, *big, 1, BorderMode::kNeutral, 0}});
      ASSERT_TRUE(big_plan.ok()) << big_plan.status();
      EXPECT_EQ(big_plan->Describe(), want);
    }
  }
  EXPECT_NE(disk_plan->Describe().find("chords(1 bands"), std::string::npos)
      << disk_plan->Describe();
}

// Only one box pass that writes each output once may write mapped host memory in place.
TEST(MorphologyPlan, WritesOutputOnceOnlyForOneBoxPass) {
  auto element = [](ElementShape shape, int w, int h) {
    return *StructuringElement::Create(ElementSpec{shape, w, h, 0, -1, -1, -1, {}});
  };
  auto writes_once = [](const StructuringElement& e, MorphOp op, int iterations) {
    auto plan = MorphologyPlan::Create(PixelType::kU8, Extent{640, 480, 1},
                                       {{op, e, iterations, BorderMode::kNeutral, 0}});
    EXPECT_TRUE(plan.ok());
    return plan.ok() && plan->WritesOutputOnce();
  };
  const StructuringElement box3 = element(ElementShape::kRect, 3, 3);
  EXPECT_TRUE(writes_once(box3, MorphOp::kDilate, 1));
  EXPECT_TRUE(writes_once(box3, MorphOp::kErode, 1));
  EXPECT_TRUE(writes_once(element(ElementShape::kRect, 1, 255), MorphOp::kDilate, 1));
  EXPECT_FALSE(writes_once(box3, MorphOp::kDilate, 2));  // ping-pong through scratch
  EXPECT_FALSE(writes_once(box3, MorphOp::kOpen, 1));
  // Two line passes; the 1x1 element is a copy; a disk takes the nested-rows kernel.
  EXPECT_FALSE(writes_once(element(ElementShape::kRect, 63, 63), MorphOp::kDilate, 1));
  EXPECT_FALSE(writes_once(element(ElementShape::kRect, 1, 1), MorphOp::kDilate, 1));
  EXPECT_FALSE(writes_once(element(ElementShape::kEllipse, 9, 9), MorphOp::kDilate, 1));
}

// Small centred elements whose rows nest (disks, crosses, balls) take the nested-rows kernel, one
// launch per section pair; off-centre, even-sized, holed or too wide ones keep the chords.
TEST(MorphologyPlan, UsesNestedRowsForSmallSymmetricElements) {
  auto describe = [](const ElementSpec& spec, Extent extent, int* launches) {
    auto se = StructuringElement::Create(spec);
    EXPECT_TRUE(se.ok()) << se.status();
    auto plan = MorphologyPlan::Create(PixelType::kU8, extent,
                                       {{MorphOp::kDilate, *se, 1, BorderMode::kNeutral, 0}});
    EXPECT_TRUE(plan.ok()) << plan.status();
    *launches = plan->LaunchCount();
    return plan->Describe();
  };
  const Extent volume{512, 512, 300};
  int launches = 0;
  EXPECT_EQ(describe({ElementShape::kEllipse, 9, 9, 0, -1, -1, -1, {}}, volume, &launches),
            "nested(radius 4, half-widths 4 4 3 3 0, 1 pass, compiled steps)");
  EXPECT_EQ(launches, 1);
  EXPECT_EQ(describe({ElementShape::kCross, 5, 3, 0, -1, -1, -1, {}}, volume, &launches),
            "nested(radius 1, half-widths 2 0, 1 pass)");
  EXPECT_EQ(describe({ElementShape::kEllipse, 9, 9, 9, -1, -1, -1, {}}, volume, &launches),
            "nested(radius 4, half-widths 4 3 3 2 0, 4 passes, points +-4, compiled steps)");
  EXPECT_EQ(launches, 4);  // the poles (dz = +-4: the anchor pixel alone) ride the first pass
  // 3x3x9: sections +-1..4 are all the anchor pixel; one pair is folded, the rest are passes.
  EXPECT_EQ(describe({ElementShape::kEllipse, 3, 3, 9, -1, -1, -1, {}}, volume, &launches),
            "nested(radius 1, half-widths 1 0, 4 passes, points +-1)");
  EXPECT_EQ(launches, 4);
  EXPECT_EQ(describe({ElementShape::kEllipse, 33, 33, 0, -1, -1, -1, {}}, volume, &launches)
                .rfind("chords(", 0),
            0u);  // radius 16 > 7
  EXPECT_EQ(describe({ElementShape::kEllipse, 9, 9, 0, 2, 4, -1, {}}, volume, &launches)
                .rfind("chords(", 0),
            0u);  // off-centre anchor
  EXPECT_EQ(describe({ElementShape::kEllipse, 8, 8, 0, -1, -1, -1, {}}, volume, &launches)
                .rfind("chords(", 0),
            0u);  // even size
  // The compiled step lists cover OpenCV's odd disks up to 15x15 and balls of radius 2..4, in
  // every pass; other nested elements read their steps at run time.
  for (int size = 3; size <= 15; size += 2) {
    EXPECT_NE(describe({ElementShape::kEllipse, size, size, 0, -1, -1, -1, {}}, volume, &launches)
                  .find(", compiled steps)"),
              std::string::npos)
        << "disk " << size;
  }
  for (int size = 5; size <= 9; size += 2) {
    EXPECT_NE(
        describe({ElementShape::kEllipse, size, size, size, -1, -1, -1, {}}, volume, &launches)
            .find(", compiled steps)"),
        std::string::npos)
        << "ball " << size;
  }
  EXPECT_EQ(describe({ElementShape::kEllipse, 9, 7, 0, -1, -1, -1, {}}, volume, &launches)
                .find("compiled"),
            std::string::npos);
  std::vector<std::uint8_t> ring(5 * 5, 1);
  ring[12] = 0;
  EXPECT_EQ(describe({ElementShape::kCustom, 5, 5, 0, -1, -1, -1, ring}, volume, &launches)
                .rfind("chords(", 0),
            0u);  // two runs in the centre row
}

}  // namespace
}  // namespace cuimg
