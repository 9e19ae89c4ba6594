#include "cuimg/kernels/hog_types.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace cuimg {
namespace {

absl::Status CheckWindow(int width, int height) {
  for (const auto& [name, side] : {std::pair<const char*, int>{"window_width", width},
                                   {"window_height", height}}) {
    if (side < kHogBlockSize || side > kMaxHogWindowSide || side % kHogCellSize != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": ", side, " is not a multiple of 8 in [16, ", kMaxHogWindowSide, "]"));
    }
  }
  return absl::OkStatus();
}

// OpenCV's cv::partition (operations.hpp): union-find over all pairs; labels number the classes
// in order of first appearance.
template <typename Similar>
int Partition(const std::vector<Detection>& items, std::vector<int>* labels,
              const Similar& similar) {
  const int n = static_cast<int>(items.size());
  std::vector<int> parent(n, -1);
  std::vector<int> rank(n, 0);
  for (int i = 0; i < n; ++i) {
    int root = i;
    while (parent[root] >= 0) root = parent[root];
    for (int j = 0; j < n; ++j) {
      if (i == j || !similar(items[i], items[j])) continue;
      int root2 = j;
      while (parent[root2] >= 0) root2 = parent[root2];
      if (root2 == root) continue;
      if (rank[root] > rank[root2]) {
        parent[root2] = root;
      } else {
        parent[root] = root2;
        rank[root2] += rank[root] == rank[root2];
        root = root2;
      }
      for (int k = j, p; (p = parent[k]) >= 0; k = p) parent[k] = root;
      for (int k = i, p; (p = parent[k]) >= 0; k = p) parent[k] = root;
    }
  }
  labels->assign(n, 0);
  int classes = 0;
  for (int i = 0; i < n; ++i) {
    int root = i;
    while (parent[root] >= 0) root = parent[root];
    if (rank[root] >= 0) rank[root] = ~classes++;
    (*labels)[i] = ~rank[root];
  }
  return classes;
}

int SaturateInt(double v) {
  if (!(v > std::numeric_limits<int>::min())) return std::numeric_limits<int>::min();
  if (!(v < std::numeric_limits<int>::max())) return std::numeric_limits<int>::max();
  return CvRound(v);
}

// Descending score; ties by position, so the order never depends on the input order.
bool DetectionOrder(const Detection& a, const Detection& b) {
  return std::tie(b.score, a.y, a.x, a.width, a.height, a.scale) <
         std::tie(a.score, b.y, b.x, b.width, b.height, b.scale);
}

}  // namespace

int CvRound(double v) { return static_cast<int>(std::nearbyint(v)); }

absl::Status ValidateHogModel(const HogModel& model) {
  if (absl::Status s = CheckWindow(model.window_width, model.window_height); !s.ok()) return s;
  if (static_cast<int>(model.weights.size()) != model.DescriptorSize()) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights: ", model.weights.size(), " values, expected ",
                     model.DescriptorSize(), " for a ", model.window_width, "x",
                     model.window_height, " window"));
  }
  for (std::size_t i = 0; i < model.weights.size(); ++i) {
    if (!std::isfinite(model.weights[i])) {
      return absl::InvalidArgumentError(absl::StrCat("weights[", i, "]: is not finite"));
    }
  }
  if (!std::isfinite(model.bias)) return absl::InvalidArgumentError("bias: is not finite");
  return absl::OkStatus();
}

absl::Status ValidateDetectSpec(const DetectSpec& spec) {
  if (!std::isfinite(spec.hit_threshold)) {
    return absl::InvalidArgumentError(
        absl::StrCat("hit_threshold: ", spec.hit_threshold, " is not finite"));
  }
  if (spec.win_stride < 8 || spec.win_stride > 64 || spec.win_stride % 8 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("win_stride: ", spec.win_stride, " is not a multiple of 8 in [8, 64]"));
  }
  if (spec.padding < 0 || spec.padding > 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("padding: ", spec.padding, " is not in [0, 256]"));
  }
  if (!(std::isfinite(spec.scale) && spec.scale > 1 && spec.scale <= 4)) {
    return absl::InvalidArgumentError(absl::StrCat("scale: ", spec.scale, " is not in (1, 4]"));
  }
  if (spec.max_levels < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_levels: ", spec.max_levels, " is not >= 1"));
  }
  if (spec.group_threshold < 0 || spec.group_threshold > 1000) {
    return absl::InvalidArgumentError(
        absl::StrCat("group_threshold: ", spec.group_threshold, " is not in [0, 1000]"));
  }
  if (!(std::isfinite(spec.group_eps) && spec.group_eps > 0 && spec.group_eps <= 4)) {
    return absl::InvalidArgumentError(
        absl::StrCat("group_eps: ", spec.group_eps, " is not in (0, 4]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DetectGeometry> PlanDetection(const Extent& image, int window_width,
                                             int window_height, const DetectSpec& spec) {
  if (absl::Status s = ValidateDetectSpec(spec); !s.ok()) return s;
  if (absl::Status s = CheckWindow(window_width, window_height); !s.ok()) return s;
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
    level.blocks_x = ((level.windows_x - 1) * stride + window_width - kHogBlockSize) /
                         kHogBlockStride + 1;
    level.blocks_y = ((level.windows_y - 1) * stride + window_height - kHogBlockSize) /
                         kHogBlockStride + 1;
    g.windows += std::int64_t{level.windows_x} * level.windows_y;
    g.blocks += std::int64_t{level.blocks_x} * level.blocks_y;
    g.levels.push_back(level);
  }
  return g;
}

bool HitOrder(const WindowHit& a, const WindowHit& b) {
  return std::tie(a.level, a.window_y, a.window_x) < std::tie(b.level, b.window_y, b.window_x);
}

std::vector<Detection> GroupRectangles(const std::vector<Detection>& rects, int group_threshold,
                                       double eps) {
  if (group_threshold <= 0 || rects.empty()) return rects;
  const auto similar = [eps](const Detection& a, const Detection& b) {
    const double delta =
        eps * (std::min(a.width, b.width) + std::min(a.height, b.height)) * 0.5;
    return std::abs(a.x - b.x) <= delta && std::abs(a.y - b.y) <= delta &&
           std::abs(a.x + a.width - b.x - b.width) <= delta &&
           std::abs(a.y + a.height - b.y - b.height) <= delta;
  };
  std::vector<int> labels;
  const int classes = Partition(rects, &labels, similar);
  struct Cluster {
    double x = 0, y = 0, width = 0, height = 0;
    double score = -std::numeric_limits<double>::max();
    double scale_sum = 0;
    int members = 0;
    int rx = 0, ry = 0, rw = 0, rh = 0;  // the average as OpenCV rounds it
  };
  std::vector<Cluster> clusters(classes);
  for (std::size_t i = 0; i < rects.size(); ++i) {
    Cluster& c = clusters[labels[i]];
    c.x += rects[i].x;
    c.y += rects[i].y;
    c.width += rects[i].width;
    c.height += rects[i].height;
    c.score = std::max(c.score, rects[i].score);
    c.scale_sum += rects[i].scale;
    ++c.members;
  }
  for (Cluster& c : clusters) {
    const double s = 1.0 / c.members;
    c.rx = SaturateInt(c.x * s);
    c.ry = SaturateInt(c.y * s);
    c.rw = SaturateInt(c.width * s);
    c.rh = SaturateInt(c.height * s);
  }
  std::vector<Detection> out;
  for (int i = 0; i < classes; ++i) {
    const Cluster& r1 = clusters[i];
    if (r1.members <= group_threshold) continue;
    bool inside_stronger = false;
    for (int j = 0; j < classes && !inside_stronger; ++j) {
      const Cluster& r2 = clusters[j];
      if (j == i || r2.members <= group_threshold) continue;
      const int dx = SaturateInt(r2.rw * eps);
      const int dy = SaturateInt(r2.rh * eps);
      inside_stronger = r1.rx >= r2.rx - dx && r1.ry >= r2.ry - dy &&
                        r1.rx + r1.rw <= r2.rx + r2.rw + dx &&
                        r1.ry + r1.rh <= r2.ry + r2.rh + dy &&
                        (r2.members > std::max(3, r1.members) || r1.members < 3);
    }
    if (inside_stronger) continue;
    out.push_back(Detection{r1.rx, r1.ry, r1.rw, r1.rh, r1.score, r1.scale_sum / r1.members});
  }
  return out;
}

std::vector<Detection> FinishDetections(const DetectGeometry& geometry,
                                        std::vector<WindowHit> hits, const DetectSpec& spec) {
  // A fixed order first: grouping's labels (and the mean scale's sum) depend on it.
  std::sort(hits.begin(), hits.end(), HitOrder);
  std::vector<Detection> rects;
  rects.reserve(hits.size());
  for (const WindowHit& h : hits) {
    const DetectLevel& level = geometry.levels[h.level];
    const double s = level.scale;
    const int x = h.window_x * geometry.win_stride - geometry.padding;
    const int y = h.window_y * geometry.win_stride - geometry.padding;
    rects.push_back(Detection{CvRound(x * s), CvRound(y * s), CvRound(geometry.window_width * s),
                              CvRound(geometry.window_height * s), h.score, s});
  }
  if (spec.grouping == DetectGrouping::kGroupRectangles) {
    rects = GroupRectangles(rects, spec.group_threshold, spec.group_eps);
  }
  // OpenCV's clipObjects: intersect with the image, drop what becomes empty.
  std::vector<Detection> out;
  const int w = static_cast<int>(geometry.image.width);
  const int h = static_cast<int>(geometry.image.height);
  for (Detection d : rects) {
    const int x0 = std::max(d.x, 0);
    const int y0 = std::max(d.y, 0);
    const int x1 = std::min(d.x + d.width, w);
    const int y1 = std::min(d.y + d.height, h);
    if (x1 <= x0 || y1 <= y0) continue;
    d.x = x0;
    d.y = y0;
    d.width = x1 - x0;
    d.height = y1 - y0;
    out.push_back(d);
  }
  std::sort(out.begin(), out.end(), DetectionOrder);
  return out;
}

const std::array<HogPixelVote, kHogBlockPixels>& HogBlockVotes() {
  static const std::array<HogPixelVote, kHogBlockPixels> votes = [] {
    // HOGCache::init with OpenCV's default geometry, float arithmetic as written there.
    constexpr int ncells = 2;
    const float sigma = 4.0f;  // getWinSigma(): (16 + 16) / 8
    const float scale = 1.f / (sigma * sigma * 2);
    float gauss[kHogBlockSize][kHogBlockSize];
    for (int i = 0; i < kHogBlockSize; ++i) {
      for (int j = 0; j < kHogBlockSize; ++j) {
        float di = static_cast<float>(i) - kHogBlockSize * 0.5f;
        float dj = static_cast<float>(j) - kHogBlockSize * 0.5f;
        di *= di;
        dj *= dj;
        gauss[i][j] = std::exp(-(di + dj) * scale);
      }
    }
    std::vector<HogPixelVote> groups[3];  // 1, 2 and 4 cells
    for (int j = 0; j < kHogBlockSize; ++j) {
      for (int i = 0; i < kHogBlockSize; ++i) {
        float cell_x = (j + 0.5f) / kHogCellSize - 0.5f;
        float cell_y = (i + 0.5f) / kHogCellSize - 0.5f;
        const int x0 = static_cast<int>(std::floor(cell_x));
        const int y0 = static_cast<int>(std::floor(cell_y));
        int x1 = x0 + 1;
        int y1 = y0 + 1;
        cell_x -= x0;
        cell_y -= y0;
        const auto valid = [](int c) { return static_cast<unsigned>(c) < ncells; };
        HogPixelVote v;
        v.row = i;
        v.col = j;
        int group = 0;
        std::array<int, 4> cells{};
        std::array<float, 4> hist_weights{};
        if (valid(x0) && valid(x1)) {
          if (valid(y0) && valid(y1)) {
            group = 2;
            cells = {x0 * ncells + y0, x1 * ncells + y0, x0 * ncells + y1, x1 * ncells + y1};
            hist_weights = {(1.f - cell_x) * (1.f - cell_y), cell_x * (1.f - cell_y),
                            (1.f - cell_x) * cell_y, cell_x * cell_y};
          } else {
            group = 1;
            if (valid(y0)) {
              y1 = y0;
              cell_y = 1.f - cell_y;
            }
            cells = {x0 * ncells + y1, x1 * ncells + y1, 0, 0};
            hist_weights = {(1.f - cell_x) * cell_y, cell_x * cell_y, 0, 0};
          }
        } else {
          if (valid(x0)) {
            x1 = x0;
            cell_x = 1.f - cell_x;
          }
          if (valid(y0) && valid(y1)) {
            group = 1;
            cells = {x1 * ncells + y0, x1 * ncells + y1, 0, 0};
            hist_weights = {cell_x * (1.f - cell_y), cell_x * cell_y, 0, 0};
          } else {
            group = 0;
            if (valid(y0)) {
              y1 = y0;
              cell_y = 1.f - cell_y;
            }
            cells = {x1 * ncells + y1, 0, 0, 0};
            hist_weights = {cell_x * cell_y, 0, 0, 0};
          }
        }
        v.cells = 1 << group;
        for (int k = 0; k < 4; ++k) {
          v.cell[k] = cells[k];
          v.weight[k] = gauss[i][j] * hist_weights[k];
        }
        groups[group].push_back(v);
      }
    }
    std::array<HogPixelVote, kHogBlockPixels> all;
    int n = 0;
    for (const auto& g : groups) {
      for (const HogPixelVote& v : g) all[n++] = v;
    }
    return all;
  }();
  return votes;
}

}  // namespace cuimg
