#include "cuimg/kernels/detect_geometry.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cuimg {

absl::StatusOr<DetectGeometry> PlanDetection(const Extent& image, int window_width,
                                             int window_height, const DetectSpec& spec) {
  if (absl::Status s = ValidateDetectSpec(spec); !s.ok()) return s;
  if (absl::Status s = ValidateHogWindow(window_width, window_height); !s.ok()) return s;
  if (image.width < 1 || image.height < 1 || image.depth != 1 || image.width > (1 << 20) ||
      image.height > (1 << 20)) {
    return absl::InvalidArgumentError(absl::StrCat("image: ", image.width, "x", image.height, "x",
                                                   image.depth,
                                                   " is not a 2D image with sides in [1, 2^20]"));
  }
  DetectGeometry g;
  g.image = image;
  g.window_width = window_width;
  g.window_height = window_height;
  g.win_stride = spec.win_stride;
  g.padding = (spec.padding + kHogCellSize - 1) / kHogCellSize * kHogCellSize;
  // detectMultiScale: the scale that first makes a side smaller than the window ends the list,
  // but level 0 always stays.
  std::vector<double> scales;
  double scale = 1.0;
  for (int k = 0; k < spec.max_levels; ++k) {
    if (CvRound(static_cast<double>(image.width) / scale) < window_width ||
        CvRound(static_cast<double>(image.height) / scale) < window_height) {
      break;
    }
    scales.push_back(scale);
    scale *= spec.scale;
  }
  if (scales.empty()) scales.push_back(1.0);
  const int stride = spec.win_stride;
  for (std::size_t k = 0; k < scales.size(); ++k) {
    DetectLevel level;
    level.index = static_cast<int>(k);
    level.scale = scales[k];
    level.width = CvRound(static_cast<double>(image.width) / scales[k]);
    level.height = CvRound(static_cast<double>(image.height) / scales[k]);
    const int padded_w = level.width + 2 * g.padding;
    const int padded_h = level.height + 2 * g.padding;
    if (padded_w < window_width || padded_h < window_height) continue;
    level.windows_x = (padded_w - window_width) / stride + 1;
    level.windows_y = (padded_h - window_height) / stride + 1;
    level.blocks_x =
        ((level.windows_x - 1) * stride + window_width - kHogBlockSize) / kHogBlockStride + 1;
    level.blocks_y =
        ((level.windows_y - 1) * stride + window_height - kHogBlockSize) / kHogBlockStride + 1;
    g.windows += std::int64_t{level.windows_x} * level.windows_y;
    g.blocks += std::int64_t{level.blocks_x} * level.blocks_y;
    g.levels.push_back(level);
  }
  return g;
}

}  // namespace cuimg
