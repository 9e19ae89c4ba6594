// Device side of the region statistics: the region table (structure of arrays, one row per
// label) and a thread's open run of one label, folded with its warp's runs before the atomics.
// Every field is an integer sum, min or max (segmentation_math.h), so the atomics' order never
// shows in the result, and RegionAccumulator (region_stats.h) reads the same values back.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_REGION_DEVICE_CUH_
#define CUIMG_KERNELS_SRC_SEGMENTATION_REGION_DEVICE_CUH_

#include <cstdint>
#include <type_traits>

#include "segmentation/ccl_device.cuh"
#include "segmentation/segmentation_math.h"

namespace cuimg::seg {

// Device pointers into the workspace, `capacity` rows each ([3][capacity] for the axes,
// [kSumLimbs][capacity] for f32 sums). The zero row is the empty region: boxes are stored as
// 0x7fffffff - first coordinate and last coordinate + 1, both maximised.
struct RegionTable {
  std::uint32_t capacity = 0;
  std::uint32_t* voxels = nullptr;
  std::int32_t* first = nullptr;
  std::int32_t* end = nullptr;
  unsigned long long* coordinate_sum = nullptr;
  std::uint32_t* max_key = nullptr;
  std::uint32_t* min_key_complement = nullptr;
  std::uint32_t* non_finite = nullptr;
  unsigned long long* sum = nullptr;  // integers: [capacity]; f32: [kSumLimbs][capacity]
};

// No intensity image.
struct NoIntensity {};

template <typename I>
inline constexpr bool kHasIntensity = !std::is_same_v<I, NoIntensity>;
template <typename I>
inline constexpr bool kFloatIntensity = std::is_same_v<I, float>;

// Zeroes row `row` (the Number kernel does it for each label it hands out).
template <typename I>
__device__ __forceinline__ void ClearRow(const RegionTable& t, std::uint32_t row) {
  const std::uint32_t c = t.capacity;
  t.voxels[row] = 0;
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    t.first[a * c + row] = 0;
    t.end[a * c + row] = 0;
    t.coordinate_sum[a * c + row] = 0;
  }
  if constexpr (kHasIntensity<I>) {
    t.max_key[row] = 0;
    t.min_key_complement[row] = 0;
    if constexpr (kFloatIntensity<I>) {
      t.non_finite[row] = 0;
#pragma unroll
      for (int j = 0; j < kSumLimbs; ++j) t.sum[j * c + row] = 0;
    } else {
      t.sum[row] = 0;
    }
  }
}

// The statistics of consecutive pixels of one label, as one thread sees them. kAxes: 2 for
// images (z is 0), 3 for volumes.
template <typename I, int kAxes>
struct RegionRun {
  std::uint32_t label = 0;  // 0: no open run
  std::uint32_t voxels = 0;
  std::int32_t first[kAxes];
  std::int32_t end[kAxes];
  unsigned long long coordinate_sum[kAxes];
  std::uint32_t max_key = 0;
  std::uint32_t min_key_complement = 0;
  std::uint32_t non_finite = 0;
  long long sum[kFloatIntensity<I> ? kSumLimbs : 1];

  __device__ void Start(std::uint32_t k, const std::int32_t* c, I value) {
    label = k;
    voxels = 0;
#pragma unroll
    for (int a = 0; a < kAxes; ++a) {
      first[a] = 0x7fffffff - c[a];
      end[a] = 0;
      coordinate_sum[a] = 0;
    }
    max_key = min_key_complement = non_finite = 0;
#pragma unroll
    for (int j = 0; j < (kFloatIntensity<I> ? kSumLimbs : 1); ++j) sum[j] = 0;
    Add(c, value);
  }

  __device__ void Add(const std::int32_t* c, I value) {
    ++voxels;
#pragma unroll
    for (int a = 0; a < kAxes; ++a) {
      first[a] = max(first[a], 0x7fffffff - c[a]);
      end[a] = max(end[a], c[a] + 1);
      coordinate_sum[a] += static_cast<unsigned long long>(c[a]);
    }
    if constexpr (kHasIntensity<I>) {
      if constexpr (kFloatIntensity<I>) {
        const std::uint32_t bit = NonFiniteBit(value);
        non_finite |= bit;
        if (bit == kSumNaN) return;
        if (bit == 0) {
          const LimbPair p = SplitFinite(value);
#pragma unroll
          for (int j = 0; j < kSumLimbs; ++j) {
            sum[j] += (j == p.limb ? p.low : 0) + (j == p.limb + 1 ? p.high : 0);
          }
        }
      } else {
        sum[0] += static_cast<long long>(value);
      }
      const std::uint32_t key = OrderedKey(value);
      max_key = max(max_key, key);
      min_key_complement = max(min_key_complement, ~key);
    }
  }

  // Folds in lane `lane + i`'s run when `same` (every lane must call it: it shuffles).
  __device__ void ShuffleMerge(int i, bool same) {
    constexpr unsigned kAll = 0xffffffffu;
    const std::uint32_t v = __shfl_down_sync(kAll, voxels, i);
    if (same) voxels += v;
#pragma unroll
    for (int a = 0; a < kAxes; ++a) {
      const std::int32_t f = __shfl_down_sync(kAll, first[a], i);
      const std::int32_t e = __shfl_down_sync(kAll, end[a], i);
      const unsigned long long s = __shfl_down_sync(kAll, coordinate_sum[a], i);
      if (same) {
        first[a] = max(first[a], f);
        end[a] = max(end[a], e);
        coordinate_sum[a] += s;
      }
    }
    if constexpr (kHasIntensity<I>) {
      const std::uint32_t hi = __shfl_down_sync(kAll, max_key, i);
      const std::uint32_t lo = __shfl_down_sync(kAll, min_key_complement, i);
      const std::uint32_t nf = __shfl_down_sync(kAll, non_finite, i);
      if (same) {
        max_key = max(max_key, hi);
        min_key_complement = max(min_key_complement, lo);
        non_finite |= nf;
      }
#pragma unroll
      for (int j = 0; j < (kFloatIntensity<I> ? kSumLimbs : 1); ++j) {
        const long long s = __shfl_down_sync(kAll, sum[j], i);
        if (same) sum[j] += s;
      }
    }
  }

  __device__ void Flush(const RegionTable& t) const {
    const std::uint32_t row = label - 1;
    const std::uint32_t c = t.capacity;
    atomicAdd(t.voxels + row, voxels);
#pragma unroll
    for (int a = 0; a < kAxes; ++a) {
      atomicMax(t.first + a * c + row, first[a]);
      atomicMax(t.end + a * c + row, end[a]);
      atomicAdd(t.coordinate_sum + a * c + row, coordinate_sum[a]);
    }
    if constexpr (kHasIntensity<I>) {
      atomicMax(t.max_key + row, max_key);
      atomicMax(t.min_key_complement + row, min_key_complement);
      if constexpr (kFloatIntensity<I>) {
        if (non_finite != 0) atomicOr(t.non_finite + row, non_finite);
#pragma unroll
        for (int j = 0; j < kSumLimbs; ++j) {
          if (sum[j] != 0) {
            atomicAdd(t.sum + j * c + row, static_cast<unsigned long long>(sum[j]));
          }
        }
      } else {
        atomicAdd(t.sum + row, static_cast<unsigned long long>(sum[0]));
      }
    }
  }
};

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_REGION_DEVICE_CUH_
