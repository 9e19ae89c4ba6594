// Masks for the segmentation tests and benchmarks, reproducible by seed: random noise, blobs with
// holes, and the adversarial shapes whose paths are as long as the image (spirals, mazes), as
// u8 0/1 masks; and images of any type that are non-zero exactly on a mask.
#ifndef CUIMG_TESTS_TESTING_SEGMENTATION_IMAGES_H_
#define CUIMG_TESTS_TESTING_SEGMENTATION_IMAGES_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuimg/common/image.h"

namespace cuimg::testing {

inline Image NoiseMask(Extent e, double density, std::uint64_t seed) {
  Image mask(PixelType::kU8, e);
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution on(density);
  for (std::int64_t i = 0; i < e.Pixels(); ++i) mask.As<std::uint8_t>()[i] = on(rng);
  return mask;
}

inline Image Checkerboard(Extent e) {
  Image mask(PixelType::kU8, e);
  std::int64_t i = 0;
  for (std::int64_t z = 0; z < e.depth; ++z) {
    for (std::int64_t y = 0; y < e.height; ++y) {
      for (std::int64_t x = 0; x < e.width; ++x, ++i) {
        mask.As<std::uint8_t>()[i] = (x + y + z) % 2;
      }
    }
  }
  return mask;
}

// Every slice holds a line spiralling inwards with rings two apart: the line is one path of
// about half the slice's pixels, and so is the gap between its rings (`invert`).
inline Image SpiralMask(Extent e, bool invert) {
  Image mask(PixelType::kU8, e);
  std::uint8_t* m = mask.As<std::uint8_t>();
  const std::int64_t w = e.width, h = e.height;
  const int dx[] = {1, 0, -1, 0}, dy[] = {0, 1, 0, -1};
  std::int64_t x = 0, y = 0;
  int d = 0, turns = 0;
  m[0] = 1;
  while (turns < 2) {
    const std::int64_t nx = x + dx[d], ny = y + dy[d], fx = x + 2 * dx[d], fy = y + 2 * dy[d];
    const bool free = nx >= 0 && nx < w && ny >= 0 && ny < h && !m[ny * w + nx];
    if (free && !(fx >= 0 && fx < w && fy >= 0 && fy < h && m[fy * w + fx])) {
      x = nx;
      y = ny;
      m[y * w + x] = 1;
      turns = 0;
    } else {
      d = (d + 1) % 4;
      ++turns;
    }
  }
  for (std::int64_t z = 1; z < e.depth; ++z) std::copy(m, m + w * h, m + z * w * h);
  if (invert) {
    for (std::int64_t i = 0; i < e.Pixels(); ++i) m[i] = !m[i];
  }
  return mask;
}

// A perfect maze per slice: corridors (1) on a grid of cells two pixels apart, opened by a
// random depth-first walk, so they form one tree whose paths wind through the whole slice.
inline Image MazeMask(Extent e, std::uint64_t seed) {
  Image mask(PixelType::kU8, e);
  std::uint8_t* m = mask.As<std::uint8_t>();
  const std::int64_t w = e.width, h = e.height;
  const std::int64_t cw = (w + 1) / 2, ch = (h + 1) / 2;
  std::mt19937_64 rng(seed);
  for (std::int64_t z = 0; z < e.depth; ++z) {
    std::uint8_t* s = m + z * w * h;
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(cw * ch), 0);
    std::vector<std::pair<std::int64_t, std::int64_t>> stack = {{0, 0}};
    seen[0] = 1;
    s[0] = 1;
    while (!stack.empty()) {
      const auto [cx, cy] = stack.back();
      std::pair<std::int64_t, std::int64_t> next[4];
      int options = 0;
      const int ddx[] = {1, 0, -1, 0}, ddy[] = {0, 1, 0, -1};
      for (int d = 0; d < 4; ++d) {
        const std::int64_t nx = cx + ddx[d], ny = cy + ddy[d];
        if (nx >= 0 && nx < cw && ny >= 0 && ny < ch && !seen[ny * cw + nx]) {
          next[options++] = {nx, ny};
        }
      }
      if (options == 0) {
        stack.pop_back();
        continue;
      }
      const auto [nx, ny] = next[rng() % options];
      seen[ny * cw + nx] = 1;
      s[(2 * ny) * w + 2 * nx] = 1;
      s[(cy + ny) * w + (cx + nx)] = 1;  // the wall between the two cells
      stack.push_back({nx, ny});
    }
  }
  return mask;
}

// Random balls (discs in 2D) of radius [r_min, r_max], each with a smaller ball cut out of it
// when `holes`: a segmentation-like mask of many components with holes in them.
inline Image BlobMask(Extent e, int count, double r_min, double r_max, bool holes,
                      std::uint64_t seed) {
  Image mask(PixelType::kU8, e);
  std::uint8_t* m = mask.As<std::uint8_t>();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const bool volume = e.depth > 1;
  auto paint = [&](double cx, double cy, double cz, double r, std::uint8_t v) {
    const std::int64_t x0 = std::max<std::int64_t>(0, static_cast<std::int64_t>(cx - r));
    const std::int64_t x1 = std::min<std::int64_t>(e.width - 1, static_cast<std::int64_t>(cx + r));
    const std::int64_t y0 = std::max<std::int64_t>(0, static_cast<std::int64_t>(cy - r));
    const std::int64_t y1 = std::min<std::int64_t>(e.height - 1, static_cast<std::int64_t>(cy + r));
    const std::int64_t z0 =
        volume ? std::max<std::int64_t>(0, static_cast<std::int64_t>(cz - r)) : 0;
    const std::int64_t z1 =
        volume ? std::min<std::int64_t>(e.depth - 1, static_cast<std::int64_t>(cz + r)) : 0;
    for (std::int64_t z = z0; z <= z1; ++z) {
      for (std::int64_t y = y0; y <= y1; ++y) {
        for (std::int64_t x = x0; x <= x1; ++x) {
          const double d2 =
              (x - cx) * (x - cx) + (y - cy) * (y - cy) + (volume ? (z - cz) * (z - cz) : 0.0);
          if (d2 <= r * r) m[(z * e.height + y) * e.width + x] = v;
        }
      }
    }
  };
  for (int i = 0; i < count; ++i) {
    const double cx = u(rng) * e.width, cy = u(rng) * e.height, cz = u(rng) * e.depth;
    const double r = r_min + u(rng) * (r_max - r_min);
    paint(cx, cy, cz, r, 1);
    if (holes) paint(cx + 0.2 * r, cy - 0.1 * r, cz, 0.45 * r, 0);
  }
  return mask;
}

// An image of `type` that is non-zero exactly where `mask` is: random values over much of the
// type's range (f32: also NaN in some background pixels, which is background too).
inline Image ValuesOn(const Image& mask, PixelType type, std::uint64_t seed) {
  Image out(type, mask.extent());
  std::mt19937_64 rng(seed);
  const std::uint8_t* m = mask.As<std::uint8_t>();
  VisitAnyPixelType(type, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.As<T>();
    for (std::int64_t i = 0; i < mask.extent().Pixels(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (m[i]) {
          const float v = std::uniform_real_distribution<float>(-1e4f, 1e4f)(rng);
          p[i] = v == 0 ? 1.0f : v;
        } else {
          p[i] = rng() % 5 == 0 ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
        }
      } else {
        const std::int64_t lo = std::numeric_limits<T>::lowest();
        const std::int64_t hi = std::numeric_limits<T>::max();
        const T v = static_cast<T>(
            lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1)));
        p[i] = m[i] ? (v == 0 ? T{1} : v) : T{0};
      }
    }
    return 0;
  });
  return out;
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_SEGMENTATION_IMAGES_H_
