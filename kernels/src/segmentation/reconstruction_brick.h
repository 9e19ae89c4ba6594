// One brick of the GPU reconstruction (reconstruction.cu): a warp loads 32 x 32 pixels (2D) or
// 32 x 8 x 4 voxels (3D) into registers, one column (2D) or one (x) position of 32 rows per lane,
// takes what its neighbours outside the brick offer, propagates inside the brick until nothing
// moves, writes back what changed and says which neighbouring bricks must run again.
//
// Written once against a warp policy W so that the same code runs on the GPU (DeviceWarp: a lane
// per thread, shuffles) and on the host (HostWarp: 32 lanes as arrays), where CI tests it without
// a device (ReconstructionPlan::EmulateOnHost).
//
// Values are handled as keys in which the reconstruction is always a dilation: erosion flips the
// order (KeyTraits), and NaN is the lowest key (the rule of reconstruction_rules.h: nothing
// propagates through or from it).
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_BRICK_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_BRICK_H_

#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__CUDACC__)
#define CUIMG_BRICK_HD __host__ __device__ __forceinline__
// The brick code is host-and-device code instantiated with a device-only or a host-only policy.
#define CUIMG_BRICK_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
#else
#define CUIMG_BRICK_HD inline
#define CUIMG_BRICK_EXEC_CHECK_DISABLE
#endif
#if defined(__CUDA_ARCH__)
#define CUIMG_BRICK_UNROLL _Pragma("unroll")
#else
#define CUIMG_BRICK_UNROLL
#endif

namespace cuimg::seg {

inline constexpr int kBrickWidth = 32;  // pixels along x: one per lane
// Pixel and brick indices: 32-bit, so that the 32 rows' addresses a lane keeps cost a register each
// (ReconstructionPlan takes images of fewer than 2^31 - 64 pixels).
using BrickIndex = std::int32_t;
inline constexpr int kBrickRows = 32;  // rows (y, z) a lane holds
// A brick in shared memory (reconstruction_tile.h): rows of 33 keys, so that the 32 lanes reading
// one column hit distinct banks.
inline constexpr int kTilePitch = kBrickWidth + 1;
inline constexpr int kTileKeys = kBrickRows * kTilePitch;

// A brick's 32 rows: kRowsY rows along y in each of kRowsZ slices. `rows_z` (a volume's slices
// a brick) is the plan's; 4 unless tuned (ReconstructionTuning).
template <bool kVolume, int kRowsZ_ = kVolume ? 4 : 1>
struct BrickShape {
  static_assert(kVolume ? (kRowsZ_ >= 2 && kBrickRows % kRowsZ_ == 0) : kRowsZ_ == 1);
  static constexpr int kRowsY = kBrickRows / kRowsZ_;
  static constexpr int kRowsZ = kRowsZ_;
};

// Pixels as keys: int32 for the 8- and 16-bit types, uint32 for u32, float for f32. `flip`
// (reconstruction by erosion) reverses the order with an involution (max + lowest - v, ~v, -v).
template <typename T>
struct KeyTraits {
  using K = std::conditional_t<
      std::is_floating_point_v<T>, float,
      std::conditional_t<std::is_same_v<T, std::uint32_t>, std::uint32_t, std::int32_t>>;

  // The key that never propagates: the worst value of either order, and NaN.
  static CUIMG_BRICK_HD K Lowest() {
    if constexpr (std::is_floating_point_v<T>) {
      return -std::numeric_limits<float>::infinity();
    } else {
      return static_cast<K>(std::numeric_limits<T>::lowest());
    }
  }
  static CUIMG_BRICK_HD K ToKey(T v, bool flip) {
    if constexpr (std::is_floating_point_v<T>) {
      if (v != v) return Lowest();
      return flip ? -v : v;
    } else if constexpr (std::is_same_v<T, std::uint32_t>) {
      return flip ? ~v : v;
    } else {
      const K k = v;
      return flip ? static_cast<K>(FlipSum() - k) : k;
    }
  }
  static CUIMG_BRICK_HD T FromKey(K k, bool flip) {
    if constexpr (std::is_floating_point_v<T>) {
      return flip ? -k : k;
    } else if constexpr (std::is_same_v<T, std::uint32_t>) {
      return flip ? ~k : k;
    } else {
      return static_cast<T>(flip ? FlipSum() - k : k);
    }
  }

 private:
  // max + lowest: max + lowest - v maps the type's range onto itself in reverse.
  static constexpr CUIMG_BRICK_HD std::int64_t FlipSum() {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<std::int64_t>(std::numeric_limits<T>::max()) +
             static_cast<std::int64_t>(std::numeric_limits<T>::lowest());
    } else {
      return 0;
    }
  }
};

// What a brick reads and writes: the mask and the working image r (the marker on entry, the
// reconstruction once every brick is quiet), both x fastest.
template <typename T>
struct BrickArgs {
  const T* mask = nullptr;
  T* r = nullptr;
  BrickIndex width = 0, height = 0, depth = 0;
  BrickIndex bricks_x = 0, bricks_y = 0, bricks_z = 0;
  int max_nonzero = 1;  // connectivity: offsets with at most this many non-zero coordinates
  bool flip = false;    // reconstruction by erosion
};

// Bit of the neighbouring brick (sx, sy, sz) in a brick's 27-bit activation mask.
CUIMG_BRICK_HD std::uint32_t NeighbourBit(int sx, int sy, int sz) {
  return 1u << ((sz + 1) * 9 + (sy + 1) * 3 + (sx + 1));
}

// Calls sink(index) for each brick of `mask` that exists (the brick grid does not wrap).
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <typename T, typename Sink>
CUIMG_BRICK_HD void ForEachMarkedBrick(const BrickArgs<T>& a, BrickIndex brick, std::uint32_t mask,
                                       Sink&& sink) {
  const BrickIndex bx = brick % a.bricks_x;
  const BrickIndex by = (brick / a.bricks_x) % a.bricks_y;
  const BrickIndex bz = brick / (a.bricks_x * a.bricks_y);
  while (mask != 0) {
    int bit = 0;
    while (((mask >> bit) & 1u) == 0) ++bit;
    mask &= mask - 1;
    const BrickIndex nx = bx + bit % 3 - 1;
    const BrickIndex ny = by + bit / 3 % 3 - 1;
    const BrickIndex nz = bz + bit / 9 - 1;
    if (nx < 0 || ny < 0 || nz < 0 || nx >= a.bricks_x || ny >= a.bricks_y || nz >= a.bricks_z) {
      continue;
    }
    sink((nz * a.bricks_y + ny) * a.bricks_x + nx);
  }
}

// r = max(r, c), noting a rise of row j in `changed` (since the brick was loaded) and `fresh`
// (since the last look).
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W>
CUIMG_BRICK_HD void Raise(typename W::V& r, const typename W::V& c, int j, typename W::U& changed,
                          typename W::U& fresh) {
  const typename W::U bit = W::SelectU(W::Greater(c, r), 1u << j, 0u);
  r = W::Max(r, c);
  changed = W::OrU(changed, bit);
  fresh = W::OrU(fresh, bit);
}

// The row v with its left and right neighbours folded in (shuffles: a lane at the brick's edge
// sees itself; what lies beyond the brick came in as the seed).
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W>
CUIMG_BRICK_HD typename W::V WithSides(const typename W::V& v) {
  return W::Max(v, W::Max(W::ShflUp(v, 1), W::ShflDown(v, 1)));
}

// The best of slice zs's rows yl - 1, yl, yl + 1 (and their x neighbours) that connect to
// (yl) of the next or previous slice.
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W, int kRowsY>
CUIMG_BRICK_HD typename W::V FromSlice(const typename W::V* r, int zs, int yl, int max_nonzero,
                                       const typename W::V& lowest) {
  typename W::V n = lowest;
  CUIMG_BRICK_UNROLL
  for (int dy = -1; dy <= 1; ++dy) {
    if (yl + dy < 0 || yl + dy >= kRowsY) continue;
    const int nonzero = 1 + (dy != 0);
    if (nonzero > max_nonzero) continue;
    const typename W::V& v = r[zs * kRowsY + yl + dy];
    n = W::Max(n, nonzero + 1 <= max_nonzero ? WithSides<W>(v) : v);
  }
  return n;
}

// The brick `brick` once: returns the neighbouring bricks (NeighbourBit) that one of its changed
// pixels is connected to, which must run again. `first_run`: the brick has not converged before
// (round 0); later runs start from the brick's last fixed point, so only the rows that the
// neighbours' new values raise need their x scans (a row's scan depends on that row alone).
// `kRowsZ`: the brick's slices (BrickShape). `kScanGroup` rows are scanned along x together, their
// shuffle chains interleaved, when one of them needs it: a row at its fixed point along x scans
// to itself, and one row's chain alone leaves the warp waiting on each shuffle. `iterations` counts
// the passes until nothing moved.
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W, typename T, bool kVolume, int kRowsZ = BrickShape<kVolume>::kRowsZ,
          int kScanGroup = 1>
CUIMG_BRICK_HD std::uint32_t ProcessBrick(const BrickArgs<T>& a, BrickIndex brick, bool first_run,
                                          int& iterations) {
  static_assert(kBrickRows % kScanGroup == 0);
  using Keys = KeyTraits<T>;
  using V = typename W::V;
  using U = typename W::U;
  using B = typename W::B;
  constexpr int kRowsY = BrickShape<kVolume, kRowsZ>::kRowsY;
  const V lowest = W::Splat(Keys::Lowest());
  const BrickIndex x0 = brick % a.bricks_x * kBrickWidth;
  const BrickIndex y0 = (brick / a.bricks_x) % a.bricks_y * kRowsY;
  const BrickIndex z0 = brick / (a.bricks_x * a.bricks_y) * kRowsZ;
  // Lanes inside the image, and the edge lanes that read the columns beside the brick.
  const B x_in = W::LaneBelow(a.width - x0);
  const B left_in = W::And(W::LaneIs(0), x0 > 0);
  const B right_in = W::And(W::LaneIs(kBrickWidth - 1), x0 + kBrickWidth < a.width);
  auto row_valid = [&](BrickIndex y, BrickIndex z) {
    return y >= 0 && z >= 0 && y < a.height && z < a.depth;
  };
  // Index of the row's pixel at x0 (lane 0).
  auto row_base = [&](BrickIndex y, BrickIndex z) { return (z * a.height + y) * a.width + x0; };

  V r[kBrickRows];
  V g[kBrickRows];
  CUIMG_BRICK_UNROLL
  for (int j = 0; j < kBrickRows; ++j) {
    const BrickIndex y = y0 + j % kRowsY, z = z0 + j / kRowsY;
    const B in = W::And(x_in, row_valid(y, z));
    r[j] = W::template Load<T>(a.r, row_base(y, z), in, a.flip, lowest);
    g[j] = W::template Load<T>(a.mask, row_base(y, z), in, a.flip, lowest);
  }

  U changed = W::SplatU(0);
  U fresh = W::SplatU(0);

  // Seeds: each pixel takes min(best neighbour outside the brick, mask). Those neighbours do not
  // change while the brick converges (a neighbour that changes them marks this brick again).
  CUIMG_BRICK_UNROLL
  for (int j = 0; j < kBrickRows; ++j) {
    const int yl = j % kRowsY, zl = j / kRowsY;
    V n = lowest;
    CUIMG_BRICK_UNROLL
    for (int dz = kVolume ? -1 : 0; dz <= (kVolume ? 1 : 0); ++dz) {
      CUIMG_BRICK_UNROLL
      for (int dy = -1; dy <= 1; ++dy) {
        const int nonzero = (dy != 0) + (dz != 0);
        if (nonzero > a.max_nonzero) continue;
        const bool sides = nonzero + 1 <= a.max_nonzero;  // x +- 1 with this (dy, dz)
        const BrickIndex ty = y0 + yl + dy, tz = z0 + zl + dz;
        if (!row_valid(ty, tz)) continue;
        const BrickIndex base = row_base(ty, tz);
        const bool row_in_brick =
            yl + dy >= 0 && yl + dy < kRowsY && zl + dz >= 0 && zl + dz < kRowsZ;
        if (row_in_brick) {
          // Only the columns beside the brick are outside it.
          if (sides) {
            n = W::Max(n, W::Max(W::template Load<T>(a.r, base - 1, left_in, a.flip, lowest),
                                 W::template Load<T>(a.r, base + 1, right_in, a.flip, lowest)));
          }
          continue;
        }
        const V h = W::template Load<T>(a.r, base, x_in, a.flip, lowest);
        n = W::Max(n, h);
        if (sides) {
          const V left =
              W::Select(W::LaneIs(0), W::template Load<T>(a.r, base - 1, left_in, a.flip, lowest),
                        W::ShflUp(h, 1));
          const V right = W::Select(W::LaneIs(kBrickWidth - 1),
                                    W::template Load<T>(a.r, base + 1, right_in, a.flip, lowest),
                                    W::ShflDown(h, 1));
          n = W::Max(n, W::Max(left, right));
        }
      }
    }
    Raise<W>(r[j], W::Min(n, g[j]), j, changed, fresh);
  }

  const bool diagonal_in_plane = a.max_nonzero >= 2;
  // Rows whose x scan may change them: every row the first time, else those risen since their
  // last scan. The loop ends after a pass in which nothing rose.
  for (std::uint32_t dirty = first_run ? ~0u : W::ReduceOr(fresh); dirty != 0;
       dirty = W::ReduceOr(fresh)) {
    fresh = W::SplatU(0);
    ++iterations;
    // Along x: the recurrence r_x = max(r_x, min(g_x, r_{x-1})) is the composition of the maps
    // v -> max(b, min(c, v)), closed under composition, so a warp scan solves a row each way.
    CUIMG_BRICK_UNROLL
    for (int j0 = 0; j0 < kBrickRows; j0 += kScanGroup) {
      constexpr std::uint32_t kGroupBits = kScanGroup == kBrickRows ? ~0u : (1u << kScanGroup) - 1u;
      if (((dirty >> j0) & kGroupBits) == 0) continue;
      V b[kScanGroup], c[kScanGroup];
      CUIMG_BRICK_UNROLL
      for (int k = 0; k < kScanGroup; ++k) {
        b[k] = r[j0 + k];
        c[k] = g[j0 + k];
      }
      CUIMG_BRICK_UNROLL
      for (int d = 1; d < kBrickWidth; d *= 2) {
        CUIMG_BRICK_UNROLL
        for (int k = 0; k < kScanGroup; ++k) {
          // Lanes < d get their own values: a no-op.
          const V bp = W::ShflUp(b[k], d), cp = W::ShflUp(c[k], d);
          b[k] = W::Max(b[k], W::Min(c[k], bp));
          c[k] = W::Min(c[k], cp);
        }
      }
      CUIMG_BRICK_UNROLL
      for (int k = 0; k < kScanGroup; ++k) c[k] = g[j0 + k];
      CUIMG_BRICK_UNROLL
      for (int d = 1; d < kBrickWidth; d *= 2) {
        CUIMG_BRICK_UNROLL
        for (int k = 0; k < kScanGroup; ++k) {
          const V bp = W::ShflDown(b[k], d), cp = W::ShflDown(c[k], d);
          b[k] = W::Max(b[k], W::Min(c[k], bp));
          c[k] = W::Min(c[k], cp);
        }
      }
      CUIMG_BRICK_UNROLL
      for (int k = 0; k < kScanGroup; ++k) Raise<W>(r[j0 + k], b[k], j0 + k, changed, fresh);
    }
    // Along y, down then up, each slice: the row before with its diagonal neighbours.
    CUIMG_BRICK_UNROLL
    for (int zl = 0; zl < kRowsZ; ++zl) {
      CUIMG_BRICK_UNROLL
      for (int yl = 1; yl < kRowsY; ++yl) {
        const int j = zl * kRowsY + yl;
        const V n = diagonal_in_plane ? WithSides<W>(r[j - 1]) : r[j - 1];
        Raise<W>(r[j], W::Min(n, g[j]), j, changed, fresh);
      }
      CUIMG_BRICK_UNROLL
      for (int yl = kRowsY - 2; yl >= 0; --yl) {
        const int j = zl * kRowsY + yl;
        const V n = diagonal_in_plane ? WithSides<W>(r[j + 1]) : r[j + 1];
        Raise<W>(r[j], W::Min(n, g[j]), j, changed, fresh);
      }
    }
    // Along z, forward then back: the slice before's rows y - 1, y, y + 1 as connected.
    if constexpr (kVolume) {
      CUIMG_BRICK_UNROLL
      for (int zl = 1; zl < kRowsZ; ++zl) {
        CUIMG_BRICK_UNROLL
        for (int yl = 0; yl < kRowsY; ++yl) {
          const int j = zl * kRowsY + yl;
          const V n = FromSlice<W, kRowsY>(r, zl - 1, yl, a.max_nonzero, lowest);
          Raise<W>(r[j], W::Min(n, g[j]), j, changed, fresh);
        }
      }
      CUIMG_BRICK_UNROLL
      for (int zl = kRowsZ - 2; zl >= 0; --zl) {
        CUIMG_BRICK_UNROLL
        for (int yl = 0; yl < kRowsY; ++yl) {
          const int j = zl * kRowsY + yl;
          const V n = FromSlice<W, kRowsY>(r, zl + 1, yl, a.max_nonzero, lowest);
          Raise<W>(r[j], W::Min(n, g[j]), j, changed, fresh);
        }
      }
    }
  }

  // Write back what changed; collect the neighbouring bricks a changed pixel is connected to.
  U marks = W::SplatU(0);
  CUIMG_BRICK_UNROLL
  for (int j = 0; j < kBrickRows; ++j) {
    const int yl = j % kRowsY, zl = j / kRowsY;
    const B ch = W::TestBit(changed, j);
    const BrickIndex y = y0 + yl, z = z0 + zl;
    if (row_valid(y, z)) {
      W::template Store<T>(a.r, row_base(y, z), r[j], W::And2(ch, x_in), a.flip);
    }
    CUIMG_BRICK_UNROLL
    for (int sz = kVolume ? -1 : 0; sz <= (kVolume ? 1 : 0); ++sz) {
      if ((sz == -1 && zl != 0) || (sz == 1 && zl != kRowsZ - 1)) continue;
      CUIMG_BRICK_UNROLL
      for (int sy = -1; sy <= 1; ++sy) {
        if ((sy == -1 && yl != 0) || (sy == 1 && yl != kRowsY - 1)) continue;
        CUIMG_BRICK_UNROLL
        for (int sx = -1; sx <= 1; ++sx) {
          const int nonzero = (sx != 0) + (sy != 0) + (sz != 0);
          if (nonzero == 0 || nonzero > a.max_nonzero) continue;
          const B at = sx == 0 ? ch : W::And2(ch, W::LaneIs(sx < 0 ? 0 : kBrickWidth - 1));
          marks = W::OrU(marks, W::SelectU(at, NeighbourBit(sx, sy, sz), 0u));
        }
      }
    }
  }
  return W::ReduceOr(marks);
}

#if defined(__CUDACC__)
// The GPU policy: one lane per thread of a full warp.
template <typename K>
struct DeviceWarp {
  using Key = K;
  using V = K;
  using U = std::uint32_t;
  using B = bool;
  static __device__ __forceinline__ int Lane() { return threadIdx.x & 31; }
  static __device__ __forceinline__ V Splat(K k) { return k; }
  static __device__ __forceinline__ U SplatU(std::uint32_t u) { return u; }
  static __device__ __forceinline__ B SplatB(bool b) { return b; }
  static __device__ __forceinline__ B LaneIs(int lane) { return Lane() == lane; }
  static __device__ __forceinline__ B LaneBelow(BrickIndex n) { return Lane() < n; }
  static __device__ __forceinline__ B And(B a, bool b) { return a && b; }
  static __device__ __forceinline__ B And2(B a, B b) { return a && b; }
  static __device__ __forceinline__ B Or(B a, B b) { return a || b; }
  static __device__ __forceinline__ U OrU(U a, U b) { return a | b; }
  static __device__ __forceinline__ B TestBit(U u, int j) { return (u >> j) & 1u; }
  static __device__ __forceinline__ V Max(V a, V b) { return a < b ? b : a; }
  static __device__ __forceinline__ V Min(V a, V b) { return b < a ? b : a; }
  static __device__ __forceinline__ B Greater(V a, V b) { return b < a; }
  static __device__ __forceinline__ V Select(B c, V a, V b) { return c ? a : b; }
  static __device__ __forceinline__ U SelectU(B c, U a, U b) { return c ? a : b; }
  static __device__ __forceinline__ V ShflUp(V v, int d) { return __shfl_up_sync(~0u, v, d); }
  static __device__ __forceinline__ V ShflDown(V v, int d) { return __shfl_down_sync(~0u, v, d); }
  static __device__ __forceinline__ bool Any(B b) { return __any_sync(~0u, b); }
  static __device__ __forceinline__ std::uint32_t ReduceOr(U u) { return __reduce_or_sync(~0u, u); }
  // p[base + lane] as a key where `in`, else `fallback`.
  template <typename T>
  static __device__ __forceinline__ V Load(const T* p, BrickIndex base, B in, bool flip,
                                           V fallback) {
    return in ? KeyTraits<T>::ToKey(p[base + Lane()], flip) : fallback;
  }
  template <typename T>
  static __device__ __forceinline__ void Store(T* p, BrickIndex base, V k, B in, bool flip) {
    if (in) p[base + Lane()] = KeyTraits<T>::FromKey(k, flip);
  }
  // A tile of kBrickRows rows of kTilePitch keys (reconstruction_tile.h): row j's pixel x at
  // j * kTilePitch + x. Row access gives lane x pixel x; column access gives lane j row j.
  static __device__ __forceinline__ V LoadRow(const K* s, int j) {
    return s[j * kTilePitch + Lane()];
  }
  static __device__ __forceinline__ void StoreRow(K* s, int j, V v, B where) {
    if (where) s[j * kTilePitch + Lane()] = v;
  }
  static __device__ __forceinline__ V LoadCol(const K* s, int x) {
    return s[Lane() * kTilePitch + x];
  }
  static __device__ __forceinline__ void StoreCol(K* s, int x, V v, B where) {
    if (where) s[Lane() * kTilePitch + x] = v;
  }
  static __device__ __forceinline__ void Sync() { __syncwarp(); }
  // The 32 x 32 bit matrix (lane i, bit k) transposed: lane k, bit i.
  static __device__ __forceinline__ U TransposeBits(U m) {
    U out = 0;
#pragma unroll 8
    for (int k = 0; k < 32; ++k) {
      const U column = __ballot_sync(~0u, (m >> k) & 1u);
      if (Lane() == k) out = column;
    }
    return out;
  }
};
#endif

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_BRICK_H_
