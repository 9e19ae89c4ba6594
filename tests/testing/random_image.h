// Random test images over each type's whole range, reproducible by seed.
#ifndef CUIMG_TESTS_TESTING_RANDOM_IMAGE_H_
#define CUIMG_TESTS_TESTING_RANDOM_IMAGE_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "cuimg/common/image.h"

namespace cuimg::testing {

// Uniform over the type's range; f32 in [-1e3, 1e3] with a few infinities unless `finite`.
// `levels` > 0 limits integer values to that many distinct levels (plateaus exercise ties).
inline Image RandomImage(PixelType type, Extent extent, std::uint64_t seed, int levels = 0,
                         bool finite = false) {
  Image image(type, extent, 1);
  std::mt19937_64 rng(seed);
  const std::int64_t n = extent.Pixels();
  VisitAnyPixelType(type, [&](auto tag) {
    using T = decltype(tag);
    T* p = image.As<T>();
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        std::uniform_real_distribution<float> d(-1e3f, 1e3f);
        p[i] = d(rng);
        if (!finite && rng() % 997 == 0)
          p[i] = (rng() & 1) ? std::numeric_limits<float>::infinity()
                             : -std::numeric_limits<float>::infinity();
      } else if constexpr (sizeof(T) == 4) {
        std::uniform_int_distribution<std::uint32_t> d;
        std::uint32_t v = d(rng);
        if (levels > 0) v = v / (0xffffffffu / levels + 1) * (0xffffffffu / levels);
        p[i] = static_cast<T>(v);
      } else {
        std::uniform_int_distribution<int> d(std::numeric_limits<T>::lowest(),
                                             std::numeric_limits<T>::max());
        int v = d(rng);
        if (levels > 0) {
          const int span = std::numeric_limits<T>::max() - std::numeric_limits<T>::lowest();
          v = std::numeric_limits<T>::lowest() +
              (v - std::numeric_limits<T>::lowest()) / (span / levels + 1) * (span / levels);
        }
        p[i] = static_cast<T>(v);
      }
    }
    return 0;
  });
  return image;
}

// Index of the first element where a and b differ (by value; NaN equals NaN, -0 equals +0), or -1.
inline std::int64_t FirstMismatch(const Image& a, const Image& b) {
  if (a.type() != b.type() || a.extent() != b.extent()) return 0;
  const std::int64_t n = a.extent().Pixels() * a.channels();
  return VisitAnyPixelType(a.type(), [&](auto tag) -> std::int64_t {
    using T = decltype(tag);
    const T* pa = a.As<T>();
    const T* pb = b.As<T>();
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(pa[i]) && std::isnan(pb[i])) continue;
      }
      if (!(pa[i] == pb[i])) return i;
    }
    return -1;
  });
}

inline std::string DescribeMismatch(const Image& a, const Image& b, std::int64_t i) {
  const Extent& e = a.extent();
  return VisitAnyPixelType(a.type(), [&](auto tag) {
    using T = decltype(tag);
    return "at (x=" + std::to_string(i % e.width) +
           ", y=" + std::to_string(i / e.width % e.height) +
           ", z=" + std::to_string(i / e.SlicePixels()) +
           "): " + std::to_string(static_cast<double>(a.As<T>()[i])) + " vs " +
           std::to_string(static_cast<double>(b.As<T>()[i]));
  });
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_RANDOM_IMAGE_H_
