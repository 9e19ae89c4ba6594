// Precision and recall of one set of boxes against a reference set: greedy one-to-one matching
// by descending IoU, a match needing IoU >= the threshold.
#ifndef CUIMG_TESTS_TESTING_DETECTION_MATCHING_H_
#define CUIMG_TESTS_TESTING_DETECTION_MATCHING_H_

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"

namespace cuimg::testing {

struct Box {
  int x, y, width, height;
};

inline double IoU(const Box& a, const Box& b) {
  const int x0 = std::max(a.x, b.x), y0 = std::max(a.y, b.y);
  const int x1 = std::min(a.x + a.width, b.x + b.width);
  const int y1 = std::min(a.y + a.height, b.y + b.height);
  if (x1 <= x0 || y1 <= y0) return 0;
  const double inter = double{1} * (x1 - x0) * (y1 - y0);
  return inter / (double{1} * a.width * a.height + double{1} * b.width * b.height - inter);
}

struct MatchCounts {
  int matched = 0;
  int found = 0;      // boxes in the set under test
  int reference = 0;  // boxes in the reference set

  // Both 1 when both sets are empty.
  double Precision() const { return found == 0 ? 1.0 : double{1} * matched / found; }
  double Recall() const { return reference == 0 ? 1.0 : double{1} * matched / reference; }
  std::string Describe() const {
    return absl::StrFormat("%d of %d found matched %d reference boxes: precision %.4f recall %.4f",
                           matched, found, reference, Precision(), Recall());
  }
  MatchCounts& operator+=(const MatchCounts& o) {
    matched += o.matched;
    found += o.found;
    reference += o.reference;
    return *this;
  }
};

inline MatchCounts MatchBoxes(const std::vector<Box>& found, const std::vector<Box>& reference,
                              double min_iou) {
  std::vector<std::tuple<double, int, int>> pairs;
  for (int i = 0; i < static_cast<int>(found.size()); ++i) {
    for (int j = 0; j < static_cast<int>(reference.size()); ++j) {
      const double iou = IoU(found[i], reference[j]);
      if (iou >= min_iou) pairs.emplace_back(-iou, i, j);
    }
  }
  std::sort(pairs.begin(), pairs.end());
  std::vector<bool> used_f(found.size()), used_r(reference.size());
  MatchCounts m;
  m.found = static_cast<int>(found.size());
  m.reference = static_cast<int>(reference.size());
  for (const auto& [neg_iou, i, j] : pairs) {
    if (used_f[i] || used_r[j]) continue;
    used_f[i] = used_r[j] = true;
    ++m.matched;
  }
  return m;
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_DETECTION_MATCHING_H_
