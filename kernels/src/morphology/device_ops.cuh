// Device-side min/max with the semantics of the CPU reference: integer min/max, and IEEE
// minNum/maxNum (fminf/fmaxf) for float so NaN never wins.
#ifndef CUIMG_KERNELS_SRC_DEVICE_OPS_CUH_
#define CUIMG_KERNELS_SRC_DEVICE_OPS_CUH_

#include <cstdint>
#include <limits>
#include <type_traits>

namespace cuimg {

template <typename T>
__device__ __forceinline__ T DeviceMin(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return fminf(a, b);
  } else {
    return b < a ? b : a;
  }
}

template <typename T>
__device__ __forceinline__ T DeviceMax(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return fmaxf(a, b);
  } else {
    return a < b ? b : a;
  }
}

// The bits of one pixel, zero-extended to a word (for packing pixels into words).
template <typename T>
__device__ __forceinline__ unsigned ElementBits(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return __float_as_uint(v);
  } else {
    return static_cast<unsigned>(static_cast<std::make_unsigned_t<T>>(v));
  }
}

template <typename T, bool kDilate>
__device__ __forceinline__ T Combine(T a, T b) {
  if constexpr (kDilate) {
    return DeviceMax(a, b);
  } else {
    return DeviceMin(a, b);
  }
}

// The neutral start of a min/max: NaN for float (the identity of fminf/fmaxf), else the extreme
// that never wins.
template <typename T, bool kDilate>
__device__ __forceinline__ T CombineIdentity() {
  if constexpr (std::is_floating_point_v<T>) {
    return __int_as_float(0x7fffffff);
  } else if constexpr (kDilate) {
    return std::numeric_limits<T>::lowest();
  } else {
    return std::numeric_limits<T>::max();
  }
}

template <typename T>
__device__ __forceinline__ T SaturatingSub(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a - b;
  } else {
    const int d = static_cast<int>(a) - static_cast<int>(b);
    const int lo = static_cast<int>(std::numeric_limits<T>::lowest());
    const int hi = static_cast<int>(std::numeric_limits<T>::max());
    return static_cast<T>(d < lo ? lo : (d > hi ? hi : d));
  }
}

}  // namespace cuimg

#endif  // CUIMG_KERNELS_SRC_DEVICE_OPS_CUH_
