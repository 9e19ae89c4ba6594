// The vocabulary of the GPU reconstruction's bricks (reconstruction_tile.h runs one): the image is
// cut into bricks of 32 x 32 pixels (2D) or 32 x 8 x 4 voxels (3D), each converged by one warp in
// turn; values as keys; what a brick reads and writes; which neighbouring bricks a change reaches;
// and the GPU's warp policy.
//
// The brick code is written once against a warp policy W so that the same code runs on the GPU
// (DeviceWarp: a lane per thread, shuffles) and on the host (HostWarp: 32 lanes as arrays), where
// CI tests it without a device (ReconstructionPlan::EmulateOnHost).
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

namespace cuimg::seg {

inline constexpr int kBrickWidth = 32;  // pixels along x: one per lane
// Pixel and brick indices: 32-bit, so that the rows' addresses a lane computes cost a register each
// (ReconstructionPlan takes images of fewer than 2^31 - 64 pixels).
using BrickIndex = std::int32_t;
inline constexpr int kBrickRows = 32;  // rows (y, z) of a brick
// A brick in shared memory (reconstruction_tile.h): rows of 33 keys, so that the 32 lanes reading
// one column hit distinct banks.
inline constexpr int kTilePitch = kBrickWidth + 1;
inline constexpr int kTileKeys = kBrickRows * kTilePitch;

// A brick's 32 rows: kRowsY rows along y in each of kRowsZ slices (32 x 32 pixels, 32 x 8 x 4
// voxels).
template <bool kVolume>
struct BrickShape {
  static constexpr int kRowsY = kVolume ? 8 : 32;
  static constexpr int kRowsZ = kVolume ? 4 : 1;
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

// The row v with its left and right neighbours folded in (shuffles: a lane at the brick's edge
// sees itself; what lies beyond the brick came in as the seed).
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W>
CUIMG_BRICK_HD typename W::V WithSides(const typename W::V& v) {
  return W::Max(v, W::Max(W::ShflUp(v, 1), W::ShflDown(v, 1)));
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
  // fn(lane) in each lane.
  template <typename F>
  static __device__ __forceinline__ B LaneWhere(F fn) {
    return fn(Lane());
  }
  static __device__ __forceinline__ B And(B a, bool b) { return a && b; }
  static __device__ __forceinline__ B And2(B a, B b) { return a && b; }
  static __device__ __forceinline__ B Or(B a, B b) { return a || b; }
  static __device__ __forceinline__ U OrU(U a, U b) { return a | b; }
  static __device__ __forceinline__ B TestBit(U u, int j) { return (u >> j) & 1u; }
  static __device__ __forceinline__ B AnyBits(U u, std::uint32_t mask) { return (u & mask) != 0; }
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
  // p[index(lane)] as a key where `in`, else `fallback`.
  template <typename T, typename F>
  static __device__ __forceinline__ V LoadEach(const T* p, F index, B in, bool flip, V fallback) {
    return in ? KeyTraits<T>::ToKey(p[index(Lane())], flip) : fallback;
  }
  // Lane `lane`'s word, in every lane.
  static __device__ __forceinline__ std::uint32_t Broadcast(U u, int lane) {
    return __shfl_sync(~0u, u, lane);
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
};
#endif

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_BRICK_H_
