// ReconstructionPlan's union-find route: one pass finds whether the mask and the clamped marker
// hold at most two values between them; if so the reconstruction is binary and runs as the
// labelling's FillUnseededComponentsOnDevice, seeded by an indicator of the marker's seed value.
#include "segmentation/two_levels.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/mask_steps.h"

namespace cuimg::seg {
namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ unsigned long long BitsOf(T v) {
  if constexpr (sizeof(T) == 4) {
    std::uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
  } else if constexpr (sizeof(T) == 2) {
    std::uint16_t u;
    std::memcpy(&u, &v, 2);
    return u;
  } else {
    return static_cast<std::uint8_t>(v);
  }
}

// Adds `k` to the set `slots` of at most two values (kNoValue: empty); false when both slots
// already hold other values. Slots only ever go from empty to a value, so a failed
// compare-and-swap returns the value another thread put there.
__device__ __forceinline__ bool Insert(unsigned long long* slots, unsigned long long k) {
  for (int s = 0; s < 2; ++s) {
    const unsigned long long old = atomicCAS(&slots[s], TwoLevels::kNoValue, k);
    if (old == TwoLevels::kNoValue || old == k) return true;
  }
  return false;
}

// Each block gathers its values in shared memory (a thread remembers the two it last saw, so
// atomics are rare), then merges them into the device's set.
template <typename T>
__global__ void FindLevelsKernel(const T* mask, const T* r, std::int64_t n, TwoLevels* out) {
  __shared__ unsigned long long slots[2];
  __shared__ int more;
  if (threadIdx.x == 0) {
    slots[0] = slots[1] = TwoLevels::kNoValue;
    more = 0;
  }
  __syncthreads();
  unsigned long long seen[2] = {TwoLevels::kNoValue, TwoLevels::kNoValue};
  bool overflow = false;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < n && !overflow; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const T values[2] = {mask[i], r[i]};
    for (const T v : values) {
      if (IsNaN(v)) {
        overflow = true;
        break;
      }
      const unsigned long long k = BitsOf(v);
      if (k == seen[0] || k == seen[1]) continue;
      if (!Insert(slots, k)) {
        overflow = true;
        break;
      }
      seen[1] = seen[0];
      seen[0] = k;
    }
  }
  if (overflow) more = 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    if (more) out->more = 1;
    for (int s = 0; s < 2; ++s) {
      if (slots[s] != TwoLevels::kNoValue && !Insert(out->value, slots[s])) out->more = 1;
    }
  }
}

__global__ void ResetLevelsKernel(TwoLevels* out) {
  out->value[0] = out->value[1] = TwoLevels::kNoValue;
  out->more = 0;
}

template <typename T>
__global__ void IndicatorKernel(const T* r, T seed, std::uint8_t* indicator, std::int64_t n) {
  const unsigned long long k = BitsOf(seed);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    indicator[i] = BitsOf(r[i]) == k;
  }
}

template <typename T>
T ValueOfBits(unsigned long long bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));  // little-endian: the low bytes
  return v;
}

int LevelBlocks(std::int64_t n) {
  return static_cast<int>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 1024));
}

// The values of `a` and `b` (n pixels each): up to two bit patterns, and whether there were more
// (or NaN). Synchronizes `stream`.
template <typename T>
absl::StatusOr<TwoLevels> FindLevels(const ReconstructionPlan::Impl& p, const T* a, const T* b,
                                     std::uint8_t* workspace, cudaStream_t stream) {
  const std::int64_t n = p.extent.Pixels();
  auto* levels = reinterpret_cast<TwoLevels*>(workspace + p.levels_offset);
  ResetLevelsKernel<<<1, 1, 0, stream>>>(levels);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "ResetLevelsKernel");
  FindLevelsKernel<<<LevelBlocks(n), kThreads, 0, stream>>>(a, b, n, levels);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "FindLevelsKernel");
  TwoLevels found;
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&found, levels, sizeof(found), cudaMemcpyDeviceToHost, stream),
      "read the levels");
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "find the levels");
  return found;
}

// The two values lo < hi of `found`, or false where it holds more, one, or two bit patterns of
// one value (+0 and -0).
template <typename T>
bool LowHigh(const TwoLevels& found, T* lo, T* hi) {
  if (found.more || found.value[1] == TwoLevels::kNoValue) return false;
  *lo = ValueOfBits<T>(found.value[0]);
  *hi = ValueOfBits<T>(found.value[1]);
  if (*hi < *lo) std::swap(*lo, *hi);
  return *lo < *hi;
}

}  // namespace

template <typename T>
absl::StatusOr<bool> RunTwoLevels(const ReconstructionPlan::Impl& p, const T* mask, T* r,
                                  std::uint8_t* workspace, cudaStream_t stream) {
  const std::int64_t n = p.extent.Pixels();
  CUIMG_ASSIGN_OR_RETURN(const TwoLevels found, FindLevels(p, mask, r, workspace, stream));
  if (found.more) return false;
  // One value: the clamped marker is the mask already, the reconstruction.
  if (found.value[1] == TwoLevels::kNoValue) return true;
  T lo, hi;
  if (!LowHigh(found, &lo, &hi)) return false;  // +0 and -0: the bricks take them
  T seed;
  const SeededFillSpec spec = TwoLevelFill(p.dilate, lo, hi, p.connectivity, &seed);
  auto* indicator = workspace + p.indicator_offset;
  IndicatorKernel<<<std::max(1, LevelBlocks(n) * 4), kThreads, 0, stream>>>(r, seed, indicator, n);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "IndicatorKernel");
  CUIMG_RETURN_IF_ERROR(FillUnseededComponentsOnDevice(p.type, p.extent, spec, mask, indicator,
                                                       PixelType::kU8, r, workspace + p.fill_offset,
                                                       stream));
  return true;
}

template <typename T>
absl::StatusOr<bool> FillHolesOfTwoLevels(const ReconstructionPlan::Impl& p, const T* mask, T* out,
                                          std::uint8_t* workspace, cudaStream_t stream) {
  CUIMG_ASSIGN_OR_RETURN(const TwoLevels found, FindLevels(p, mask, mask, workspace, stream));
  if (!found.more && found.value[1] == TwoLevels::kNoValue) {  // one value: no hole
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(out, mask, p.extent.Pixels() * sizeof(T), cudaMemcpyDeviceToDevice, stream),
        "fill_holes of one value");
    return true;
  }
  T lo, hi;
  if (!LowHigh(found, &lo, &hi)) return false;
  SeededFillSpec spec;
  spec.connectivity = p.connectivity;
  spec.range = std::array<double, 2>{static_cast<double>(lo), static_cast<double>(lo)};
  spec.seed_border = true;
  spec.fill = static_cast<double>(hi);
  CUIMG_RETURN_IF_ERROR(FillUnseededComponentsOnDevice(
      p.type, p.extent, spec, mask, nullptr, p.type, out, workspace + p.fill_offset, stream));
  return true;
}

#define CUIMG_INSTANTIATE_TWO_LEVELS(T)                                                            \
  template absl::StatusOr<bool> RunTwoLevels<T>(const ReconstructionPlan::Impl&, const T*, T*,     \
                                                std::uint8_t*, cudaStream_t);                      \
  template absl::StatusOr<bool> FillHolesOfTwoLevels<T>(const ReconstructionPlan::Impl&, const T*, \
                                                        T*, std::uint8_t*, cudaStream_t);
CUIMG_INSTANTIATE_TWO_LEVELS(std::uint8_t)
CUIMG_INSTANTIATE_TWO_LEVELS(std::uint16_t)
CUIMG_INSTANTIATE_TWO_LEVELS(std::int16_t)
CUIMG_INSTANTIATE_TWO_LEVELS(std::uint32_t)
CUIMG_INSTANTIATE_TWO_LEVELS(float)
#undef CUIMG_INSTANTIATE_TWO_LEVELS

}  // namespace cuimg::seg
