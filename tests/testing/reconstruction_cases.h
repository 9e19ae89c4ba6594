// Reconstruction cases shared by the emulation test (CPU) and the GPU test: a mask and a marker
// of every type, 2D and 3D, random with plateaus, adversarial (a grey spiral walked from its
// entrance, mazes) and natural (basketball1.png), with NaN for f32.
#ifndef CUIMG_TESTS_TESTING_RECONSTRUCTION_CASES_H_
#define CUIMG_TESTS_TESTING_RECONSTRUCTION_CASES_H_

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/reconstruction.h"
#include "cuimg/kernels/segmentation_types.h"
#include "cuimg/reference/segmentation_images.h"
#include "tests/testing/random_image.h"
#include "tests/testing/segmentation_cases.h"

namespace cuimg::testing {

struct ReconstructionCase {
  std::string name;
  Image mask;
  Image marker;
  ReconstructionMethod method = ReconstructionMethod::kDilation;
  Connectivity connectivity = Connectivity::kDefault;
};

inline std::vector<Connectivity> ConnectivitiesFor(const Extent& e) {
  if (e.depth > 1) return {Connectivity::k6, Connectivity::k18, Connectivity::k26};
  return {Connectivity::k4, Connectivity::k8};
}

// `image` with about one pixel in `every` set to NaN (f32 only; others unchanged).
inline Image WithNaN(Image image, int every, std::uint64_t seed) {
  if (image.type() != PixelType::kF32) return image;
  std::mt19937_64 rng(seed);
  float* p = image.As<float>();
  for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
    if (rng() % every == 0) p[i] = std::numeric_limits<float>::quiet_NaN();
  }
  return image;
}

// Every family at sizes that leave partial bricks (widths not multiples of 32, heights not of
// the brick's rows).
inline std::vector<ReconstructionCase> ReconstructionCases(bool with_natural = true) {
  std::vector<ReconstructionCase> cases;
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32,
                             PixelType::kU32};
  const ReconstructionMethod methods[] = {ReconstructionMethod::kDilation,
                                          ReconstructionMethod::kErosion};
  std::uint64_t seed = 1000;
  for (PixelType t : types) {
    const std::string type_name(PixelTypeName(t));
    for (const Extent& e : {Extent{70, 45, 1}, Extent{37, 19, 9}}) {
      const std::string size = absl::StrCat(e.width, "x", e.height, "x", e.depth);
      for (Connectivity c : ConnectivitiesFor(e)) {
        for (ReconstructionMethod m : methods) {
          const bool dilate = m == ReconstructionMethod::kDilation;
          const std::string tag = absl::StrCat(type_name, "_", size, "_c", static_cast<int>(c),
                                               dilate ? "_dil" : "_ero");
          seed += 4;
          const Image mask = WithNaN(RandomImage(t, e, seed, 6), 13, seed + 1);
          cases.push_back(
              {"random_" + tag, mask, WithNaN(RandomImage(t, e, seed + 2, 6), 17, seed + 3), m, c});
          cases.push_back({"seeds_" + tag, mask, SeedMarker(mask, dilate, 2, ++seed), m, c});
          // A grey spiral walked from its entrance: the whole path crosses many bricks.
          const Image ramp = SpiralImage(t, e, /*ramp=*/true);
          const Image walk = dilate ? ramp : Flipped(ramp);
          cases.push_back(
              {"spiral_" + tag, walk, SeedMarker(walk, dilate, 0, 0, {e.width + 1}), m, c});
          const Image maze = MazeImage(t, e, ++seed);
          cases.push_back({"maze_" + tag, maze, SeedMarker(maze, dilate, 1, ++seed), m, c});
        }
      }
    }
    if (!with_natural) continue;
    for (const Extent& e : {Extent{150, 101, 1}, Extent{64, 40, 12}}) {
      absl::StatusOr<Image> natural = NaturalImage(e);
      if (!natural.ok()) continue;  // the callers check the data is there
      const Image in = FromU8(*natural, t);
      for (Connectivity c : ConnectivitiesFor(e)) {
        const std::string tag = absl::StrCat(type_name, "_", e.width, "x", e.height, "x", e.depth,
                                             "_c", static_cast<int>(c));
        // hmax's marker (f - 10 levels) and fill_holes' (the border, max inside).
        Image hmax = in;
        Image fill = in;
        VisitAnyPixelType(t, [&](auto tag_type) {
          using T = decltype(tag_type);
          T* h = hmax.As<T>();
          T* f = fill.As<T>();
          for (std::int64_t i = 0; i < e.Pixels(); ++i) {
            const std::int64_t x = i % e.width, y = i / e.width % e.height, z = i / e.SlicePixels();
            const bool border = x == 0 || y == 0 || x == e.width - 1 || y == e.height - 1 ||
                                (e.depth > 1 && (z == 0 || z == e.depth - 1));
            if constexpr (std::is_floating_point_v<T>) {
              h[i] = h[i] - 10.0f / 255;
              if (!border) f[i] = std::numeric_limits<T>::infinity();
            } else {
              h[i] = h[i] < std::numeric_limits<T>::lowest() + 10 * (OnValue<T>() / 255)
                         ? std::numeric_limits<T>::lowest()
                         : static_cast<T>(h[i] - 10 * (OnValue<T>() / 255));
              if (!border) f[i] = std::numeric_limits<T>::max();
            }
          }
        });
        cases.push_back({"natural_hmax_" + tag, in, hmax, ReconstructionMethod::kDilation, c});
        cases.push_back({"natural_fill_" + tag, in, fill, ReconstructionMethod::kErosion, c});
      }
    }
  }
  return cases;
}

// Every tuning of ReconstructionPlan (both schedules, either first order), named.
inline std::vector<std::pair<std::string, ReconstructionTuning>> ReconstructionTunings() {
  std::vector<std::pair<std::string, ReconstructionTuning>> out;
  ReconstructionTuning t;
  t.schedule = ReconstructionSchedule::kQueue;
  out.emplace_back("queue", t);
  t.schedule = ReconstructionSchedule::kRounds;
  out.emplace_back("rounds", t);
  t.raster_first = true;
  out.emplace_back("rounds+raster", t);
  t.schedule = ReconstructionSchedule::kQueue;
  out.emplace_back("queue+raster", t);
  return out;
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_RECONSTRUCTION_CASES_H_
