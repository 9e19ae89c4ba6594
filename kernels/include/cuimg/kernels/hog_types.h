// The vocabulary of pedestrian detection (HOG features + a linear SVM), shared by the CPU
// reference, the CUDA kernels and the server: OpenCV's HOG geometry, a detector model, a request's
// parameters and their validators, the pyramid levels and windows of a detection, raw window
// hits, and the detections made of them. Planning is in detect_geometry.h, grouping in
// group_rectangles.h, a block's vote weights in hog_block_votes.h.
#ifndef CUIMG_KERNELS_HOG_TYPES_H_
#define CUIMG_KERNELS_HOG_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/image.h"

namespace cuimg {

// OpenCV HOGDescriptor's geometry, fixed in cuimg: only the window varies (with the model).
inline constexpr int kHogCellSize = 8;
inline constexpr int kHogBlockSize = 16;  // 2 x 2 cells
inline constexpr int kHogBlockStride = 8;
inline constexpr int kHogBins = 9;  // unsigned orientation, 0..180 degrees
inline constexpr int kHogBlockFeatures = 36;
inline constexpr int kHogBlockPixels = kHogBlockSize * kHogBlockSize;
inline constexpr float kHogL2HysThreshold = 0.2f;
// Window sides are multiples of 8 in [16, kMaxHogWindowSide].
inline constexpr int kMaxHogWindowSide = 1024;

// A linear SVM person detector for one window size (a model file; hog_model_file.h).
struct HogModel {
  std::string name;
  int window_width = 64;
  int window_height = 128;
  // The gamma correction (sqrt of the 8-bit values) used when a request does not say.
  bool gamma_correction = true;
  std::string description;
  // DescriptorSize() weights in OpenCV's descriptor order: block columns outer, block rows, then
  // the block's cells column-major (cx * 2 + cy), then the 9 bins.
  std::vector<float> weights;
  // Added to the dot product (OpenCV's last coefficient, "rho").
  float bias = 0;

  int BlocksX() const { return (window_width - kHogBlockSize) / kHogBlockStride + 1; }
  int BlocksY() const { return (window_height - kHogBlockSize) / kHogBlockStride + 1; }
  int DescriptorSize() const { return BlocksX() * BlocksY() * kHogBlockFeatures; }
};

// INVALID_ARGUMENT naming the field (window_width, window_height) unless both are multiples of 8
// in [16, kMaxHogWindowSide].
absl::Status ValidateHogWindow(int width, int height);

// INVALID_ARGUMENT naming the field unless the window sides are multiples of 8 in
// [16, kMaxHogWindowSide], `weights` holds DescriptorSize() finite values and `bias` is finite.
absl::Status ValidateHogModel(const HogModel& model);

// How raw window hits become detections.
enum class DetectGrouping {
  // OpenCV's HOGDescriptor::groupRectangles(group_threshold, group_eps).
  kGroupRectangles,
  // Every hit, ungrouped.
  kNone,
};

// The parameters of one detection (cv::HOGDescriptor::detectMultiScale's, with its defaults).
struct DetectSpec {
  // Windows whose score is >= this are hits. Finite.
  double hit_threshold = 0;
  // Window step at every level, a multiple of 8 in [8, 64].
  int win_stride = 8;
  // Pixels added (reflect-101) on each side of every level, in [0, 256]; rounded up to a
  // multiple of 8 as OpenCV does.
  int padding = 0;
  // Scale between levels, finite and in (1, 4].
  double scale = 1.05;
  // At most this many levels, >= 1.
  int max_levels = 64;
  bool gamma_correction = true;
  DetectGrouping grouping = DetectGrouping::kGroupRectangles;
  // Clusters of at most this many hits are dropped; 0 returns the hits ungrouped. In [0, 1000].
  int group_threshold = 2;
  // Finite and in (0, 4].
  double group_eps = 0.2;
};

// INVALID_ARGUMENT naming the field when a value is outside the ranges above.
absl::Status ValidateDetectSpec(const DetectSpec& spec);

// The images detection takes (the validators, DetectPlan and the reference ask here): U8 pixels in
// 1 (gray), 3 (BGR) or 4 (BGRA, alpha ignored) channels, a 2D image with both sides >= 1.
// INVALID_ARGUMENT naming `field`, the image's place in the caller's terms, otherwise.
absl::Status ValidateDetectInput(PixelType type, const Extent& extent, int channels,
                                 absl::string_view field);

// One pyramid level of a detection.
struct DetectLevel {
  int index = 0;
  // Input size / level size before rounding: the product scale^index accumulated as OpenCV does.
  double scale = 1.0;
  // The level image: cvRound(input side / scale), or the input itself at its own size.
  int width = 0;
  int height = 0;
  // Windows at multiples of win_stride over the padded level that fit in it.
  int windows_x = 0;
  int windows_y = 0;
  // The HOG blocks those windows use: on the 8-pixel grid of the padded level, from its origin.
  int blocks_x = 0;
  int blocks_y = 0;
};

// Every level and window of a detection on an image of a given size.
struct DetectGeometry {
  Extent image;
  int window_width = 0;
  int window_height = 0;
  int win_stride = 8;
  // Rounded up to a multiple of 8.
  int padding = 0;
  // Levels with at least one window, finest first (none when even the padded input is smaller
  // than a window).
  std::vector<DetectLevel> levels;
  std::int64_t windows = 0;
  std::int64_t blocks = 0;
};

// A window whose score reached the threshold: window (window_x, window_y) of level `level`, whose
// top-left corner is at (window_x * win_stride - padding, window_y * win_stride - padding) of the
// level image.
struct WindowHit {
  int level = 0;
  int window_x = 0;
  int window_y = 0;
  double score = 0;
};

// Strict weak order by (level, window_y, window_x): the order every backend returns hits in.
bool HitOrder(const WindowHit& a, const WindowHit& b);

// What a detection computes before grouping: its levels and windows, and the hits.
struct DetectResult {
  DetectGeometry geometry;
  // Every window with score >= hit_threshold, in HitOrder.
  std::vector<WindowHit> hits;
};

// A detection in input pixel coordinates.
struct Detection {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
  // The SVM score (bias included); a cluster's maximum when grouped.
  double score = 0;
  // The level's scale; a cluster's mean when grouped.
  double scale = 1.0;
};

// cvRound: round half to even (the current rounding mode, as OpenCV on x86).
int CvRound(double v);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_HOG_TYPES_H_
