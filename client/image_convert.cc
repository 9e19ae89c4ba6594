#include "client/image_convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cuimg {

Image ToGray(const Image& image) {
  if (image.channels() != 3) return image;
  Image gray(image.type(), image.extent(), 1);
  VisitAnyPixelType(image.type(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = image.As<T>();
    T* out = gray.As<T>();
    for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
      const double v = 0.114 * in[3 * i] + 0.587 * in[3 * i + 1] + 0.299 * in[3 * i + 2];
      out[i] = SaturateCast<T>(v);
    }
    return 0;
  });
  return gray;
}

Image ToPreviewU8(const Image& image, double lo, double hi) {
  Image out(PixelType::kU8, image.extent(), 1);
  VisitAnyPixelType(image.type(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = image.As<T>();
    const std::int64_t n = image.extent().Pixels();
    if (lo == hi && n > 0) {
      lo = hi = static_cast<double>(in[0]);
      for (std::int64_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(in[i]);
        if (std::isfinite(v)) {
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
      }
    }
    const double scale = hi > lo ? 255.0 / (hi - lo) : 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      out.bytes()[i] = SaturateCast<std::uint8_t>((static_cast<double>(in[i]) - lo) * scale);
    }
    return 0;
  });
  return out;
}

Image ContactSheet(const std::vector<Image>& images, std::int64_t max_width) {
  // Shelf packing: left to right, new row when the next image does not fit.
  std::int64_t x = 0, y = 0, row_h = 0, width = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> at;
  for (const Image& im : images) {
    if (x > 0 && x + im.extent().width > max_width) {
      x = 0;
      y += row_h + 4;
      row_h = 0;
    }
    at.emplace_back(x, y);
    x += im.extent().width + 4;
    row_h = std::max(row_h, im.extent().height);
    width = std::max(width, x);
  }
  Image sheet(PixelType::kU8, Extent{std::max<std::int64_t>(width, 1), y + row_h, 1}, 1);
  std::memset(sheet.bytes(), 0, sheet.size_bytes());
  for (std::size_t k = 0; k < images.size(); ++k) {
    const Image& im = images[k];
    for (std::int64_t r = 0; r < im.extent().height; ++r) {
      std::memcpy(sheet.bytes() + (at[k].second + r) * sheet.extent().width + at[k].first,
                  im.bytes() + r * im.extent().width, im.extent().width);
    }
  }
  return sheet;
}

namespace {

// 5x7 glyphs, one row a byte (bit 4 leftmost): digits, then '.', then '-'.
constexpr std::uint8_t kGlyphs[12][7] = {
    {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}, {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e},
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}, {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e},
    {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}, {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e},
    {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e}, {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},
    {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}, {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c},
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}, {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00}};
// Glyphs are drawn at twice their size, with a 2-pixel margin on the tag.
constexpr int kGlyphScale = 2;
constexpr int kTagMargin = 2;

int GlyphIndex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c == '.') return 10;
  if (c == '-') return 11;
  return -1;
}

}  // namespace

Image DrawBoxes(const Image& image, const std::vector<BoxOutline>& boxes, int thickness,
                const std::uint8_t (&bgr)[3]) {
  const std::int64_t w = image.extent().width;
  const std::int64_t h = image.extent().height;
  const int cn = image.channels();
  Image out(PixelType::kU8, Extent{w, h, 1}, 3);
  for (std::int64_t i = 0; i < w * h; ++i) {
    for (int c = 0; c < 3; ++c) out.bytes()[i * 3 + c] = image.bytes()[i * cn + (cn >= 3 ? c : 0)];
  }
  auto paint = [&](std::int64_t x0, std::int64_t y0, std::int64_t x1, std::int64_t y1) {
    for (std::int64_t y = std::max<std::int64_t>(y0, 0); y < std::min(y1, h); ++y) {
      for (std::int64_t x = std::max<std::int64_t>(x0, 0); x < std::min(x1, w); ++x) {
        std::copy(bgr, bgr + 3, out.bytes() + (y * w + x) * 3);
      }
    }
  };
  for (const BoxOutline& b : boxes) {
    const std::int64_t x1 = std::int64_t{b.x} + b.width;
    const std::int64_t y1 = std::int64_t{b.y} + b.height;
    paint(b.x, b.y, x1, b.y + thickness);  // top
    paint(b.x, y1 - thickness, x1, y1);    // bottom
    paint(b.x, b.y, b.x + thickness, y1);  // left
    paint(x1 - thickness, b.y, x1, y1);    // right
  }
  // Labels after every outline, so that a neighbour's outline never covers one.
  const std::uint8_t black[3] = {0, 0, 0};
  for (const BoxOutline& b : boxes) {
    if (b.label.empty()) continue;
    const std::int64_t tag_w =
        2 * kTagMargin + static_cast<std::int64_t>(b.label.size()) * 6 * kGlyphScale - kGlyphScale;
    const std::int64_t tag_h = 2 * kTagMargin + 7 * kGlyphScale;
    const std::int64_t tx = b.x;
    const std::int64_t ty = b.y >= tag_h ? b.y - tag_h : b.y;
    paint(tx, ty, tx + tag_w, ty + tag_h);
    for (std::size_t i = 0; i < b.label.size(); ++i) {
      const int g = GlyphIndex(b.label[i]);
      if (g < 0) continue;
      const std::int64_t gx = tx + kTagMargin + static_cast<std::int64_t>(i) * 6 * kGlyphScale;
      for (int row = 0; row < 7; ++row) {
        for (int col = 0; col < 5; ++col) {
          if ((kGlyphs[g][row] >> (4 - col) & 1) == 0) continue;
          const std::int64_t px = gx + col * kGlyphScale;
          const std::int64_t py = ty + kTagMargin + row * kGlyphScale;
          for (std::int64_t y = std::max<std::int64_t>(py, 0);
               y < std::min<std::int64_t>(py + kGlyphScale, h); ++y) {
            for (std::int64_t x = std::max<std::int64_t>(px, 0);
                 x < std::min<std::int64_t>(px + kGlyphScale, w); ++x) {
              std::copy(black, black + 3, out.bytes() + (y * w + x) * 3);
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace cuimg
