#include "cuimg/reference/segmentation_images.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

namespace cuimg {
namespace {

// Foreground: the type's maximum, 1.0 for f32.
template <typename T>
T On() {
  if constexpr (std::is_floating_point_v<T>) {
    return T{1};
  } else {
    return std::numeric_limits<T>::max();
  }
}

// An image of 0/1 bytes as a 0/On mask of `type`.
Image MaskOf(PixelType type, const Extent& extent, const std::vector<std::uint8_t>& fg) {
  Image image(type, extent, 1);
  VisitAnyPixelType(type, [&](auto tag) {
    using T = decltype(tag);
    T* p = image.As<T>();
    for (std::size_t i = 0; i < fg.size(); ++i) p[i] = fg[i] ? On<T>() : T{0};
  });
  return image;
}

}  // namespace

Image SpiralImage(PixelType type, const Extent& extent, bool ramp) {
  const std::int64_t w = extent.width, h = extent.height;
  // The path's pixels in order, in one slice.
  std::vector<std::int64_t> path;
  std::int64_t x = 1, y = 1;
  if (w >= 3 && h >= 3) path.push_back(y * w + x);
  // Right, down, left, up; each leg two pixels shorter than the last leg along its axis (after
  // the first three), leaving a one-pixel wall between neighbouring legs.
  std::int64_t len_x = w - 3, len_y = h - 3;
  const std::array<std::pair<int, int>, 4> dirs{{{1, 0}, {0, 1}, {-1, 0}, {0, -1}}};
  for (int leg = 0;; ++leg) {
    const auto [dx, dy] = dirs[leg % 4];
    if (leg >= 3) (dx != 0 ? len_x : len_y) -= 2;
    const std::int64_t len = dx != 0 ? len_x : len_y;
    if (len < 1) break;
    for (std::int64_t k = 0; k < len; ++k) {
      x += dx;
      y += dy;
      path.push_back(y * w + x);
    }
  }
  Image image(type, extent, 1);
  VisitAnyPixelType(type, [&](auto tag) {
    using T = decltype(tag);
    T* p = image.As<T>();
    const double steps = static_cast<double>(path.size());
    for (std::size_t i = 0; i < path.size(); ++i) {
      T v = On<T>();
      if (ramp) {
        // Falling evenly from the maximum towards 1 (integers) or 0 (f32), never reaching the
        // walls' 0.
        const double t = static_cast<double>(i) / steps;
        if constexpr (std::is_floating_point_v<T>) {
          v = static_cast<T>(1.0 - t);
        } else {
          v = static_cast<T>(std::numeric_limits<T>::max() -
                             std::floor(t * (std::numeric_limits<T>::max() - 1)));
        }
      }
      for (std::int64_t z = 0; z < extent.depth; ++z) p[z * w * h + path[i]] = v;
    }
  });
  return image;
}

Image MazeImage(PixelType type, const Extent& extent, std::uint64_t seed) {
  const std::int64_t w = extent.width, h = extent.height, d = extent.depth;
  const bool volume = d > 1;
  std::vector<std::uint8_t> fg(static_cast<std::size_t>(extent.Pixels()), 0);
  // Cells at odd coordinates (z too in a volume).
  const std::int64_t cx = (w - 1) / 2, cy = (h - 1) / 2, cz = volume ? (d - 1) / 2 : 1;
  if (cx < 1 || cy < 1 || cz < 1) return MaskOf(type, extent, fg);
  auto pixel = [&](std::int64_t x, std::int64_t y, std::int64_t z) {
    return static_cast<std::size_t>((z * h + y) * w + x);
  };
  auto cell_pixel = [&](std::int64_t c) {
    const std::int64_t x = c % cx, y = (c / cx) % cy, z = c / (cx * cy);
    return pixel(2 * x + 1, 2 * y + 1, volume ? 2 * z + 1 : 0);
  };
  std::vector<std::uint8_t> visited(static_cast<std::size_t>(cx * cy * cz), 0);
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> stack{0};
  visited[0] = 1;
  fg[cell_pixel(0)] = 1;
  const std::int64_t strides[3] = {1, cx, cx * cy};
  const std::int64_t counts[3] = {cx, cy, cz};
  while (!stack.empty()) {
    const std::int64_t c = stack.back();
    const std::int64_t coord[3] = {c % cx, (c / cx) % cy, c / (cx * cy)};
    std::int64_t options[6];
    int n = 0;
    for (int axis = 0; axis < (volume ? 3 : 2); ++axis) {
      for (int sign : {-1, 1}) {
        const std::int64_t k = coord[axis] + sign;
        if (k < 0 || k >= counts[axis]) continue;
        const std::int64_t next = c + sign * strides[axis];
        if (!visited[next]) options[n++] = next;
      }
    }
    if (n == 0) {
      stack.pop_back();
      continue;
    }
    const std::int64_t next = options[rng() % n];
    visited[next] = 1;
    // The wall between two cells is the pixel halfway between them.
    const std::size_t a = cell_pixel(c), b = cell_pixel(next);
    fg[(a + b) / 2] = 1;
    fg[b] = 1;
    stack.push_back(next);
  }
  return MaskOf(type, extent, fg);
}

Image BlobImage(PixelType type, const Extent& extent, std::uint64_t seed, int max_radius) {
  const bool volume = extent.depth > 1;
  std::vector<std::uint8_t> fg(static_cast<std::size_t>(extent.Pixels()), 0);
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  // Sets every pixel of the ball (disc) at c of radius r to `value`.
  auto paint = [&](const std::array<double, 3>& c, double r, std::uint8_t value) {
    const std::int64_t z0 = volume ? std::max<std::int64_t>(0, std::floor(c[2] - r)) : 0;
    const std::int64_t z1 = volume ? std::min<std::int64_t>(extent.depth - 1, c[2] + r) : 0;
    for (std::int64_t z = z0; z <= z1; ++z) {
      for (std::int64_t y = std::max<std::int64_t>(0, std::floor(c[1] - r));
           y <= std::min<std::int64_t>(extent.height - 1, c[1] + r); ++y) {
        for (std::int64_t x = std::max<std::int64_t>(0, std::floor(c[0] - r));
             x <= std::min<std::int64_t>(extent.width - 1, c[0] + r); ++x) {
          const double dz = volume ? z - c[2] : 0;
          if ((x - c[0]) * (x - c[0]) + (y - c[1]) * (y - c[1]) + dz * dz <= r * r) {
            fg[static_cast<std::size_t>((z * extent.height + y) * extent.width + x)] = value;
          }
        }
      }
    }
  };
  const double r_mean = (4.0 + max_radius) / 2;
  const double blob_volume =
      volume ? 4.0 / 3 * M_PI * r_mean * r_mean * r_mean : M_PI * r_mean * r_mean;
  // About a third of the image covered.
  const std::int64_t blobs =
      std::max<std::int64_t>(1, std::llround(extent.Pixels() / blob_volume / 3));
  for (std::int64_t b = 0; b < blobs; ++b) {
    const std::array<double, 3> c{uniform(0, extent.width), uniform(0, extent.height),
                                  volume ? uniform(0, extent.depth) : 0.0};
    const double r = uniform(4, std::max(4, max_radius));
    paint(c, r, 1);
    const int holes = static_cast<int>(rng() % 4);
    for (int k = 0; k < holes; ++k) {
      const std::array<double, 3> hc{c[0] + uniform(-r / 2, r / 2), c[1] + uniform(-r / 2, r / 2),
                                     volume ? c[2] + uniform(-r / 2, r / 2) : 0.0};
      paint(hc, uniform(1, std::max(1.5, r / 3)), 0);
    }
  }
  return MaskOf(type, extent, fg);
}

Image CtLikeVolume(const Extent& extent, std::uint64_t seed) {
  Image image(PixelType::kI16, extent, 1);
  std::int16_t* p = image.As<std::int16_t>();
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> noise(-6, 6);
  const double cx = extent.width / 2.0, cy = extent.height / 2.0;
  const double ax = 0.42 * extent.width, ay = 0.32 * extent.height;
  for (std::int64_t z = 0; z < extent.depth; ++z) {
    for (std::int64_t y = 0; y < extent.height; ++y) {
      for (std::int64_t x = 0; x < extent.width; ++x) {
        const double u = (x - cx) / ax, v = (y - cy) / ay;
        const double body = u * u + v * v;
        double hu = -1000;
        if (body <= 1) {
          hu = 40 + 25 * std::sin(x / 17.0) * std::cos(y / 23.0) * std::sin(z / 11.0 + 0.5);
          // Lungs: two ellipses left and right of the centre.
          for (double side : {-0.45, 0.45}) {
            const double lu = (u - side) / 0.33, lv = (v + 0.05) / 0.6;
            if (lu * lu + lv * lv <= 1) hu = -850 + 30 * std::sin(z / 7.0 + x / 13.0);
          }
          // Ribs: a ring just inside the skin, interrupted every 0.4 rad; the spine behind.
          const double angle = std::atan2(v, u);
          if (body > 0.8 && body < 0.88 && std::fmod(angle + 4 * M_PI, 0.4) < 0.25) {
            hu = 400 + 800 * std::fabs(std::sin(3 * angle + z / 29.0));
          }
          const double su = u / 0.12, sv = (v - 0.7) / 0.16;
          if (su * su + sv * sv <= 1) hu = 700 + 300 * std::cos(z / 5.0);
        }
        p[(z * extent.height + y) * extent.width + x] =
            static_cast<std::int16_t>(std::lround(hu) + noise(rng));
      }
    }
  }
  return image;
}

}  // namespace cuimg
