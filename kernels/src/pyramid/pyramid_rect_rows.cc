#include "pyramid_rect_rows.h"

namespace cuimg::pyramid {

std::int64_t RectsX(std::int64_t width) { return (width + kRectW - 1) / kRectW; }

std::int64_t RectBlocks(std::int64_t width, std::int64_t height, int rows) {
  return RectsX(width) * ((height + rows - 1) / rows);
}

int RectRows(std::int64_t width, std::int64_t height, int sms) {
  if (sms <= 0) return kRectH;
  int best = kRectH;
  std::int64_t best_cost = -1;
  for (int rows = kRectH; rows >= kMinRectH; --rows) {
    const std::int64_t per_sm = (RectBlocks(width, height, rows) + sms - 1) / sms;
    const std::int64_t cost = per_sm * (rows + 1);
    if (best_cost < 0 || cost < best_cost) {
      best = rows;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace cuimg::pyramid
