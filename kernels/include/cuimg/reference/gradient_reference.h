// CPU reference for the Gaussian-derivative gradient: the definition, written plainly, in float64.
// It is the test oracle for the CUDA kernel (which matches it to float32 rounding) and backs the
// server's CPU backend.
#ifndef CUIMG_REFERENCE_GRADIENT_REFERENCE_H_
#define CUIMG_REFERENCE_GRADIENT_REFERENCE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/gradient_types.h"

namespace cuimg {

// The gradients of one input, all f32 with the input's extent. `magnitude` and `angle` are empty
// images (no pixels) unless the spec asks for them.
struct GradientImages {
  Image gx;
  Image gy;
  Image magnitude;
  Image angle;
};

// gx(x, y) = sum_j s[j] * sum_k d[k] * in(x + k, y + j), gy(x, y) = sum_j d[j] * sum_k s[k] *
// in(x + k, y + j), with s and d the spec's taps (ComputeGradientTaps), coordinates outside the
// slice reflected without repeating the edge (Reflect101), row pass then column pass, accumulated
// in float64 and rounded once to float32; magnitude = sqrt(gx^2 + gy^2), angle = atan2(gy, gx),
// both from the float64 values. A volume is processed slice by slice. Input: one channel of a
// filter pixel type. Uses up to `threads` threads (0 = hardware concurrency). INVALID_ARGUMENT for
// an invalid spec (ValidateGradientSpec), U32, more than one channel or an empty extent. Looks at
// `cancel` per row and slice and returns its status once it stops.
absl::StatusOr<GradientImages> GradientReference(const Image& input, const GradientSpec& spec,
                                                 int threads = 0,
                                                 const CancelToken& cancel = NeverCancelled());

// OpenCV's borderInterpolate for BORDER_REFLECT_101: folds p into [0, n) by reflecting about 0 and
// n - 1 until it lands inside (0 when n is 1).
std::int64_t Reflect101(std::int64_t p, std::int64_t n);

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_GRADIENT_REFERENCE_H_
