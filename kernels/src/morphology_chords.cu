// The chord-tile kernel: Urbach-Wilkinson chord decomposition in shared memory. A block loads the
// region its output tile needs (border pixels substituted), builds doubling tables along x
// (T_{2^k}(x) = min/max over [x, x + 2^k)) level by level, and after each level applies the chords
// whose length uses it: a chord of length L at level k = floor(log2 L) is the min/max of
// T_k(x + dx) and T_k(x + dx + L - 2^k). Cost per pixel: O(levels + chords), independent of the
// element's area. Integer pixels are packed in words (lane_ops.cuh) for SIMD min/max. Hot loops
// avoid runtime division: tile geometry comes as powers of two.
#include <algorithm>
#include <cstdint>

#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "cell_loop.cuh"
#include "common/kernel_attributes.h"
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
  int double_buffer; // levels ping-pong between two region buffers (else in place)
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

// Fills the region words, loads batched (cell_loop.cuh), lanes on x (coalesced).
template <typename T, PackMode kMode>
__device__ void LoadRegion(const ChordParams<T>& p, int x0, int y0, int z0,
                           typename LaneOps<T>::Lane* region, T* raw) {
  using Ops = LaneOps<T>;
  using Lane = typename Ops::Lane;
  constexpr int P = Ops::kPack;
  constexpr int kBatch = 4;
  const int xs = x0 + p.rx0;
  const float inv_rh = 1.0f / static_cast<float>(p.rh);
  const float inv_raw_rows = 1.0f / static_cast<float>(p.rh + P - 1);
  if constexpr (kMode == PackMode::kStackedZ) {
    // Region row r = (plane, ry); word = pixels of slices zb .. zb+P-1 at (x, y).
    ForEachCell<kBatch>(
        p.rh * p.rd, p.rw,
        [&](int r, int rx) {
          const int plane = DivSmall(r, inv_rh);
          const int y = y0 + p.ry0 + (r - plane * p.rh);
          const int zb = z0 + plane * P;
          Lane w = 0;
#pragma unroll
          for (int i = 0; i < P; ++i) {
            w |= Ops::Bits(RowPixel(p, RowOrNull(p, y, zb + i), xs + rx)) << (Ops::kBits * i);
          }
          return w;
        },
        [&](int r, int rx, Lane w) { region[r * p.rw + rx] = w; });
  } else if constexpr (P == 1) {
    ForEachCell<kBatch>(
        p.rh * p.rd, p.rw,
        [&](int r, int rx) {
          const int plane = DivSmall(r, inv_rh);
          return RowPixel(p, RowOrNull(p, y0 + p.ry0 + (r - plane * p.rh), z0 + p.rz0 + plane),
                          xs + rx);
        },
        [&](int r, int rx, Lane v) { region[r * p.rw + rx] = v; });
  } else {
    // Sliding words: stage the raw rows, then word (x, y) = rows y .. y+P-1 at x.
    const int raw_rows = p.rh + P - 1;
    ForEachCell<kBatch>(
        raw_rows * p.rd, p.rw,
        [&](int r, int rx) {
          const int plane = DivSmall(r, inv_raw_rows);
          return RowPixel(p, RowOrNull(p, y0 + p.ry0 + (r - plane * raw_rows), z0 + p.rz0 + plane),
                          xs + rx);
        },
        [&](int r, int rx, T v) { raw[r * p.rw + rx] = v; });
    __syncthreads();
    ForEachCell<kBatch>(
        p.rh * p.rd, p.rw,
        [&](int r, int rx) {
          const int plane = DivSmall(r, inv_rh);
          const T* src = raw + (plane * raw_rows + (r - plane * p.rh)) * p.rw + rx;
          Lane w = 0;
#pragma unroll
          for (int i = 0; i < P; ++i) w |= Ops::Bits(src[i * p.rw]) << (Ops::kBits * i);
          return w;
        },
        [&](int r, int rx, Lane w) { region[r * p.rw + rx] = w; });
  }
}

template <typename T, bool kDilate, PackMode kMode, int kOpt>
__global__ void __launch_bounds__(kThreads) ChordTileKernel(const __grid_constant__ ChordParams<T> p) {
  using Ops = LaneOps<T>;
  using Lane = typename Ops::Lane;
  constexpr int P = Ops::kPack;
  extern __shared__ __align__(16) unsigned char smem[];
  Lane* region = reinterpret_cast<Lane*>(smem);
  // With double buffering the second region buffer also serves as the raw staging area.
  Lane* spare = region + p.rw * p.rh * p.rd;
  T* raw = reinterpret_cast<T*>(spare);
  int2* chords = reinterpret_cast<int2*>(smem + p.table_offset);
  const int x0 = blockIdx.x * p.tile_w;
  const int y0 = blockIdx.y * p.tile_h;
  const int z0 = blockIdx.z * p.tile_d;

  for (int c = threadIdx.x; c < p.chord_count; c += kThreads) chords[c] = __ldg(&p.chords[c]);
  LoadRegion<T, kMode>(p, x0, y0, z0, region, raw);

  // This thread's output words: column ox, and word rows spaced by the threads per column.
  const int ox = threadIdx.x & (p.tile_w - 1);
  const int first_row = threadIdx.x >> p.log2_tile_w;
  const int row_step = kThreads >> p.log2_tile_w;
  const int words_y_mask = (1 << p.log2_words_y) - 1;
  int base[kOpt];
  const Lane* lookup[kOpt];  // region + base[j], for the current level's buffer
  Lane acc[kOpt];
  // NaN for f32 (the identity of fminf/fmaxf), as the reference starts from.
  const Lane identity = Ops::Broadcast(CombineIdentity<T, kDilate>());
#pragma unroll
  for (int j = 0; j < kOpt; ++j) {
    const int t = first_row + j * row_step;
    const int oyw = t & words_y_mask;
    const int ozw = t >> p.log2_words_y;
    base[j] = (ozw * p.rh + (kMode == PackMode::kSlidingY ? oyw * P : oyw)) * p.rw + ox;
    lookup[j] = region + base[j];
    acc[j] = identity;
  }
  __syncthreads();

  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  for (int k = 0; k < p.levels; ++k) {
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
    if (k + 1 < p.levels) {
      const int s = 1 << k;
      const int width = p.rw - s;
      __syncthreads();
      if (p.double_buffer) {
        // Next level into the other buffer: T_{2s}(x) = T_s(x) op T_s(x + s).
        ForEachCell<4>(
            p.rh * p.rd, width, [&](int r, int x) {
              const Lane* row = region + r * p.rw;
              return LaneCombine<T, kDilate>(row[x], row[x + s]);
            },
            [&](int r, int x, Lane v) { spare[r * p.rw + x] = v; });
        // Entries past `width` keep their level-s value: later levels never read them.
        Lane* t = region;
        region = spare;
        spare = t;
#pragma unroll
        for (int j = 0; j < kOpt; ++j) lookup[j] = region + base[j];
      } else {
        // In place, one warp per row, ascending x in chunks of 32: a chunk reads only entries no
        // earlier chunk has written, and every lane reads its chunk before any lane writes it
        // (lanes are not lockstep: __syncwarp).
        for (int r = warp; r < p.rh * p.rd; r += kWarps) {
          Lane* row = region + r * p.rw;
          for (int xc = 0; xc < width; xc += 32) {
            const int x = xc + lane;
            Lane v{};
            if (x < width) v = LaneCombine<T, kDilate>(row[x], row[x + s]);
            __syncwarp();
            if (x < width) row[x] = v;
          }
        }
      }
      __syncthreads();
    }
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
  auto kernel = band.opt == 8 ? ChordTileKernel<T, kDilate, kMode, 8>
                              : ChordTileKernel<T, kDilate, kMode, 4>;
  CUIMG_RETURN_IF_ERROR(EnsureKernelSharedMemory(reinterpret_cast<const void*>(kernel),
                                                 band.smem_bytes, "ChordTileKernel"));
  const dim3 grid(static_cast<unsigned>((e.width + band.tile_w - 1) / band.tile_w),
                  static_cast<unsigned>((e.height + band.tile_h - 1) / band.tile_h),
                  static_cast<unsigned>((e.depth + band.tile_d - 1) / band.tile_d));
  if (grid.y > 65535 || grid.z > 65535) {
    return absl::InvalidArgumentError("image too large for the chord kernel's grid");
  }
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
  p.double_buffer = band.double_buffer ? 1 : 0;
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
