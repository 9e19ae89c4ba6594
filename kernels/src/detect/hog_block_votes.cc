#include "cuimg/kernels/hog_block_votes.h"

#include <array>
#include <cmath>
#include <vector>

namespace cuimg {

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
