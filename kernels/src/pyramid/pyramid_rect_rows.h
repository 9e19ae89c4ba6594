// The FROM_BASE pyramid kernel's source rectangles (pyramid_rects.cuh), sized on the host: their
// width is fixed; their height is chosen per device so that the blocks spread evenly over its SMs.
#ifndef CUIMG_KERNELS_SRC_PYRAMID_RECT_ROWS_H_
#define CUIMG_KERNELS_SRC_PYRAMID_RECT_ROWS_H_

#include <cstdint>

namespace cuimg::pyramid {

inline constexpr int kRectW = 128;    // source columns per block
inline constexpr int kRectH = 32;     // source rows per block at most (the staging's size)
inline constexpr int kMinRectH = 24;  // and at least (below, staging overhead grows)

// Rectangles per source row band.
std::int64_t RectsX(std::int64_t width);
// Blocks of a launch over a `width` x `height` source in rectangles of `rows` rows.
std::int64_t RectBlocks(std::int64_t width, std::int64_t height, int rows);

// Rows per rectangle for a `width` x `height` source on a device with `sms` SMs (0: unknown, then
// kRectH). A block's work grows with its staged rows (rows + 1) and the busiest SM runs
// ceil(blocks / sms) blocks, so the height in [kMinRectH, kRectH] that minimizes
// ceil(blocks / sms) * (rows + 1) wins, the taller on ties. 1080p on an H200's 132 SMs: 31 rows,
// 525 blocks, at most 4 on an SM: 35.2-35.9 us; 32 rows (510 blocks, 114 SMs with 4 and 18 with 3)
// 36.1-36.6 us in the same runs; 30 rows (540 blocks, 12 SMs with a fifth) 41.8 us (runs 55-58).
int RectRows(std::int64_t width, std::int64_t height, int sms);

}  // namespace cuimg::pyramid

#endif  // CUIMG_KERNELS_SRC_PYRAMID_RECT_ROWS_H_
