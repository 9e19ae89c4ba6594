// CPU reference for the bilinear image pyramid: the definition, written plainly. It is the test
// oracle for the CUDA kernels (which equal it bit for bit) and backs the server's CPU backend.
#ifndef CUIMG_REFERENCE_PYRAMID_REFERENCE_H_
#define CUIMG_REFERENCE_PYRAMID_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/pyramid_types.h"

namespace cuimg {

// The two source samples and weights of one output coordinate along one axis, as OpenCV's
// cv::resize INTER_LINEAR computes them: f = float((d + 0.5) * ResizeScale(src, dst) - 0.5)
// (float64 arithmetic, then rounded to float32), i0 = floor(f), f -= i0; then i0 < 0 gives
// (i0, f) = (0, 0) and i0 >= src - 1 gives (src - 1, 0). i1 = min(i0 + 1, src - 1), w0 = 1 - f,
// w1 = f (float32).
struct LinearTap {
  std::int64_t i0 = 0;
  std::int64_t i1 = 0;
  float w0 = 1.0f;
  float w1 = 0.0f;
};
LinearTap ResizeLinearTap(std::int64_t d, std::int64_t src, std::int64_t dst);

// Resamples `src` (src_w x src_h, float32) to dst_w x dst_h: a destination of the source's size is
// a copy; otherwise each pixel is (S[y0][x0] * wx0 + S[y0][x1] * wx1) * wy0 +
// (S[y1][x0] * wx0 + S[y1][x1] * wx1) * wy1 with the taps above, every product and sum rounded to
// float32 in that order (no fused multiply-add). OpenCV computes the same in float for 16-bit and
// float images and in 11-bit fixed point for 8-bit ones.
void ResizeLinearF32(const float* src, std::int64_t src_w, std::int64_t src_h, float* dst,
                     std::int64_t dst_w, std::int64_t dst_h, int threads = 0);

// Every level of the pyramid of `input` (one channel, 2D) as PlanPyramidLevels lists them, in the
// spec's output type: FROM_BASE resamples each level from the input (as f32), CASCADED level i
// from level i-1's f32 values (before any rounding to an integer output type). Integer outputs
// are rounded to nearest (ties to even) and saturated. Uses up to `threads` threads (0 = hardware
// concurrency). The errors of PlanPyramidLevels; INVALID_ARGUMENT for more than one channel.
absl::StatusOr<std::vector<Image>> PyramidReference(const Image& input, const PyramidSpec& spec,
                                                    int threads = 0);

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_PYRAMID_REFERENCE_H_
