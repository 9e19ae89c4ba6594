// The segmentation steps of the CPU reference, as the chain runner (morphology_reference.cc)
// calls them on its buffers. Internal to cuimg_reference.
#ifndef CUIMG_KERNELS_REFERENCE_SEGMENTATION_STEPS_H_
#define CUIMG_KERNELS_REFERENCE_SEGMENTATION_STEPS_H_

#include <cstdint>

#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/segmentation_types.h"
#include "segmentation/reconstruction_rules.h"

namespace cuimg::internal {

// Reconstruction with `r` holding the marker on entry and the result on return: clamps the
// marker by `mask` (seg::ClampedMarker), propagates, and gives NaN where the mask is NaN. `r`
// and `mask` are views of one type and extent that do not overlap. Returns false when `cancel`
// stopped it (r is then unspecified).
bool ReconstructInPlace(const ImageView& mask, const ImageView& r, bool dilate,
                        Connectivity connectivity, const CancelToken& cancel);

// out = fill_holes' marker of `in` (seg::FillHolesMarker).
template <typename T>
void FillHolesMarkerInto(const T* in, T* out, const Extent& e) {
  for (std::int64_t z = 0; z < e.depth; ++z) {
    for (std::int64_t y = 0; y < e.height; ++y) {
      const std::int64_t row = (z * e.height + y) * e.width;
      for (std::int64_t x = 0; x < e.width; ++x) {
        out[row + x] =
            seg::FillHolesMarker(in[row + x], seg::OnBorder(x, y, z, e.width, e.height, e.depth));
      }
    }
  }
}

// out = hmax's (dilate) or hmin's marker of `in` (seg::HeightMarker).
template <typename T>
void HeightMarkerInto(const T* in, T* out, std::int64_t n, double h, bool dilate) {
  for (std::int64_t i = 0; i < n; ++i) {
    out[i] = dilate ? seg::HeightMarker<true>(in[i], h) : seg::HeightMarker<false>(in[i], h);
  }
}

// out = threshold:lo:hi of `in` (seg::ThresholdValue).
template <typename T>
void ThresholdInto(const T* in, T* out, std::int64_t n, double lo, double hi) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = seg::ThresholdValue(in[i], lo, hi);
}

}  // namespace cuimg::internal

#endif  // CUIMG_KERNELS_REFERENCE_SEGMENTATION_STEPS_H_
