// The chord-tile kernel: Urbach-Wilkinson chord decomposition in shared memory. A block loads the
// region its output tile needs (border pixels substituted), builds doubling tables along x
// (T_{2^k}(x) = min/max over [x, x + 2^k)) in place, and after each level applies the chords
// whose length uses it (levels no chord uses stay in registers, never stored): a chord of length L
// at level k = floor(log2 L) is the min/max of T_k(x + dx) and T_k(x + dx + L - 2^k). Cost per
// pixel: O(levels + chords), independent of the element's area. Integer pixels are packed in
// words (lane_ops.cuh) for SIMD min/max. Hot loops avoid runtime division: tile geometry comes as
// powers of two.
#include <algorithm>
#include <cstdint>

#include "common/div_small.cuh"
#include "common/kernel_attributes.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "device_ops.cuh"
#include "lane_ops.cuh"
#include "morphology_kernels.h"

namespace cuimg::internal {
namespace {

template <typename T>
struct ChordParams {
  const T* in;
  T* out;
  int width, height, depth;
  int tile_w, tile_h, tile_d;
  int rx0, ry0, rz0;
  int rw, rh, rd;
  int levels;
  int level_start[kMaxLevels + 1];
  int level_split[kMaxLevels];
  const int2* chords;
  int chord_count;
  int table_offset;  // bytes into shared memory
  int log2_tile_w;
  int log2_words_y;
  int accumulate;
  T border;
};

constexpr int kWarps = kThreads / 32;

// Pointer to image row (y, z), or null when the row is outside the image (border).
template <typename T>
__device__ __forceinline__ const T* RowOrNull(const ChordParams<T>& p, int y, int z) {
  if (y < 0 || z < 0 || y >= p.height || z >= p.depth) return nullptr;
  return p.in + (static_cast<std::int64_t>(z) * p.height + y) * p.width;
}

template <typename T>
__device__ __forceinline__ T RowPixel(const ChordParams<T>& p, const T* row, int x) {
  return (row != nullptr && static_cast<unsigned>(x) < static_cast<unsigned>(p.width)) ? row[x]
                                                                                       : p.border;
}

// Fills the region: one warp per region row, whose P source rows are resolved once; lanes on x
// (coalesced), four chunks of 32 words in flight. Word (rx, r) packs the P pixels of the pack axis.
template <typename T, PackMode kMode>
__device__ void LoadRegion(const ChordParams<T>& p, int x0, int y0, int z0,
                           typename LaneOps<T>::Lane* region) {
  using Ops = LaneOps<T>;
  using Lane = typename Ops::Lane;
  constexpr int P = Ops::kPack;
  constexpr int kChunks = 4;
  const int xs = x0 + p.rx0;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const float inv_rh = 1.0f / static_cast<float>(p.rh);
  for (int r = warp; r < p.rh * p.rd; r += kWarps) {
    const int plane = DivSmall(r, inv_rh);
    const int y = y0 + p.ry0 + (r - plane * p.rh);
    const T* rows[P];
#pragma unroll
    for (int i = 0; i < P; ++i) {
      // kSlidingY: rows y .. y+P-1 of one slice; kStackedZ: slices zb .. zb+P-1 of row y.
      rows[i] = kMode == PackMode::kStackedZ ? RowOrNull(p, y, z0 + plane * P + i)
                                             : RowOrNull(p, y + i, z0 + p.rz0 + plane);
    }
    Lane* out = region + r * p.rw;
    for (int base = 0; base < p.rw; base += 32 * kChunks) {
      Lane w[kChunks];
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int rx = base + 32 * c + lane;
        if constexpr (P == 1) {
          w[c] = RowPixel(p, rows[0], xs + rx);
        } else {
          w[c] = 0;
#pragma unroll
          for (int i = 0; i < P; ++i) {
            w[c] |= Ops::Bits(RowPixel(p, rows[i], xs + rx)) << (Ops::kBits * i);
          }
        }
      }
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int rx = base + 32 * c + lane;
        if (rx < p.rw) out[rx] = w[c];
      }
    }
  }
}

// Level k -> level `next` (next > k) of every region row in place: T_{2s}(x) = T_s(x) op T_s(x + s)
// for s = 2^k .. 2^(next-1); entries with x + s past the row keep their value (no lookup reads
// them). One warp per row, the whole row in registers (kChunks x 32 words), neighbours by shuffles:
// the doublings between two levels that have chords never touch shared memory.
template <typename T, bool kDilate, int kChunks>
__device__ void BuildLevelsInRegisters(typename LaneOps<T>::Lane* region, int rows, int rw, int k,
                                       int next, typename LaneOps<T>::Lane identity) {
  using Lane = typename LaneOps<T>::Lane;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  for (int r = warp; r < rows; r += kWarps) {
    Lane* row = region + r * rw;
    Lane v[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int x = 32 * c + lane;
      v[c] = x < rw ? row[x] : identity;  // identity past the row: combining keeps the value
    }
    for (int j = k; j < next; ++j) {
      const int s = 1 << j;
      if (s < 32) {
        // x + s is lane (lane + s) of this chunk or, past lane 31, of the next one. Ascending c
        // reads every chunk before it is updated.
        const int src = (lane + s) & 31;
        const bool same = lane + s < 32;
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
          const Lane a = __shfl_sync(0xffffffffu, v[c], src);
          const Lane b = c + 1 < kChunks ? __shfl_sync(0xffffffffu, v[c + 1], src) : identity;
          v[c] = LaneCombine<T, kDilate>(v[c], same ? a : b);
        }
      } else {
        // s is a whole number of chunks (1, 2, 4, ...): the same lane of chunk c + s / 32.
        const int q = s >> 5;
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
          Lane n = identity;
#pragma unroll
          for (int d = 1; d < kChunks; d *= 2) {
            if (d == q && c + d < kChunks) n = v[c + d];
          }
          v[c] = LaneCombine<T, kDilate>(v[c], n);
        }
      }
    }
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int x = 32 * c + lane;
      if (x < rw) row[x] = v[c];
    }
  }
}

// The same for rows too long for registers: one doubling at a time, in place, ascending x in chunks
// of 32 (a chunk reads only entries no earlier chunk has written; every lane reads its chunk
// before any lane writes it, and lanes are not lockstep: __syncwarp). Barriers between doublings.
template <typename T, bool kDilate>
__device__ void BuildLevelsInPlace(typename LaneOps<T>::Lane* region, int rows, int rw, int k,
                                   int next) {
  using Lane = typename LaneOps<T>::Lane;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  for (int j = k; j < next; ++j) {
    if (j > k) __syncthreads();
    const int s = 1 << j;
    const int width = rw - s;
    for (int r = warp; r < rows; r += kWarps) {
      Lane* row = region + r * rw;
      for (int xc = 0; xc < width; xc += 32) {
        const int x = xc + lane;
        Lane v{};
        if (x < width) v = LaneCombine<T, kDilate>(row[x], row[x + s]);
        __syncwarp();
        if (x < width) row[x] = v;
      }
    }
  }
}

template <typename T, bool kDilate, PackMode kMode, int kOpt>
__global__ void __launch_bounds__(kThreads)
    ChordTileKernel(const __grid_constant__ ChordParams<T> p) {
  using Ops = LaneOps<T>;
  using Lane = typename Ops::Lane;
  constexpr int P = Ops::kPack;
  extern __shared__ __align__(16) unsigned char smem[];
  Lane* region = reinterpret_cast<Lane*>(smem);
  int2* chords = reinterpret_cast<int2*>(smem + p.table_offset);
  const int x0 = blockIdx.x * p.tile_w;
  const int y0 = blockIdx.y * p.tile_h;
  const int z0 = blockIdx.z * p.tile_d;

  for (int c = threadIdx.x; c < p.chord_count; c += kThreads) chords[c] = __ldg(&p.chords[c]);
  LoadRegion<T, kMode>(p, x0, y0, z0, region);

  // This thread's output words: column ox, and word rows spaced by the threads per column.
  const int ox = threadIdx.x & (p.tile_w - 1);
  const int first_row = threadIdx.x >> p.log2_tile_w;
  const int row_step = kThreads >> p.log2_tile_w;
  const int words_y_mask = (1 << p.log2_words_y) - 1;
  const Lane* lookup[kOpt];
  Lane acc[kOpt];
  // NaN for f32 (the identity of fminf/fmaxf), as the reference starts from.
  const Lane identity = Ops::Broadcast(CombineIdentity<T, kDilate>());
#pragma unroll
  for (int j = 0; j < kOpt; ++j) {
    const int t = first_row + j * row_step;
    const int oyw = t & words_y_mask;
    const int ozw = t >> p.log2_words_y;
    lookup[j] = region + (ozw * p.rh + (kMode == PackMode::kSlidingY ? oyw * P : oyw)) * p.rw + ox;
    acc[j] = identity;
  }
  __syncthreads();

  const int rows = p.rh * p.rd;
  for (int k = 0;;) {
    // Chords of length 2^k: one lookup each.
    for (int c = p.level_start[k]; c < p.level_split[k]; ++c) {
      const int off = chords[c].x;
#pragma unroll
      for (int j = 0; j < kOpt; ++j) acc[j] = LaneCombine<T, kDilate>(acc[j], lookup[j][off]);
    }
    // Longer chords: two overlapping lookups, folded with one 3-input min/max.
    for (int c = p.level_split[k]; c < p.level_start[k + 1]; ++c) {
      const int2 ch = chords[c];
#pragma unroll
      for (int j = 0; j < kOpt; ++j) {
        acc[j] = LaneCombine3<T, kDilate>(acc[j], lookup[j][ch.x], lookup[j][ch.y]);
      }
    }
    // The next level that has chords (the last level always has); levels between are never
    // stored.
    int next = k + 1;
    while (next < p.levels && p.level_start[next] == p.level_start[next + 1]) ++next;
    if (next >= p.levels) break;
    __syncthreads();
    if (p.rw <= 4 * 32) {
      BuildLevelsInRegisters<T, kDilate, 4>(region, rows, p.rw, k, next, identity);
    } else if (p.rw <= 8 * 32) {
      BuildLevelsInRegisters<T, kDilate, 8>(region, rows, p.rw, k, next, identity);
    } else {
      BuildLevelsInPlace<T, kDilate>(region, rows, p.rw, k, next);
    }
    __syncthreads();
    k = next;
  }

  // Unpack each output word into its P pixels.
  const int x = x0 + ox;
  if (x >= p.width) return;
  const std::int64_t slice = static_cast<std::int64_t>(p.width) * p.height;
#pragma unroll
  for (int j = 0; j < kOpt; ++j) {
    const int t = first_row + j * row_step;
    const int oyw = t & words_y_mask;
    const int ozw = t >> p.log2_words_y;
    const int y = y0 + (kMode == PackMode::kSlidingY ? oyw * P : oyw);
    const int z = z0 + (kMode == PackMode::kSlidingY ? ozw : ozw * P);
    if (y >= p.height || z >= p.depth) continue;
    T* dst = p.out + (static_cast<std::int64_t>(z) * p.height + y) * p.width + x;
    const std::int64_t step = kMode == PackMode::kSlidingY ? p.width : slice;
    const int left = kMode == PackMode::kSlidingY ? p.height - y : p.depth - z;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      if (i >= left) break;
      T v = Ops::Get(acc[j], i);
      if (p.accumulate) v = Combine<T, kDilate>(dst[i * step], v);
      dst[i * step] = v;
    }
  }
}

template <typename T, bool kDilate, PackMode kMode>
absl::Status Launch(const ChordParams<T>& params, const ChordBand& band, const Extent& e,
                    cudaStream_t stream) {
  auto kernel =
      band.opt == 8 ? ChordTileKernel<T, kDilate, kMode, 8> : ChordTileKernel<T, kDilate, kMode, 4>;
  CUIMG_RETURN_IF_ERROR(EnsureKernelSharedMemory(reinterpret_cast<const void*>(kernel),
                                                 band.smem_bytes, "ChordTileKernel"));
  const std::int64_t gx = (e.width + band.tile_w - 1) / band.tile_w;
  const std::int64_t gy = (e.height + band.tile_h - 1) / band.tile_h;
  const std::int64_t gz = (e.depth + band.tile_d - 1) / band.tile_d;
  if (!FitsGrid(gx, gy, gz)) {
    return absl::InvalidArgumentError("image too large for the chord kernel's grid");
  }
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz));
  kernel<<<grid, kThreads, band.smem_bytes, stream>>>(params);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "ChordTileKernel");
  return absl::OkStatus();
}

}  // namespace

template <typename T>
absl::Status LaunchChordBand(const T* in, T* out, const Extent& extent, const ChordBand& band,
                             const int* chords, bool dilate, T border, bool accumulate,
                             cudaStream_t stream) {
  ChordParams<T> p{};
  p.in = in;
  p.out = out;
  p.width = static_cast<int>(extent.width);
  p.height = static_cast<int>(extent.height);
  p.depth = static_cast<int>(extent.depth);
  p.tile_w = band.tile_w;
  p.tile_h = band.tile_h;
  p.tile_d = band.tile_d;
  p.rx0 = band.rx0;
  p.ry0 = band.ry0;
  p.rz0 = band.rz0;
  p.rw = band.rw;
  p.rh = band.rh;
  p.rd = band.rd;
  p.levels = band.levels;
  std::copy(band.level_start, band.level_start + kMaxLevels + 1, p.level_start);
  std::copy(band.level_split, band.level_split + kMaxLevels, p.level_split);
  p.chords = reinterpret_cast<const int2*>(chords) + band.chord_begin;
  p.chord_count = band.chord_count;
  p.table_offset = static_cast<int>(band.table_offset);
  p.log2_tile_w = band.log2_tile_w;
  p.log2_words_y = band.log2_words_y;
  p.accumulate = accumulate ? 1 : 0;
  p.border = border;
  if (band.mode == PackMode::kSlidingY) {
    return dilate ? Launch<T, true, PackMode::kSlidingY>(p, band, extent, stream)
                  : Launch<T, false, PackMode::kSlidingY>(p, band, extent, stream);
  }
  if constexpr (LaneOps<T>::kPack > 1) {
    return dilate ? Launch<T, true, PackMode::kStackedZ>(p, band, extent, stream)
                  : Launch<T, false, PackMode::kStackedZ>(p, band, extent, stream);
  }
  return absl::InternalError("stacked-z packing planned for an unpacked pixel type");
}

template absl::Status LaunchChordBand<std::uint8_t>(const std::uint8_t*, std::uint8_t*,
                                                    const Extent&, const ChordBand&, const int*,
                                                    bool, std::uint8_t, bool, cudaStream_t);
template absl::Status LaunchChordBand<std::uint16_t>(const std::uint16_t*, std::uint16_t*,
                                                     const Extent&, const ChordBand&, const int*,
                                                     bool, std::uint16_t, bool, cudaStream_t);
template absl::Status LaunchChordBand<std::int16_t>(const std::int16_t*, std::int16_t*,
                                                    const Extent&, const ChordBand&, const int*,
                                                    bool, std::int16_t, bool, cudaStream_t);
template absl::Status LaunchChordBand<float>(const float*, float*, const Extent&, const ChordBand&,
                                             const int*, bool, float, bool, cudaStream_t);

}  // namespace cuimg::internal
