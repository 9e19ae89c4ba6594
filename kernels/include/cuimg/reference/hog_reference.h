// CPU reference of pedestrian detection: OpenCV 4.6's HOGDescriptor::detectMultiScale stage by
// stage (hog_math.h has the per-pixel rules), the test oracle of the CUDA kernels and the CPU
// backend. Inputs are 8-bit images with 1 (gray), 3 (BGR) or 4 (BGRA, alpha ignored) channels.
#ifndef CUIMG_REFERENCE_HOG_REFERENCE_H_
#define CUIMG_REFERENCE_HOG_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/hog_types.h"

namespace cuimg {

// cv::resize(src, dst, Size(width, height), 0, 0, INTER_LINEAR_EXACT) bit for bit, keeping the
// channels. INVALID_ARGUMENT unless src is a U8 2D image with 1..4 channels and both sizes >= 1.
absl::StatusOr<Image> ResizeLinearExactU8(const ImageView& src, int width, int height);

// Every pixel's vote of the level image padded by `padding` on each side (reflect-101), as
// HOGDescriptor::computeGradient computes them: w0 to `bin`, w1 to (bin + 1) mod 9. Row-major
// over the padded image.
struct HogVotes {
  int width = 0;  // padded
  int height = 0;
  std::vector<float> w0;
  std::vector<float> w1;
  std::vector<std::uint8_t> bin;
};
absl::StatusOr<HogVotes> ComputeHogVotes(const ImageView& level, int padding, bool gamma,
                                         int threads = 0);

// L2-Hys normalized block histograms at (8 bx, 8 by) of the padded image for bx < blocks_x,
// by < blocks_y (HOGCache::getBlock + normalizeBlockHistogram, with OpenCV's order of
// accumulation and its epsilons: 1 / (|v| + 3.6), clip at 0.2, 1 / (|v| + 1e-3)).
struct HogBlocks {
  int blocks_x = 0;
  int blocks_y = 0;
  std::vector<float> values;  // blocks_y x blocks_x x 36
  const float* At(int bx, int by) const {
    return values.data() + (static_cast<std::size_t>(by) * blocks_x + bx) * kHogBlockFeatures;
  }
};
// blocks_x, blocks_y must fit the votes: 8 * (blocks - 1) + 16 <= padded side.
absl::StatusOr<HogBlocks> ComputeHogBlocks(const HogVotes& votes, int blocks_x, int blocks_y,
                                           int threads = 0);

// The descriptor of the window whose block (0, 0) is block (bx, by), in OpenCV's order (what
// HOGDescriptor::compute returns for that window).
std::vector<float> WindowDescriptor(const HogBlocks& blocks, int bx, int by, int window_width,
                                    int window_height);

// bias + <weights, descriptor> of that window, each block's dot product as HOGDescriptor::detect
// computes it (four float partial sums, their pairs added in float), in double each block column's
// blocks summed from 0, then the columns added to the bias in order (OpenCV: one running sum of
// every block, column by column; the order of the GPU's scores kernel, which differs only in the
// rounding of the double sums).
double ScoreWindow(const HogBlocks& blocks, int bx, int by, const HogModel& model);

// Every level of `geometry` (PlanDetection of the image, the model's window and `spec`): its image
// (ResizeLinearExactU8 of the input, or the input), votes, blocks and window scores. Errors:
// INVALID_ARGUMENT for an input that is not U8 with 1, 3 or 4 channels, and those of
// ValidateHogModel and PlanDetection. `threads` 0 means all cores. Looks at `cancel` between
// levels, phases and rows of windows and returns its status once it stops.
absl::StatusOr<DetectResult> DetectReference(const ImageView& image, const HogModel& model,
                                             const DetectSpec& spec, int threads = 0,
                                             const CancelToken& cancel = NeverCancelled());

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_HOG_REFERENCE_H_
