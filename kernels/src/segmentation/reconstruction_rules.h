// The per-pixel rules of the segmentation steps, compiled by the CPU reference and the CUDA
// kernels alike so that both read the same definition: the order a reconstruction propagates in,
// how NaN enters it, and the markers of fill_holes, hmax/hmin and the clamp of a given marker.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_RULES_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_RULES_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cuimg/common/pixel_type.h"

#if defined(__CUDACC__)
#define CUIMG_SEG_HD __host__ __device__ __forceinline__
#else
#define CUIMG_SEG_HD inline
#endif

namespace cuimg::seg {

// Reconstruction by dilation propagates the higher value (a pixel takes the best of its
// neighbours, capped by its mask: max(r, min(r_neighbour, mask))); by erosion, the lower. Win,
// Lose and Beats are that order's max, min and >; no NaN ever reaches them (Prepare).
template <bool kDilate>
struct Order {
  template <typename T>
  static CUIMG_SEG_HD T Win(T a, T b) {
    if constexpr (kDilate) {
      return a < b ? b : a;
    } else {
      return b < a ? b : a;
    }
  }
  template <typename T>
  static CUIMG_SEG_HD T Lose(T a, T b) {
    if constexpr (kDilate) {
      return b < a ? b : a;
    } else {
      return a < b ? b : a;
    }
  }
  // True when `a` improves on `b`.
  template <typename T>
  static CUIMG_SEG_HD bool Beats(T a, T b) {
    if constexpr (kDilate) {
      return b < a;
    } else {
      return a < b;
    }
  }
  // The value that never propagates: the type's lowest for dilation (-inf for f32), its
  // highest for erosion.
  template <typename T>
  static CUIMG_SEG_HD T Worst() {
    if constexpr (kDilate) {
      return PixelLowest<T>();
    } else {
      return PixelMax<T>();
    }
  }
};

template <typename T>
CUIMG_SEG_HD bool IsNaN(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// A value as the propagation sees it: NaN is the worst value, so a NaN mask pixel lets nothing
// through and a NaN marker pixel seeds nothing.
template <bool kDilate, typename T>
CUIMG_SEG_HD T Prepare(T v) {
  return IsNaN(v) ? Order<kDilate>::template Worst<T>() : v;
}

// The starting value of a pixel: the marker clamped by the mask (min(f, g) for dilation,
// max(f, g) for erosion), NaN prepared as above. Where the mask is NaN the result is NaN
// (FinalValue), whatever this gives.
template <bool kDilate, typename T>
CUIMG_SEG_HD T ClampedMarker(T marker, T mask) {
  return Order<kDilate>::Lose(Prepare<kDilate>(marker), Prepare<kDilate>(mask));
}

// What the output holds once the propagation `r` has converged: NaN where the mask is NaN.
template <typename T>
CUIMG_SEG_HD T FinalValue(T r, T mask) {
  return IsNaN(mask) ? mask : r;
}

// v rounded to nearest (ties to even) and clamped to T, as SaturateCast; finite v only.
template <typename T>
CUIMG_SEG_HD T SaturateFinite(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    const double r = rint(v);
    if (r <= static_cast<double>(std::numeric_limits<T>::lowest())) {
      return std::numeric_limits<T>::lowest();
    }
    if (r >= static_cast<double>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
    return static_cast<T>(r);
  }
}

// hmax's marker f - h (kDilate) and hmin's f + h: saturated to the type for integers (via
// double, exact for every integer pixel); in float arithmetic for f32 (h rounded to float first,
// as NumPy's float32 array - h), so +-inf stay as they are.
template <bool kDilate, typename T>
CUIMG_SEG_HD T HeightMarker(T v, double h) {
  if constexpr (std::is_floating_point_v<T>) {
    return kDilate ? v - static_cast<T>(h) : v + static_cast<T>(h);
  } else {
    const double d = static_cast<double>(v);
    return SaturateFinite<T>(kDilate ? d - h : d + h);
  }
}

// fill_holes' marker (reconstruction by erosion): the image on its border, the type's maximum
// (+inf for f32) inside.
template <typename T>
CUIMG_SEG_HD T FillHolesMarker(T v, bool on_border) {
  return on_border ? v : PixelMax<T>();
}

// True for a pixel on the border of `extent`'s image: its first or last column or row, and for a
// volume also its first or last slice.
CUIMG_SEG_HD bool OnBorder(std::int64_t x, std::int64_t y, std::int64_t z, std::int64_t width,
                           std::int64_t height, std::int64_t depth) {
  return x == 0 || y == 0 || x == width - 1 || y == height - 1 ||
         (depth > 1 && (z == 0 || z == depth - 1));
}

// threshold:lo:hi: pixels in [lo, hi] become the type's maximum (1.0 for f32), others 0; NaN is
// outside every range.
template <typename T>
CUIMG_SEG_HD T ThresholdValue(T v, double lo, double hi) {
  const double d = static_cast<double>(v);
  if (!(d >= lo && d <= hi)) return T{0};
  if constexpr (std::is_floating_point_v<T>) {
    return T{1};
  } else {
    return std::numeric_limits<T>::max();
  }
}

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_RULES_H_
