// Host side of the labelling shared by the CPU reference and LabelPlan: foreground bounds in a
// pixel type, and a region's raw, exact accumulators turned into RegionStats by one function,
// so that the two implementations agree whenever their integer accumulators do.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_REGION_STATS_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_REGION_STATS_H_

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "cuimg/kernels/segmentation_types.h"
#include "segmentation/segmentation_math.h"

namespace cuimg::seg {

// The foreground of T for `range` ([lo, hi] in doubles, lo <= hi, neither NaN) or, without one,
// the non-zero pixels: v in [lo, hi] as doubles exactly when lo' <= v <= hi' in T.
template <typename T>
Foreground<T> MakeForeground(const std::optional<std::array<double, 2>>& range) {
  Foreground<T> f;
  if (!range.has_value()) return f;
  f.range = true;
  const double lo = (*range)[0];
  const double hi = (*range)[1];
  if constexpr (std::is_floating_point_v<T>) {
    // The smallest float >= lo and the largest <= hi.
    float l = static_cast<float>(lo);
    if (static_cast<double>(l) < lo) l = std::nextafter(l, std::numeric_limits<float>::infinity());
    float h = static_cast<float>(hi);
    if (static_cast<double>(h) > hi) h = std::nextafter(h, -std::numeric_limits<float>::infinity());
    f.lo = l;
    f.hi = h;
  } else {
    const double l = std::ceil(lo);
    const double h = std::floor(hi);
    const double t_lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const double t_hi = static_cast<double>(std::numeric_limits<T>::max());
    if (l > h || l > t_hi || h < t_lo) {
      f.lo = std::numeric_limits<T>::max();  // an empty range: lo > hi in T
      f.hi = std::numeric_limits<T>::lowest();
    } else {
      f.lo = static_cast<T>(l < t_lo ? t_lo : l);
      f.hi = static_cast<T>(h > t_hi ? t_hi : h);
    }
  }
  return f;
}

// The exact sum of a region's finite f32 values (segmentation_math.h: SplitFinite).
using SumLimbs = std::array<std::int64_t, kSumLimbs>;

// One region's statistics as exact integers, in any order of its voxels (every field is a sum,
// a min or a max). The box's end is one past the largest coordinate. An f32 intensity's finite
// values are summed in SumLimbs kept beside it (72 bytes a region, only for f32).
struct RegionAccumulator {
  std::uint64_t voxels = 0;
  std::array<std::int64_t, 3> begin{std::numeric_limits<std::int64_t>::max(),
                                    std::numeric_limits<std::int64_t>::max(),
                                    std::numeric_limits<std::int64_t>::max()};
  std::array<std::int64_t, 3> end{};
  std::array<std::uint64_t, 3> coordinate_sum{};
  // Intensity: the largest OrderedKey and the largest complement of one (0: none, which only an
  // f32 region of NaN alone can leave: no other value's key or complement is 0).
  std::uint32_t max_key = 0;
  std::uint32_t min_key_complement = 0;
  std::uint32_t non_finite = 0;  // f32: kSumNaN | kSumPosInf | kSumNegInf
  std::int64_t integer_sum = 0;  // integer intensities

  void AddVoxel(std::int64_t x, std::int64_t y, std::int64_t z) {
    ++voxels;
    const std::int64_t c[3] = {x, y, z};
    for (int a = 0; a < 3; ++a) {
      if (c[a] < begin[a]) begin[a] = c[a];
      if (c[a] + 1 > end[a]) end[a] = c[a] + 1;
      coordinate_sum[a] += static_cast<std::uint64_t>(c[a]);
    }
  }

  // `limbs` is the region's SumLimbs for f32 (unused for integer types).
  template <typename T>
  void AddIntensity(T v, SumLimbs* limbs) {
    if constexpr (std::is_floating_point_v<T>) {
      if (const std::uint32_t bit = NonFiniteBit(v); bit != 0) {
        non_finite |= bit;
        if (bit == kSumNaN) return;
      } else {
        const LimbPair p = SplitFinite(v);
        (*limbs)[p.limb] += p.low;
        (*limbs)[p.limb + 1] += p.high;
      }
    } else {
      integer_sum += static_cast<std::int64_t>(v);
    }
    const std::uint32_t key = OrderedKey(v);
    if (key > max_key) max_key = key;
    if (~key > min_key_complement) min_key_complement = ~key;
  }
};

// The sum of limbs[i] * 2^(32 i - 149), rounded to the nearest double (ties to even).
double ExactLimbSum(const SumLimbs& limbs);

// The value of an OrderedKey of `type`.
double KeyValue(PixelType type, std::uint32_t key);

// RegionStats from `acc` (label_types.h has the definitions); intensity statistics only with an
// `intensity` type, whose f32 sums are `limbs` (not read for other types).
RegionStats FinishRegion(const RegionAccumulator& acc, std::optional<PixelType> intensity,
                         const SumLimbs* limbs);

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_REGION_STATS_H_
