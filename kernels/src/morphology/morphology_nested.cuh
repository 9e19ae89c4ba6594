// The nested-rows kernel: erosion/dilation by a 2D element that is symmetric about its anchor and
// whose rows are runs centred on the anchor column, never wider away from the anchor row (disks,
// ellipses, crosses, diamonds of odd size). Such an element is the union of the centred
// rectangles [-u_k, u_k] x [-k, k] (u_k: half-width of rows +-k), so with V_k the min/max over
// rows y-k..y+k and H_d the min/max over columns x-d..x+d,
//   out = H_{u_R}(V_R op H_{u_(R-1) - u_R}(V_(R-1) op ... H_{u_0 - u_1}(V_0)))
// and, H containing its centre, V_k may be just rows y-k and y+k: u_0 column steps and R row steps
// per pixel, whatever the element's area. Each warp
// slides down a band of rows of a strip of 128 columns, four per lane: rows wait in a register
// ring (the radius is a template parameter), columns cross lanes by shuffles. No shared memory, no
// barriers. Integer pixels ride two per word in 16-bit lanes (lane_ops.cuh): slices z and z+1 of
// a volume, or rows y and y + ceil(height/2) of a 2D image.
#ifndef CUIMG_KERNELS_SRC_MORPHOLOGY_NESTED_CUH_
#define CUIMG_KERNELS_SRC_MORPHOLOGY_NESTED_CUH_

#include <cstdint>

#include "absl/status/status.h"
#include "cuimg/common/cuda_status.h"
#include "lane_ops.cuh"
#include "nested_steps.h"

// Shared by morphology_nested.cu (steps read at run time, the launcher) and
// morphology_nested_compiled.cu (the compiled step lists), two files so they build in parallel.
namespace cuimg::internal::nested {

constexpr int kThreadsPerBlock = 128;
constexpr int kColumnsPerLane = 4;
constexpr int kStripColumns = 32 * kColumnsPerLane;

template <typename T>
struct NestedParams {
  const T* in;
  T* out;
  int width, height, depth;
  int plane_rows;  // word rows per plane
  int slice_step;  // plane p's pack lane j reads slice p * slice_step + j * lane_slice
  int lane_slice;
  int lane_rows;    // ... at row y + j * lane_rows
  int dz;           // sources: slices z - dz and z + dz (0: slice z alone)
  int point_dz;     // dz = 0 pass: slices z +- point_dz fold in as they are (0: none)
  int strip_width;  // output columns per strip (a multiple of 4)
  int halo;         // columns loaded left of a strip (a multiple of 4, >= u_0)
  int strips, bands, band_rows;
  long long warps;
  int steps[kNestedMaxRadius + 1];  // column steps before V_k joins (k >= 1); [0]: the last, u_R
  bool vector;                      // rows 4-pixel aligned: quads as one access
  T border;
};

// Four consecutive pixels of one row: the unit of global loads and stores (one vector access
// when rows are 4-pixel aligned), and its packing into four lane words.
template <typename T>
struct Quad;

template <>
struct Quad<std::uint8_t> {
  using Raw = std::uint32_t;
  __device__ static Raw Broadcast(std::uint8_t v) { return 0x01010101u * v; }
  __device__ static std::uint8_t Get(Raw r, int i) {
    return static_cast<std::uint8_t>(r >> (8 * i));
  }
  __device__ static void Set(Raw& r, int i, std::uint8_t v) {
    r = (r & ~(0xFFu << (8 * i))) | (static_cast<std::uint32_t>(v) << (8 * i));
  }
  // Word i = pixel i of a | pixel i of b << 16.
  __device__ static void Pack(Raw a, Raw b, std::uint32_t (&w)[4]) {
    const std::uint32_t lo = __byte_perm(a, b, 0x5140);  // a0 b0 a1 b1
    const std::uint32_t hi = __byte_perm(a, b, 0x7362);  // a2 b2 a3 b3
    w[0] = __byte_perm(lo, 0, 0x4140);
    w[1] = __byte_perm(lo, 0, 0x4342);
    w[2] = __byte_perm(hi, 0, 0x4140);
    w[3] = __byte_perm(hi, 0, 0x4342);
  }
  __device__ static void Unpack(const std::uint32_t (&w)[4], Raw& a, Raw& b) {
    const std::uint32_t lo = __byte_perm(w[0], w[1], 0x6240);  // a0 a1 b0 b1
    const std::uint32_t hi = __byte_perm(w[2], w[3], 0x6240);  // a2 a3 b2 b3
    a = __byte_perm(lo, hi, 0x5410);
    b = __byte_perm(lo, hi, 0x7632);
  }
};

template <typename T16>
struct Quad16 {
  using Raw = uint2;
  __device__ static Raw Broadcast(T16 v) {
    const std::uint32_t w = 0x00010001u * static_cast<std::uint16_t>(v);
    return make_uint2(w, w);
  }
  __device__ static T16 Get(Raw r, int i) {
    return static_cast<T16>(static_cast<std::uint16_t>((i < 2 ? r.x : r.y) >> (16 * (i & 1))));
  }
  __device__ static void Set(Raw& r, int i, T16 v) {
    std::uint32_t& w = i < 2 ? r.x : r.y;
    const int shift = 16 * (i & 1);
    w = (w & ~(0xFFFFu << shift)) |
        (static_cast<std::uint32_t>(static_cast<std::uint16_t>(v)) << shift);
  }
  __device__ static void Pack(Raw a, Raw b, std::uint32_t (&w)[4]) {
    w[0] = __byte_perm(a.x, b.x, 0x5410);
    w[1] = __byte_perm(a.x, b.x, 0x7632);
    w[2] = __byte_perm(a.y, b.y, 0x5410);
    w[3] = __byte_perm(a.y, b.y, 0x7632);
  }
  __device__ static void Unpack(const std::uint32_t (&w)[4], Raw& a, Raw& b) {
    a = make_uint2(__byte_perm(w[0], w[1], 0x5410), __byte_perm(w[2], w[3], 0x5410));
    b = make_uint2(__byte_perm(w[0], w[1], 0x7632), __byte_perm(w[2], w[3], 0x7632));
  }
};
template <>
struct Quad<std::uint16_t> : Quad16<std::uint16_t> {};
template <>
struct Quad<std::int16_t> : Quad16<std::int16_t> {};

template <>
struct Quad<float> {
  using Raw = float4;
  __device__ static Raw Broadcast(float v) { return make_float4(v, v, v, v); }
  __device__ static float Get(Raw r, int i) {
    return i == 0 ? r.x : i == 1 ? r.y : i == 2 ? r.z : r.w;
  }
  __device__ static void Set(Raw& r, int i, float v) {
    (i == 0 ? r.x : i == 1 ? r.y : i == 2 ? r.z : r.w) = v;
  }
  __device__ static void Pack(Raw a, float (&w)[4]) {
    w[0] = a.x;
    w[1] = a.y;
    w[2] = a.z;
    w[3] = a.w;
  }
  __device__ static void Unpack(const float (&w)[4], Raw& a) {
    a = make_float4(w[0], w[1], w[2], w[3]);
  }
};

// Pixels x .. x+3 of `row` (null: a row outside the image), outside pixels = border.
template <typename T>
__device__ __forceinline__ typename Quad<T>::Raw LoadQuad(const T* row, int x, int width, T border,
                                                          bool vector) {
  using Q = Quad<T>;
  if (row == nullptr) return Q::Broadcast(border);
  if (vector) {
    // Rows and x are 4-pixel aligned: the quad is wholly inside or wholly outside.
    if (static_cast<unsigned>(x) >= static_cast<unsigned>(width)) return Q::Broadcast(border);
    return __ldg(reinterpret_cast<const typename Q::Raw*>(row + x));
  } else {
    typename Q::Raw r = Q::Broadcast(border);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (static_cast<unsigned>(x + i) < static_cast<unsigned>(width))
        Q::Set(r, i, __ldg(row + x + i));
    }
    return r;
  }
}

template <typename T>
__device__ __forceinline__ void StoreQuad(T* row, int x, int width, typename Quad<T>::Raw r,
                                          bool vector) {
  if (vector) {
    if (x < width) *reinterpret_cast<typename Quad<T>::Raw*>(row + x) = r;
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if (x + i < width) row[x + i] = Quad<T>::Get(r, i);
    }
  }
}

// x = H_1(x) for two rows at once (two independent shuffle chains): each word takes the min/max
// of itself and its left and right neighbours, across lanes at the ends. The strip's outer
// columns become invalid one per step: the halo covers them.
template <typename T, bool kDilate>
__device__ __forceinline__ void ColumnStep(typename LaneOps<T>::Lane (&a)[4],
                                           typename LaneOps<T>::Lane (&b)[4]) {
  const auto a_left = __shfl_up_sync(0xFFFFFFFFu, a[3], 1);
  const auto b_left = __shfl_up_sync(0xFFFFFFFFu, b[3], 1);
  const auto a_right = __shfl_down_sync(0xFFFFFFFFu, a[0], 1);
  const auto b_right = __shfl_down_sync(0xFFFFFFFFu, b[0], 1);
  const auto a0 = LaneCombine3<T, kDilate>(a_left, a[0], a[1]);
  const auto b0 = LaneCombine3<T, kDilate>(b_left, b[0], b[1]);
  const auto a1 = LaneCombine3<T, kDilate>(a[0], a[1], a[2]);
  const auto b1 = LaneCombine3<T, kDilate>(b[0], b[1], b[2]);
  const auto a2 = LaneCombine3<T, kDilate>(a[1], a[2], a[3]);
  const auto b2 = LaneCombine3<T, kDilate>(b[1], b[2], b[3]);
  a[3] = LaneCombine3<T, kDilate>(a[2], a[3], a_right);
  b[3] = LaneCombine3<T, kDilate>(b[2], b[3], b_right);
  a[0] = a0;
  a[1] = a1;
  a[2] = a2;
  b[0] = b0;
  b[1] = b1;
  b[2] = b2;
}

// Column-step counts: NestedParams::steps at run time, or fixed at compile time for common
// elements, where every step loop unrolls (a run-time loop costs twice the steps' own work in
// loop control and register moves).
struct RuntimeSteps {
  static constexpr bool kStatic = false;
};
template <int kIndex>  // kCompiledNestedSteps[kIndex]
struct CompiledSteps {
  static constexpr bool kStatic = true;
  __device__ static constexpr int Get(int k) {
    constexpr CompiledNestedSteps kEntry = kCompiledNestedSteps[kIndex];
    return kEntry.steps[k];
  }
};

template <typename Steps, typename T, bool kDilate>
__device__ __forceinline__ void ColumnSteps(const NestedParams<T>& p, int k,
                                            typename LaneOps<T>::Lane (&a)[4],
                                            typename LaneOps<T>::Lane (&b)[4]) {
  if constexpr (Steps::kStatic) {
#pragma unroll
    for (int s = 0; s < kNestedMaxHalfWidth; ++s) {
      if (s < Steps::Get(k)) ColumnStep<T, kDilate>(a, b);
    }
  } else {
#pragma unroll 1
    for (int s = 0; s < p.steps[k]; ++s) ColumnStep<T, kDilate>(a, b);
  }
}

// One lane's view of a plane: per pack lane, the source pixels (one slice, or the pair
// z - dz, z + dz) and the output, null where the slice is outside the volume.
template <typename T, int kSources>
struct LaneView {
  static constexpr int P = LaneOps<T>::kPack;
  const T* src[P][kSources];
  T* dst[P];
  int row_offset[P];
};

template <typename T, int kSources>
struct PendingRow {
  typename Quad<T>::Raw raw[LaneOps<T>::kPack][kSources];
};

// What a pair pass folds into: the output quads of one row, loaded two rows ahead like the
// sources (loaded when stored, their latency stalled every row).
// kAligned: the caller guarantees p.vector (the compiled-steps kernels), no scalar path.
template <typename T, int kSources, bool kAligned>
__device__ __forceinline__ PendingRow<T, 1> LoadOld(const NestedParams<T>& p,
                                                    const LaneView<T, kSources>& v, int y, int x) {
  PendingRow<T, 1> r;
#pragma unroll
  for (int j = 0; j < LaneOps<T>::kPack; ++j) {
    const int row = y + v.row_offset[j];
    const bool inside = y < p.plane_rows && row < p.height && v.dst[j] != nullptr;
    r.raw[j][0] =
        LoadQuad<T>(inside ? v.dst[j] + static_cast<std::int64_t>(row) * p.width : nullptr, x,
                    p.width, p.border, kAligned || p.vector);
  }
  return r;
}

template <typename T, int kSources, bool kAligned>
__device__ __forceinline__ PendingRow<T, kSources> LoadRow(const NestedParams<T>& p,
                                                           const LaneView<T, kSources>& v, int y,
                                                           int x) {
  PendingRow<T, kSources> r;
#pragma unroll
  for (int j = 0; j < LaneOps<T>::kPack; ++j) {
    const int row = y + v.row_offset[j];
    const bool inside = static_cast<unsigned>(row) < static_cast<unsigned>(p.height);
    const std::int64_t offset = static_cast<std::int64_t>(row) * p.width;
#pragma unroll
    for (int k = 0; k < kSources; ++k) {
      r.raw[j][k] = LoadQuad<T>(inside && v.src[j][k] != nullptr ? v.src[j][k] + offset : nullptr,
                                x, p.width, p.border, kAligned || p.vector);
    }
  }
  return r;
}

// Packs a loaded row into words (a pair of sources folded).
template <typename T, bool kDilate, int kSources>
__device__ __forceinline__ void PackRow(const PendingRow<T, kSources>& r,
                                        typename LaneOps<T>::Lane (&w)[4]) {
  using Q = Quad<T>;
  typename LaneOps<T>::Lane v[kSources][4];
#pragma unroll
  for (int k = 0; k < kSources; ++k) {
    if constexpr (LaneOps<T>::kPack == 1) {
      Q::Pack(r.raw[0][k], v[k]);
    } else {
      Q::Pack(r.raw[0][k], r.raw[1][k], v[k]);
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    w[i] = kSources == 1 ? v[0][i] : LaneCombine<T, kDilate>(v[0][i], v[kSources - 1][i]);
  }
}

// Writes one output word row.
template <typename T, int kSources, bool kAligned>
__device__ __forceinline__ void StoreRow(const NestedParams<T>& p, const LaneView<T, kSources>& v,
                                         int y, int x, const typename LaneOps<T>::Lane (&acc)[4]) {
  using Q = Quad<T>;
  constexpr int P = LaneOps<T>::kPack;
  typename Q::Raw result[P];
  if constexpr (P == 1) {
    Q::Unpack(acc, result[0]);
  } else {
    Q::Unpack(acc, result[0], result[1]);
  }
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int row = y + v.row_offset[j];
    if (v.dst[j] == nullptr || row >= p.height) continue;
    StoreQuad<T>(v.dst[j] + static_cast<std::int64_t>(row) * p.width, x, p.width, result[j],
                 kAligned || p.vector);
  }
}

// kSources 1: a section at dz = 0 (written); 2: the sections at +-dz (folded into the output).
// kPoints (with kSources 1): slices z +- point_dz join the result unfiltered.
// Blocks per SM the compiler must fit (0: its choice). The kernel is latency-bound (ncu: 6.3
// cycles between issues at 16 warps per SM, 512x512x300 u8 9x9 disk): u8 write passes of radius
// <= 4 with compiled steps fit 96 registers without spilling, five blocks instead of four
// (126.1 -> 119.4 us). 16-bit and f32 ones would spill (i16 129.9 -> 133.9 us); and any explicit
// minimum, even 1, changes the compiler's register choice (the ball's passes got slower).
template <typename T, int kR, int kSources, bool kPoints, typename Steps>
constexpr int kMinBlocksPerSm = (sizeof(T) == 1 && kR <= 4 && kSources == 1 && !kPoints &&
                                 Steps::kStatic)
                                    ? 5
                                    : 0;

template <typename T, bool kDilate, int kR, int kSources, bool kPoints, typename Steps>
__global__ void __launch_bounds__(kThreadsPerBlock,
                                  kMinBlocksPerSm<T, kR, kSources, kPoints, Steps>)
    NestedRowsKernel(const __grid_constant__ NestedParams<T> p) {
  using Ops = LaneOps<T>;
  using Lane = typename Ops::Lane;
  constexpr int P = Ops::kPack;
  // Compiled steps run only on 4-pixel-aligned rows (the launcher sends the others to the
  // run-time kernel): no scalar load/store path in their loop.
  constexpr bool kAligned = Steps::kStatic;
  const long long warp = (static_cast<long long>(blockIdx.x) * kThreadsPerBlock + threadIdx.x) >> 5;
  if (warp >= p.warps) return;  // whole warps: the shuffles stay full
  const int lane = threadIdx.x & 31;
  const int strip = static_cast<int>(warp % p.strips);
  const long long rest = warp / p.strips;
  const int band = static_cast<int>(rest % p.bands);
  const int plane = static_cast<int>(rest / p.bands);
  const int strip_x = strip * p.strip_width;
  const int x = strip_x - p.halo + kColumnsPerLane * lane;
  const int y_begin = band * p.band_rows;
  const int y_end = min(y_begin + p.band_rows, p.plane_rows);
  const bool writer = x >= strip_x && x < strip_x + p.strip_width;

  LaneView<T, kSources> v;
  LaneView<T, 2> points;  // kPoints: slices z - point_dz, z + point_dz
  const std::int64_t slice_pixels = static_cast<std::int64_t>(p.width) * p.height;
#pragma unroll
  for (int j = 0; j < P; ++j) {
    const int z = plane * p.slice_step + j * p.lane_slice;
    v.row_offset[j] = j * p.lane_rows;
    if constexpr (kPoints) {
      points.row_offset[j] = v.row_offset[j];
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const int zs = k == 0 ? z - p.point_dz : z + p.point_dz;
        points.src[j][k] = zs >= 0 && zs < p.depth ? p.in + zs * slice_pixels : nullptr;
      }
    }
#pragma unroll
    for (int k = 0; k < kSources; ++k) {
      const int zs = kSources == 1 ? z : (k == 0 ? z - p.dz : z + p.dz);
      v.src[j][k] = zs >= 0 && zs < p.depth ? p.in + zs * slice_pixels : nullptr;
    }
    v.dst[j] = writer && z < p.depth ? p.out + z * slice_pixels : nullptr;
  }

  // Output rows go in pairs (two independent chains of column steps). Rows wait in a ring that
  // shifts by four slots every two pairs: within those every index is static (registers), and
  // the shift costs 2R word moves per four rows.
  Lane ring[2 * kR + 4][4];
#pragma unroll
  for (int s = 0; s < 2 * kR; ++s) {
    PackRow<T, kDilate, kSources>(LoadRow<T, kSources, kAligned>(p, v, y_begin - kR + s, x),
                                  ring[s]);
  }
  PendingRow<T, kSources> next0 = LoadRow<T, kSources, kAligned>(p, v, y_begin + kR, x);
  PendingRow<T, kSources> next1 = LoadRow<T, kSources, kAligned>(p, v, y_begin + kR + 1, x);
  PendingRow<T, 1> old0{}, old1{};  // kSources 2: what the earlier passes wrote to rows y, y + 1
  PendingRow<T, 2> point0{}, point1{};
  if (writer) {
    if constexpr (kSources == 2) {
      old0 = LoadOld<T, kSources, kAligned>(p, v, y_begin, x);
      old1 = LoadOld<T, kSources, kAligned>(p, v, y_begin + 1, x);
    }
    if constexpr (kPoints) {
      point0 = LoadRow<T, 2, kAligned>(p, points, y_begin, x);
      point1 = LoadRow<T, 2, kAligned>(p, points, y_begin + 1, x);
    }
  }

  for (int y0 = y_begin; y0 < y_end; y0 += 4) {
    // Slot s holds row y0 - R + s.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int y = y0 + 2 * h;
      if (y >= y_end) break;
      PackRow<T, kDilate, kSources>(next0, ring[2 * h + 2 * kR]);
      PackRow<T, kDilate, kSources>(next1, ring[2 * h + 2 * kR + 1]);
      // Folded into rows y, y + 1 as words: what earlier passes wrote, or the point slices.
      Lane at0[4], at1[4];
      if constexpr (kSources == 2) {
        PackRow<T, kDilate, 1>(old0, at0);
        PackRow<T, kDilate, 1>(old1, at1);
      }
      if constexpr (kPoints) {
        PackRow<T, kDilate, 2>(point0, at0);
        PackRow<T, kDilate, 2>(point1, at1);
      }
      if (y + 2 < y_end) {
        next0 = LoadRow<T, kSources, kAligned>(p, v, y + kR + 2, x);
        next1 = LoadRow<T, kSources, kAligned>(p, v, y + kR + 3, x);
        if (writer) {
          if constexpr (kSources == 2) {
            old0 = LoadOld<T, kSources, kAligned>(p, v, y + 2, x);
            old1 = LoadOld<T, kSources, kAligned>(p, v, y + 3, x);
          }
          if constexpr (kPoints) {
            point0 = LoadRow<T, 2, kAligned>(p, points, y + 2, x);
            point1 = LoadRow<T, 2, kAligned>(p, points, y + 3, x);
          }
        }
      }
      // a, b: rows y, y + 1. Rows +-k fold in after the column steps down to u_k: since H
      // contains its centre, V_(k-1) is already inside H(X_(k-1)), so X_k = H(X_(k-1)) op rows +-k.
      Lane a[4], b[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        a[c] = ring[2 * h + kR][c];
        b[c] = ring[2 * h + kR + 1][c];
      }
#pragma unroll
      for (int k = 1; k <= kR; ++k) {
        ColumnSteps<Steps, T, kDilate>(p, k, a, b);
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          a[c] = LaneCombine3<T, kDilate>(a[c], ring[2 * h + kR - k][c], ring[2 * h + kR + k][c]);
          b[c] = LaneCombine3<T, kDilate>(b[c], ring[2 * h + kR + 1 - k][c],
                                          ring[2 * h + kR + 1 + k][c]);
        }
      }
      ColumnSteps<Steps, T, kDilate>(p, 0, a, b);
      if constexpr (kSources == 2 || kPoints) {
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          a[c] = LaneCombine<T, kDilate>(a[c], at0[c]);
          b[c] = LaneCombine<T, kDilate>(b[c], at1[c]);
        }
      }
      if (writer) {
        StoreRow<T, kSources, kAligned>(p, v, y, x, a);
        if (y + 1 < y_end) StoreRow<T, kSources, kAligned>(p, v, y + 1, x, b);
      }
    }
#pragma unroll
    for (int s = 0; s < 2 * kR; ++s) {
#pragma unroll
      for (int c = 0; c < 4; ++c) ring[s][c] = ring[s + 4][c];
    }
  }
}

template <typename T, bool kDilate, int kR, int kSources, bool kPoints, typename Steps>
absl::Status LaunchKernel(const NestedParams<T>& p, cudaStream_t stream) {
  const long long blocks = (p.warps * 32 + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks > 0x7FFFFFFFLL)
    return absl::InvalidArgumentError("image too large for the nested-rows kernel");
  NestedRowsKernel<T, kDilate, kR, kSources, kPoints, Steps>
      <<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(p);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "NestedRowsKernel");
  return absl::OkStatus();
}

// Launches the pass with kCompiledNestedSteps[index] (morphology_nested_compiled.cu).
template <typename T>
absl::Status LaunchCompiled(const NestedParams<T>& p, int index, bool dilate, cudaStream_t stream);

}  // namespace cuimg::internal::nested

#endif  // CUIMG_KERNELS_SRC_MORPHOLOGY_NESTED_CUH_
