// Inputs for the segmentation steps' tests and benchmarks: natural images in every pixel type,
// the adversarial hole-filling cases (a spiral or maze of background open to the border at one
// end, so the border's value must travel its whole path) and markers.
#ifndef CUIMG_TESTS_TESTING_SEGMENTATION_CASES_H_
#define CUIMG_TESTS_TESTING_SEGMENTATION_CASES_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/image.h"
#include "cuimg/reference/segmentation_images.h"

namespace cuimg::testing {

// Where opencv-doc's images are: $CUIMG_DATA, else Debian's opencv-doc.
inline std::string SegmentationDataDir() {
  const char* v = std::getenv("CUIMG_DATA");
  return v != nullptr && *v != '\0' ? v : "/usr/share/doc/opencv-doc/examples/data";
}

// The type's maximum, 1.0 for f32 (the "on" of a mask).
template <typename T>
T OnValue() {
  if constexpr (std::is_floating_point_v<T>) {
    return T{1};
  } else {
    return std::numeric_limits<T>::max();
  }
}

// A u8 image in `type`, spread over the type's range: u16 v * 257, i16 v * 256 - 32768,
// f32 v / 255 (0 stays the lowest grey, 255 becomes the type's "on").
inline Image FromU8(const Image& u8, PixelType type) {
  Image out(type, u8.extent(), 1);
  const std::uint8_t* in = u8.As<std::uint8_t>();
  VisitAnyPixelType(type, [&](auto tag) {
    using T = decltype(tag);
    T* p = out.As<T>();
    for (std::int64_t i = 0; i < u8.extent().Pixels(); ++i) {
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        p[i] = in[i];
      } else if constexpr (std::is_same_v<T, std::int16_t>) {
        p[i] = static_cast<T>(in[i] * 256 - 32768);
      } else if constexpr (std::is_floating_point_v<T>) {
        p[i] = static_cast<T>(in[i] / 255.0);
      } else {
        p[i] = static_cast<T>(in[i] * (std::numeric_limits<T>::max() / 255));
      }
    }
  });
  return out;
}

// FromU8's value of grey level `v` (0..255) in `type`, as a double (thresholds, heights).
inline double LevelOf(PixelType type, double v) {
  switch (type) {
    case PixelType::kU8:
      return v;
    case PixelType::kU16:
      return v * 257;
    case PixelType::kI16:
      return v * 256 - 32768;
    case PixelType::kU32:
      return v * (std::numeric_limits<std::uint32_t>::max() / 255);
    case PixelType::kF32:
      break;
  }
  return v / 255;
}

// basketball1.png (opencv-doc) as a grey u8 image of `width` x `height` x `depth`, sampled
// bilinearly from the whole picture (slices are the picture shifted by 7 pixels a slice, so a
// volume is not constant along z). NOT_FOUND without the file.
inline absl::StatusOr<Image> NaturalImage(const Extent& extent) {
  const std::string path = SegmentationDataDir() + "/basketball1.png";
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(path);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                        std::istreambuf_iterator<char>());
  absl::StatusOr<Image> decoded = DecodeImage(bytes);
  if (!decoded.ok()) return decoded.status();
  const Extent src = decoded->extent();
  const int channels = decoded->channels();
  const std::uint8_t* s = decoded->As<std::uint8_t>();
  auto grey = [&](std::int64_t x, std::int64_t y) {
    x = std::clamp<std::int64_t>(x, 0, src.width - 1);
    y = std::clamp<std::int64_t>(y, 0, src.height - 1);
    int sum = 0;
    for (int c = 0; c < channels; ++c) sum += s[(y * src.width + x) * channels + c];
    return static_cast<double>(sum) / channels;
  };
  Image out(PixelType::kU8, extent, 1);
  std::uint8_t* p = out.As<std::uint8_t>();
  for (std::int64_t z = 0; z < extent.depth; ++z) {
    for (std::int64_t y = 0; y < extent.height; ++y) {
      for (std::int64_t x = 0; x < extent.width; ++x) {
        const double fx = (x + 0.5) * src.width / extent.width - 0.5 + 7 * z;
        const double fy = (y + 0.5) * src.height / extent.height - 0.5;
        const std::int64_t x0 = static_cast<std::int64_t>(std::floor(fx));
        const std::int64_t y0 = static_cast<std::int64_t>(std::floor(fy));
        const double ax = fx - x0, ay = fy - y0;
        const double v = (1 - ay) * ((1 - ax) * grey(x0, y0) + ax * grey(x0 + 1, y0)) +
                         ay * ((1 - ax) * grey(x0, y0 + 1) + ax * grey(x0 + 1, y0 + 1));
        p[(z * extent.height + y) * extent.width + x] = static_cast<std::uint8_t>(std::lround(v));
      }
    }
  }
  return out;
}

// `mask` with its values inverted (on <-> 0).
inline Image Inverted(const Image& mask) {
  Image out = mask;
  VisitAnyPixelType(mask.type(), [&](auto tag) {
    using T = decltype(tag);
    T* p = out.As<T>();
    for (std::int64_t i = 0; i < mask.extent().Pixels(); ++i) {
      p[i] = p[i] == T{0} ? OnValue<T>() : T{0};
    }
  });
  return out;
}

// `image` with its order reversed: max + lowest - v for integers, 1 - v for f32 (its masks'
// range), so a spiral ramp rises along its path.
inline Image Flipped(const Image& image) {
  Image out = image;
  VisitAnyPixelType(image.type(), [&](auto tag) {
    using T = decltype(tag);
    T* p = out.As<T>();
    for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        p[i] = 1 - p[i];
      } else {
        p[i] = static_cast<T>(std::int64_t{std::numeric_limits<T>::max()} +
                              std::numeric_limits<T>::lowest() - p[i]);
      }
    }
  });
  return out;
}

// fill_holes' adversarial case: the spiral's corridor as background (0) between walls (on),
// opened to the border at its entrance, so the border's 0 must travel the whole corridor.
// `closed` leaves the entrance shut: the whole corridor is then a hole.
inline Image OpenSpiral(PixelType type, const Extent& extent, bool closed = false) {
  Image image = Inverted(SpiralImage(type, extent));
  if (!closed && extent.width >= 3 && extent.height >= 3) {
    VisitAnyPixelType(type, [&](auto tag) {
      using T = decltype(tag);
      for (std::int64_t z = 0; z < extent.depth; ++z) {
        image.As<T>()[z * extent.SlicePixels() + extent.width] = T{0};  // (0, 1)
      }
    });
  }
  return image;
}

// The maze's corridors as background, open at (0, 1), with one corridor pixel walled up (chosen
// by `seed` among those past the first tenth of the image) so that the part beyond it is a hole.
inline Image OpenMaze(PixelType type, const Extent& extent, std::uint64_t seed) {
  Image image = Inverted(MazeImage(type, extent, seed));
  VisitAnyPixelType(type, [&](auto tag) {
    using T = decltype(tag);
    T* p = image.As<T>();
    if (extent.width >= 3 && extent.height >= 3) p[extent.width] = T{0};  // (0, 1, 0)
    std::vector<std::int64_t> corridor;
    for (std::int64_t i = extent.Pixels() / 10; i < extent.Pixels(); ++i) {
      if (p[i] == T{0}) corridor.push_back(i);
    }
    if (!corridor.empty()) p[corridor[std::mt19937_64(seed)() % corridor.size()]] = OnValue<T>();
  });
  return image;
}

// `image` with the square [0, size)^2 of every slice set to the type's "on": on a spiral or maze
// mask, a block that an erosion by an element smaller than it leaves standing while it wipes out
// the one-pixel corridors, so open_rec must grow the corridors back from the block along their
// whole path.
inline Image WithCornerBlock(Image image, int size) {
  const Extent& e = image.extent();
  VisitAnyPixelType(image.type(), [&](auto tag) {
    using T = decltype(tag);
    T* p = image.As<T>();
    for (std::int64_t z = 0; z < e.depth; ++z) {
      for (std::int64_t y = 0; y < std::min<std::int64_t>(size, e.height); ++y) {
        for (std::int64_t x = 0; x < std::min<std::int64_t>(size, e.width); ++x) {
          p[(z * e.height + y) * e.width + x] = OnValue<T>();
        }
      }
    }
  });
  return image;
}

// A marker for reconstruction by dilation (erosion) of `mask`: the type's lowest (highest)
// everywhere but `seeds` pixels chosen by `seed`, which take the mask's value.
inline Image SeedMarker(const Image& mask, bool dilate, int seeds, std::uint64_t seed,
                        std::vector<std::int64_t> at = {}) {
  Image out = mask;
  std::mt19937_64 rng(seed);
  const std::int64_t n = mask.extent().Pixels();
  for (int k = 0; k < seeds; ++k) at.push_back(static_cast<std::int64_t>(rng() % n));
  VisitAnyPixelType(mask.type(), [&](auto tag) {
    using T = decltype(tag);
    const T fill = dilate ? PixelLowest<T>() : PixelMax<T>();
    T* p = out.As<T>();
    for (std::int64_t i = 0; i < n; ++i) p[i] = fill;
    for (std::int64_t i : at) p[i] = mask.As<T>()[i];
  });
  return out;
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_SEGMENTATION_CASES_H_
