// CPU reference for the bilinear image pyramid: the definition, written plainly. It is the test
// oracle for the CUDA kernels (which equal it bit for bit) and backs the server's CPU backend.
#ifndef CUIMG_REFERENCE_PYRAMID_REFERENCE_H_
#define CUIMG_REFERENCE_PYRAMID_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/pyramid_types.h"

namespace cuimg {

// The two source samples and the weight of the second of one output coordinate along one axis, as
// OpenCV's cv::resize INTER_LINEAR computes them: f = float((d + 0.5) * ResizeScale(src, dst) -
// 0.5) (float64 arithmetic, then rounded to float32), i0 = floor(f), f -= i0; then i0 < 0 gives
// (i0, f) = (0, 0). Where OpenCV clamps i0 >= src - 1 to (src - 1, weight 0), the pair is
// (src - 2, src - 1) with weight 1 (the same sample; the kernels address the second tap one past
// the first); a one-pixel source gives (0, 0) with weight 0. i1 = i0 + 1 otherwise, w1 = f.
struct LinearTap {
  std::int64_t i0 = 0;
  std::int64_t i1 = 0;
  float w1 = 0.0f;
};
LinearTap ResizeLinearTap(std::int64_t d, std::int64_t src, std::int64_t dst);

// Resamples `src` (src_w x src_h, float32) to dst_w x dst_h: a destination of the source's size is
// a copy; otherwise each pixel is lerp(lerp(S[y0][x0], S[y0][x1], wx1), lerp(S[y1][x0],
// S[y1][x1], wx1), wy1) with the taps above, where lerp(a, b, w) = fma(w, b - a, a) in float32
// (the difference rounded, then one fused multiply-add). OpenCV computes a * (1 - w) + b * w in
// float for 16-bit and float images and in 11-bit fixed point for 8-bit ones; the two agree to
// a few units in the last place.
void ResizeLinearF32(const float* src, std::int64_t src_w, std::int64_t src_h, float* dst,
                     std::int64_t dst_w, std::int64_t dst_h, int threads = 0);

// Every level of the pyramid of `input` (one channel, 2D) as PlanPyramidLevels lists them, in the
// spec's output type: FROM_BASE resamples each level from the input (as f32), CASCADED level i
// from level i-1's f32 values (before any rounding to an integer output type). Integer outputs
// are rounded to nearest (ties to even) and saturated. Uses up to `threads` threads (0 = hardware
// concurrency). The errors of PlanPyramidLevels; INVALID_ARGUMENT for more than one channel.
// Looks at `cancel` before each level and returns its status once it stops.
absl::StatusOr<std::vector<Image>> PyramidReference(const Image& input, const PyramidSpec& spec,
                                                    int threads = 0,
                                                    const CancelToken& cancel = NeverCancelled());

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_PYRAMID_REFERENCE_H_
