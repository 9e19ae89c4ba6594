// The kernels of connected-component labelling (ccl_phases.h has the union-find and what each
// thread does between the barriers), and the warp-level folding of runs that the segment kernels
// share.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_CCL_DEVICE_CUH_
#define CUIMG_KERNELS_SRC_SEGMENTATION_CCL_DEVICE_CUH_

#include <cstdint>
#include <cstring>

#include "segmentation/ccl_phases.h"

namespace cuimg::seg {

// Labels each tile's part of the set {fg(in)} in shared memory (ccl_phases.h: LocalLoad,
// LocalUnite, LocalWrite, which marks the local roots in `local_roots` when not null); one block
// a tile.
template <typename T, Connectivity C>
__global__ void __launch_bounds__(kTileThreads)
    LocalComponentsKernel(const T* __restrict__ in, Foreground<T> fg,
                          std::uint32_t* __restrict__ labels, Geometry g,
                          std::uint32_t* __restrict__ local_roots) {
  __shared__ TileMemory<C> m;
  LocalLoad<T, C>(in, fg, m, g, blockIdx.x, threadIdx.x);
  __syncthreads();
  LocalUnite<C>(m, g, blockIdx.x, threadIdx.x);
  __syncthreads();
  LocalWrite<C>(m, labels, g, blockIdx.x, threadIdx.x, local_roots);
}

// Joins the tiles (ccl_phases.h: MergePixels); one block a tile.
template <typename T, Connectivity C>
__global__ void __launch_bounds__(kTileThreads)
    MergeTilesKernel(const T* __restrict__ in, Foreground<T> fg, std::uint32_t* labels,
                     Geometry g) {
  MergePixels<T, C>(in, fg, labels, g, blockIdx.x, threadIdx.x);
}

// Lane-contiguous runs of equal keys in a warp, reduced to their first lane: `merge(i)` folds the
// run state of lane `lane + i` (shuffled by the caller's `shuffle_down`) into this lane's when
// both lanes are in the same run. Returns whether this lane holds a run's total. Every lane of
// the warp must call it, and every lane executes each shuffle: a full-mask shuffle that some
// lane skips (as `lane == 0 || __shfl_up_sync(...)` did: lane 0 branched around it) is undefined
// behaviour and can leave the warp waiting for that lane forever (issue 48's GPU hangs).
template <typename Shuffle>
__device__ __forceinline__ bool ReduceRuns(std::uint32_t key, const Shuffle& shuffle_merge) {
  const unsigned lane = threadIdx.x & 31;
  const std::uint32_t before = __shfl_up_sync(0xffffffffu, key, 1);
  const bool head = lane == 0 || before != key;
  const unsigned heads = __ballot_sync(0xffffffffu, head);
  unsigned lanes_le;
  asm("mov.u32 %0, %%lanemask_le;" : "=r"(lanes_le));
  const int run = __popc(heads & lanes_le);
#pragma unroll
  for (int i = 1; i < 32; i <<= 1) {
    const int other = __shfl_down_sync(0xffffffffu, run, i);
    shuffle_merge(i, lane + i < 32 && other == run);
  }
  return head;
}

// The entries of a thread's pixels base, ..., base + 15 (kBackground past `pixels`), loaded before
// they are used: all loads in flight at once (four 16-byte loads when aligned and inside) instead
// of one load's latency per pixel, which bound these passes on a 1080p image (one wave of
// blocks). An entry that another thread changes meanwhile only ever moves to a value of the same
// meaning (a smaller ancestor, a count or mark added to a root, or its number).
template <typename T>
__device__ __forceinline__ void LoadPixels(const T* data, std::uint32_t base, std::uint32_t pixels,
                                           T (&v)[kPixelsPerThread], T outside) {
  constexpr int kPerVector = 16 / sizeof(T);
  if constexpr (16 % sizeof(T) == 0 && kPixelsPerThread % kPerVector == 0) {
    if (base + kPixelsPerThread <= pixels &&
        reinterpret_cast<std::uintptr_t>(data + base) % 16 == 0) {
      const auto* q = reinterpret_cast<const uint4*>(data + base);
#pragma unroll
      for (int j = 0; j < kPixelsPerThread / kPerVector; ++j) {
        const uint4 w = q[j];
        memcpy(&v[j * kPerVector], &w, 16);
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < kPixelsPerThread; ++i) v[i] = base + i < pixels ? data[base + i] : outside;
}

// Stores v[i] at data[base + i] (nothing past `pixels`), as four 16-byte stores when aligned and
// inside: a warp's 4-byte stores, 64 bytes apart, each touch 32 sectors, so one store a pixel
// cost four times the L2 writes of one a quad (the resolve pass: 936 -> 387 us on the CT).
__device__ __forceinline__ void StorePixels(std::uint32_t* data, std::uint32_t base,
                                            std::uint32_t pixels,
                                            const std::uint32_t (&v)[kPixelsPerThread]) {
  if (base + kPixelsPerThread <= pixels &&
      reinterpret_cast<std::uintptr_t>(data + base) % 16 == 0) {
    auto* q = reinterpret_cast<uint4*>(data + base);
#pragma unroll
    for (int j = 0; j < kPixelsPerThread / 4; ++j) {
      q[j] = make_uint4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kPixelsPerThread; ++i) {
    if (base + i < pixels) data[base + i] = v[i];
  }
}

// Points every pixel of a segment (kSegmentPixels consecutive pixels a block, 16 a thread) at its
// root. kCount: also adds each component's voxel count into its root's entry (r + count); runs of
// one root within a thread and then within a warp are summed first, so a large component costs
// one atomic per warp. `segment_roots` (may be null) gets the number of roots in each segment;
// `root_masks` (may be null) one 16-bit mask a thread (bit i: pixel base + i is a root), so that
// the numbering finds the roots without reading every pixel again.
template <bool kCount>
__global__ void __launch_bounds__(kTileThreads)
    FlattenKernel(std::uint32_t* labels, std::uint32_t pixels,
                  std::uint32_t* __restrict__ segment_roots,
                  std::uint16_t* __restrict__ root_masks) {
  const std::uint32_t base =
      blockIdx.x * kSegmentPixels + threadIdx.x * static_cast<std::uint32_t>(kPixelsPerThread);
  std::uint32_t roots = 0;
  std::uint32_t root_mask = 0;
  std::uint32_t run_root = kBackground;
  std::uint32_t run_count = 0;
  // The last link followed and its root: a thread's pixels mostly share their tile-local root,
  // and the roots no longer change (the unions are done), so one find serves them all.
  std::uint32_t last_link = kBackground, last_root = kBackground;
  std::uint32_t entries[kPixelsPerThread];
  LoadPixels(labels, base, pixels, entries, kBackground);
  for (int i = 0; i < kPixelsPerThread; ++i) {
    const std::uint32_t p = base + i;
    if (p >= pixels) break;
    const std::uint32_t v = entries[i];
    if (v == kBackground) continue;
    std::uint32_t r = p;
    if (v < p) {
      if (v != last_link) {
        last_link = v;
        last_root = FindCompress(labels, v);
      }
      r = last_root;
      // Entries only decrease (FindCompress), so the root stored here stays.
      if (r != v) labels[p] = r;
    } else {
      ++roots;
      root_mask |= 1u << i;
    }
    if (kCount) {
      if (r != run_root) {
        if (run_count > 0) atomicAdd(labels + run_root, run_count);
        run_root = r;
        run_count = 0;
      }
      ++run_count;
    }
  }
  if (kCount) {
    const bool head = ReduceRuns(run_root, [&](int i, bool same) {
      const std::uint32_t c = __shfl_down_sync(0xffffffffu, run_count, i);
      if (same) run_count += c;
    });
    if (head && run_count > 0) atomicAdd(labels + run_root, run_count);
  }
  if (root_masks != nullptr) {
    root_masks[blockIdx.x * kTileThreads + threadIdx.x] = static_cast<std::uint16_t>(root_mask);
  }
  if (segment_roots != nullptr) {
    __shared__ std::uint32_t warp_roots[kTileThreads / 32];
    std::uint32_t sum = roots;
    for (int i = 16; i > 0; i >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, i);
    if ((threadIdx.x & 31) == 0) warp_roots[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
      std::uint32_t total = 0;
      for (int w = 0; w < kTileThreads / 32; ++w) total += warp_roots[w];
      segment_roots[blockIdx.x] = total;
    }
  }
}

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_CCL_DEVICE_CUH_
