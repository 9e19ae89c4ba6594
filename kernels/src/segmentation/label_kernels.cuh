// The numbering passes of LabelPlan (after ccl_device.cuh's flattening): count the roots kept in
// each segment, scan the counts, give each kept root its number in raster order, then write
// every pixel's number and accumulate the region statistics.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_LABEL_KERNELS_CUH_
#define CUIMG_KERNELS_SRC_SEGMENTATION_LABEL_KERNELS_CUH_

#include <cstdint>

#include "segmentation/ccl_device.cuh"
#include "segmentation/region_device.cuh"

namespace cuimg::seg {

inline constexpr int kScanThreads = 1024;

// The exclusive prefix sum of `value` over the block (blockDim.x a multiple of 32, at most
// 1024); `total` gets the block's sum. Every thread must call it.
__device__ __forceinline__ std::uint32_t BlockExclusiveScan(std::uint32_t value,
                                                            std::uint32_t* total) {
  __shared__ std::uint32_t warp_sums[32];
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  std::uint32_t inclusive = value;
#pragma unroll
  for (int i = 1; i < 32; i <<= 1) {
    const std::uint32_t other = __shfl_up_sync(0xffffffffu, inclusive, i);
    if (lane >= static_cast<unsigned>(i)) inclusive += other;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const unsigned warps = blockDim.x >> 5;
    std::uint32_t w = lane < warps ? warp_sums[lane] : 0;
#pragma unroll
    for (int i = 1; i < 32; i <<= 1) {
      const std::uint32_t other = __shfl_up_sync(0xffffffffu, w, i);
      if (lane >= static_cast<unsigned>(i)) w += other;
    }
    warp_sums[lane] = w;  // inclusive over warps
  }
  __syncthreads();
  const std::uint32_t before = warp == 0 ? 0 : warp_sums[warp - 1];
  *total = warp_sums[(blockDim.x >> 5) - 1];
  __syncthreads();  // warp_sums is reused by the next call
  return before + inclusive - value;
}

// Segments up to which each numbering block sums the counts before its own (at most 16 loads a
// thread) instead of a scan kernel running first: one launch less for images up to 16 M pixels.
inline constexpr std::uint32_t kMaxSegmentsSummed = 4096;

// The candidates are given as one 16-bit mask a thread (bit i: pixel base + i), either the
// flatten pass's roots or LocalWrite's tile-local roots; a candidate is a root when its entry is
// >= its index (a root may carry a count: r + voxels), and kept when that count is at least
// `min_voxels` (0 without counts). Only candidates' entries are read.
// kNumber false: writes the number of kept roots of each segment to `counts`. kNumber true:
// gives kept roots the numbers offsets[segment] + 1, ... in raster order (the entry becomes
// kMark | k, and row k - 1 of the table is cleared) and roots not kept kMark | 0; candidates that
// are not roots are left alone. kSum (with kNumber): the block sums counts[0..segment) itself for
// its offset, ignoring `offsets`, and the last block writes the total to `region_count`.
template <typename I, bool kNumber, bool kSum = false>
__global__ void __launch_bounds__(kTileThreads)
    NumberRootsKernel(std::uint32_t* __restrict__ labels, const std::uint16_t* __restrict__ masks,
                      std::uint32_t min_voxels, std::uint32_t* __restrict__ counts,
                      const std::uint32_t* __restrict__ offsets, RegionTable table,
                      std::uint32_t* __restrict__ region_count = nullptr) {
  const std::uint32_t base =
      blockIdx.x * kSegmentPixels + threadIdx.x * static_cast<std::uint32_t>(kPixelsPerThread);
  std::uint32_t kept_mask = 0, dropped_mask = 0;
  for (std::uint32_t m = masks[blockIdx.x * kTileThreads + threadIdx.x]; m != 0; m &= m - 1) {
    const int i = __ffs(m) - 1;
    const std::uint32_t p = base + i;
    const std::uint32_t v = labels[p];
    if (v == kBackground || v < p) continue;
    if (v - p >= min_voxels) {
      kept_mask |= 1u << i;
    } else {
      dropped_mask |= 1u << i;
    }
  }
  const std::uint32_t kept = __popc(kept_mask);
  std::uint32_t total = 0;
  const std::uint32_t before = BlockExclusiveScan(kept, &total);
  if (!kNumber) {
    if (threadIdx.x == 0) counts[blockIdx.x] = total;
    return;
  }
  std::uint32_t offset = 0;
  if (kSum) {
    std::uint32_t earlier = 0;
    for (std::uint32_t j = threadIdx.x; j < blockIdx.x; j += kTileThreads) earlier += counts[j];
    BlockExclusiveScan(earlier, &offset);
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) *region_count = offset + total;
  } else {
    offset = offsets[blockIdx.x];
  }
  std::uint32_t k = offset + before + 1;
  for (std::uint32_t m = kept_mask; m != 0; m &= m - 1) {
    const int i = __ffs(m) - 1;
    ClearRow<I>(table, k - 1);
    labels[base + i] = kMark | k;
    ++k;
  }
  for (std::uint32_t m = dropped_mask; m != 0; m &= m - 1) labels[base + __ffs(m) - 1] = kMark;
}

// After the numbering of a forest that was not flattened (LocalWrite's marks): every tile-local
// root that is not a root takes its root's number, kMark | k, found by following the links up to
// the first marked entry (the root's, or another local root's already numbered here: both carry
// the component's number). Afterwards every labelled pixel's entry is marked or links to a
// marked entry, as ResolveKernel reads them.
__global__ void __launch_bounds__(kTileThreads)
    NumberLocalRootsKernel(std::uint32_t* labels, const std::uint16_t* __restrict__ masks) {
  const std::uint32_t base =
      blockIdx.x * kSegmentPixels + threadIdx.x * static_cast<std::uint32_t>(kPixelsPerThread);
  // The last link followed and its number: a thread's local roots often share their root.
  std::uint32_t last_link = kBackground, last_number = 0;
  for (std::uint32_t m = masks[blockIdx.x * kTileThreads + threadIdx.x]; m != 0; m &= m - 1) {
    const std::uint32_t p = base + __ffs(m) - 1;
    const std::uint32_t v = Ld(labels + p);
    if (v & kMark) continue;  // a root: numbered
    if (v != last_link) {
      last_link = v;
      std::uint32_t y = v;
      do {
        y = Ld(labels + y);
      } while (!(y & kMark));
      last_number = y;
    }
    labels[p] = last_number;
  }
}

// One block: offsets[i] = counts[0] + ... + counts[i - 1]; *total = the sum of all.
__global__ void __launch_bounds__(kScanThreads)
    ScanSegmentsKernel(const std::uint32_t* __restrict__ counts,
                       std::uint32_t* __restrict__ offsets, std::uint32_t n,
                       std::uint32_t* __restrict__ total) {
  const std::uint32_t per = (n + kScanThreads - 1) / kScanThreads;
  const std::uint32_t begin = min(n, threadIdx.x * per);
  const std::uint32_t end = min(n, begin + per);
  std::uint32_t sum = 0;
  for (std::uint32_t i = begin; i < end; ++i) sum += counts[i];
  std::uint32_t all = 0;
  std::uint32_t run = BlockExclusiveScan(sum, &all);
  for (std::uint32_t i = begin; i < end; ++i) {
    offsets[i] = run;
    run += counts[i];
  }
  if (threadIdx.x == 0) *total = all;
}

// Writes every pixel's label (0, or the number its root carries) over the links and adds the
// pixel to its region's statistics: a thread's 16 consecutive pixels form runs of one label,
// a warp's runs of one label are folded together, and each run left makes one set of atomics.
template <typename I, int kAxes>
__global__ void __launch_bounds__(kTileThreads)
    ResolveKernel(std::uint32_t* labels, Geometry g, const I* __restrict__ intensity,
                  RegionTable table) {
  const std::uint32_t base =
      blockIdx.x * kSegmentPixels + threadIdx.x * static_cast<std::uint32_t>(kPixelsPerThread);
  std::int32_t c[3];
  {
    const std::uint32_t row = base / g.width;
    c[0] = static_cast<std::int32_t>(base - row * g.width);
    c[1] = static_cast<std::int32_t>(row % g.height);
    c[2] = static_cast<std::int32_t>(row / g.height);
  }
  RegionRun<I, kAxes> run;
  // The last root read and its number: a thread's pixels mostly share their root.
  std::uint32_t last_root = kBackground, last_number = 0;
  std::uint32_t entries[kPixelsPerThread];
  LoadPixels(labels, base, g.pixels, entries, kBackground);
  // The intensities too, for every pixel (background ones are loaded and not used): loads in
  // flight together rather than one latency per labelled pixel.
  I values[kHasIntensity<I> ? kPixelsPerThread : 1];
  if constexpr (kHasIntensity<I>) LoadPixels(intensity, base, g.pixels, values, I{});
  for (int i = 0; i < kPixelsPerThread; ++i) {
    const std::uint32_t p = base + i;
    if (p >= g.pixels) break;
    const std::uint32_t v = entries[i];
    std::uint32_t k = 0;
    if (v != kBackground && (v & kMark)) {
      k = v & ~kMark;  // a root: its number (0 when dropped)
    } else if (v != kBackground) {
      if (v != last_root) {
        last_root = v;
        last_number = Ld(labels + v) & ~kMark;
      }
      k = last_number;
    }
    entries[i] = k;
    if (k != 0) {
      I value{};
      if constexpr (kHasIntensity<I>) value = values[i];
      if (k != run.label) {
        if (run.label != 0) run.Flush(table);
        run.Start(k, c, value);
      } else {
        run.Add(c, value);
      }
    }
    if (++c[0] == static_cast<std::int32_t>(g.width)) {
      c[0] = 0;
      if (++c[1] == static_cast<std::int32_t>(g.height)) {
        c[1] = 0;
        ++c[2];
      }
    }
  }
  // Another thread may still read a root's entry here for its number: storing the number over
  // kMark | number changes nothing that read sees.
  StorePixels(labels, base, g.pixels, entries);
  const bool head = ReduceRuns(run.label, [&](int i, bool same) { run.ShuffleMerge(i, same); });
  if (head && run.label != 0) run.Flush(table);
}

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_LABEL_KERNELS_CUH_
