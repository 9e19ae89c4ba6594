#include "cuimg/kernels/group_rectangles.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <tuple>

namespace cuimg {
namespace {

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

std::vector<Detection> GroupRectangles(const std::vector<Detection>& rects, int group_threshold,
                                       double eps) {
  if (group_threshold <= 0 || rects.empty()) return rects;
  const auto similar = [eps](const Detection& a, const Detection& b) {
    const double delta = eps * (std::min(a.width, b.width) + std::min(a.height, b.height)) * 0.5;
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

std::vector<Detection> FinishDetections(const DetectGeometry& geometry, std::vector<WindowHit> hits,
                                        const DetectSpec& spec) {
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

}  // namespace cuimg
