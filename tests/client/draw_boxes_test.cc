// DrawBoxes: outlines in the colour, score labels as black glyphs on a tag of the colour above
// the box (inside it at the image's top), clipped at the image's edges.
#include <cstdint>
#include <vector>

#include "client/image_convert.h"
#include "gtest/gtest.h"

namespace cuimg {
namespace {

const std::uint8_t* Pixel(const Image& image, int x, int y) {
  return image.bytes() + (static_cast<std::int64_t>(y) * image.extent().width + x) * 3;
}
bool Is(const Image& image, int x, int y, std::uint8_t b, std::uint8_t g, std::uint8_t r) {
  const std::uint8_t* p = Pixel(image, x, y);
  return p[0] == b && p[1] == g && p[2] == r;
}

Image Gray(int width, int height, std::uint8_t value) {
  Image image(PixelType::kU8, Extent{width, height, 1}, 1);
  for (std::size_t i = 0; i < image.size_bytes(); ++i) image.bytes()[i] = value;
  return image;
}

TEST(DrawBoxesTest, OutlineAndLabelAboveTheBox) {
  const Image boxed = DrawBoxes(Gray(100, 80, 128), {BoxOutline{20, 40, 30, 30, "1"}});
  EXPECT_TRUE(Is(boxed, 20, 40, 0, 255, 0));      // the outline's corner
  EXPECT_TRUE(Is(boxed, 35, 55, 128, 128, 128));  // inside the box: untouched
  // The tag is 18 rows high (7-row glyphs at twice their size and a 2-pixel margin), above y=40:
  // its margin is green; the glyph "1" has its stem in column 2 of 5 (pixels 4-5 from x=22).
  EXPECT_TRUE(Is(boxed, 20, 22, 0, 255, 0));
  EXPECT_TRUE(Is(boxed, 26, 30, 0, 0, 0));        // the stem, row 4 of the glyph
  EXPECT_TRUE(Is(boxed, 22, 30, 0, 255, 0));      // left of the stem, same row
  EXPECT_TRUE(Is(boxed, 20, 21, 128, 128, 128));  // above the tag
}

TEST(DrawBoxesTest, LabelGoesInsideAtTheTopAndClipsAtTheEdge) {
  // A box at the top edge and a label wider than the room to the right: no crash, tag inside.
  const Image boxed = DrawBoxes(Gray(40, 30, 10),
                                {BoxOutline{30, 0, 10, 30, "-12.34"}, BoxOutline{0, 0, 5, 5, ""}});
  EXPECT_TRUE(Is(boxed, 30, 0, 0, 255, 0));
  EXPECT_TRUE(Is(boxed, 39, 17, 0, 255, 0));  // the tag's bottom margin row, clipped at x=39
  EXPECT_TRUE(Is(boxed, 36, 8, 0, 0, 0));     // '-' is row 3 of the glyph: y = 2 + 6, x from 32
  EXPECT_TRUE(Is(boxed, 20, 20, 10, 10, 10));
}

}  // namespace
}  // namespace cuimg
