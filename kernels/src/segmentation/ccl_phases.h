// The union-find of connected-component labelling, per thread, compiled for the GPU
// (ccl_device.cuh's kernels call these between their barriers) and for the host (a test runs the
// threads of each phase one after another, which is one of the interleavings the GPU may take).
//
// Roots are the smallest raster index of their component (so that numbering roots in raster
// order numbers components as scipy.ndimage.label does). The links live in one U32 array L of the
// image's size: L[p] = kBackground outside the set, L[p] < p for a pixel whose parent is L[p],
// L[p] >= p for a root. Roots start as L[r] = r; later phases store more in a root's entry while
// keeping it >= r: a voxel count (r + count), a mark (r | kMark) or a number (kMark | k). A link
// only ever points to a smaller index in the same component, so any value read, however stale,
// is a valid ancestor: finds may race with unions and compressions (see Union).
//
// Phases: each tile is labelled in shared memory (LocalLoad, LocalUnite, LocalWrite), which
// writes per pixel the tile-local root; tiles are joined across their faces with atomicMin
// unions (MergePixels, which reads the set from the input); every pixel is pointed at its root
// (FindCompress). Tiles are 32x32 pixels in 2D and 32x8x8 voxels in 3D, 256 threads each.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_CCL_PHASES_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_CCL_PHASES_H_

#include <cstdint>

#include "segmentation/segmentation_math.h"

namespace cuimg::seg {

inline constexpr std::uint32_t kBackground = 0xffffffffu;
inline constexpr std::uint32_t kMark = 0x80000000u;
inline constexpr int kTileThreads = 256;
// Pixels a segment kernel's block covers (16 consecutive pixels a thread).
inline constexpr int kSegmentPixels = 4096;
inline constexpr int kPixelsPerThread = kSegmentPixels / kTileThreads;

CUIMG_SEG_HD constexpr bool IsVolume(Connectivity c) {
  return c == Connectivity::k6 || c == Connectivity::k18 || c == Connectivity::k26;
}

template <Connectivity C>
struct TileShape {
  static constexpr int kX = 32;
  static constexpr int kY = IsVolume(C) ? 8 : 32;
  static constexpr int kZ = IsVolume(C) ? 8 : 1;
  static constexpr int kPixels = kX * kY * kZ;
  static constexpr int kPerThread = kPixels / kTileThreads;
};

// The image and its tiling, as the kernels index it.
struct Geometry {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint32_t depth = 0;
  std::uint32_t tiles_x = 0;
  std::uint32_t tiles_y = 0;
  std::uint32_t pixels = 0;
};

// Loads of entries that other threads change within a kernel: coherent in L2 for global memory;
// for shared memory (kShared) an atomic that changes nothing, so that every access to a tile's
// links while threads unite is atomic (no data race for racecheck to report, nothing kept in
// registers).
template <bool kShared>
CUIMG_SEG_HD std::uint32_t Load(const std::uint32_t* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (kShared) {
    return atomicOr(const_cast<std::uint32_t*>(p), 0u);
  } else {
    return __ldcg(p);
  }
#else
  return *p;
#endif
}
CUIMG_SEG_HD std::uint32_t Ld(const std::uint32_t* p) { return Load<false>(p); }

// atomicMin; the old value.
CUIMG_SEG_HD std::uint32_t AtomicMin(std::uint32_t* p, std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicMin(p, v);
#else
  const std::uint32_t old = *p;
  if (v < old) *p = v;
  return old;
#endif
}

// atomicOr (the host: one thread at a time).
CUIMG_SEG_HD void AtomicOr(std::uint32_t* p, std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  atomicOr(p, v);
#else
  *p |= v;
#endif
}

// The root of x, halving the path on the way: an entry is only ever replaced by its parent's
// parent, never through a root (whose entry may carry a count or a mark), and by atomicMin, so
// that every entry only decreases: a thread that stores its pixel's root (the smallest value
// in the component) is never overwritten by a halving that read the entry before.
template <bool kShared = false>
CUIMG_SEG_HD std::uint32_t FindCompress(std::uint32_t* labels, std::uint32_t x) {
  for (;;) {
    const std::uint32_t y = Load<kShared>(labels + x);
    if (y >= x) return x;
    const std::uint32_t z = Load<kShared>(labels + y);
    if (z >= y) return y;
    AtomicMin(labels + x, z);
    x = z;
  }
}

// The root of x without writing (for phases where other threads may mark roots).
CUIMG_SEG_HD std::uint32_t FindRoot(const std::uint32_t* labels, std::uint32_t x) {
  for (std::uint32_t y = Ld(labels + x); y < x; y = Ld(labels + x)) x = y;
  return x;
}

// Joins the components of a and b: links the larger root under the smaller with atomicMin. When
// the atomic finds that another thread linked that root first (old != b), its old parent must
// still be joined to a, so the loop goes on with it; every link a thread overwrites is rejoined
// that way, and a halving store only skips a node, so no connection is lost.
template <bool kShared = false>
CUIMG_SEG_HD void Union(std::uint32_t* labels, std::uint32_t a, std::uint32_t b) {
  for (;;) {
    a = FindCompress<kShared>(labels, a);
    b = FindCompress<kShared>(labels, b);
    if (a == b) return;
    if (a > b) {
      const std::uint32_t t = a;
      a = b;
      b = t;
    }
    const std::uint32_t old = AtomicMin(labels + b, a);
    if (old == b) return;
    b = old;
  }
}

// Whether the union of a pixel with its backward neighbour at `o` may be skipped because other
// unions connect them: with the pixel above (0, -1, 0) in the set, the diagonals of the previous
// row are its neighbours along x; with the pixel below (0, 0, -1) in the set, every other
// neighbour in the previous slice is its in-plane neighbour. The unions along x and y are never
// skipped, and a skipped diagonal is always joined through them, so no connection is lost.
CUIMG_SEG_HD bool Implied(Offset o, bool up, bool below) {
  if (o.dz == -1) return below && (o.dx != 0 || o.dy != 0);
  return up && o.dy == -1 && o.dx != 0;
}

// Thread t of a tile handles column lx = t % 32 and rows (t / 32) + 8 k of the tile's
// kY * kZ rows (row = ly + kY * lz).
template <Connectivity C>
struct TileThread {
  using S = TileShape<C>;
  std::uint32_t x0, y0, z0;
  int lx, row0;
  CUIMG_SEG_HD TileThread(const Geometry& g, std::uint32_t tile, int t) {
    const std::uint32_t rest = tile / g.tiles_x;
    x0 = (tile % g.tiles_x) * S::kX;
    y0 = (rest % g.tiles_y) * S::kY;
    z0 = (rest / g.tiles_y) * S::kZ;
    lx = t & 31;
    row0 = t >> 5;
  }
  CUIMG_SEG_HD int Ly(int k) const { return (row0 + 8 * k) % S::kY; }
  CUIMG_SEG_HD int Lz(int k) const { return (row0 + 8 * k) / S::kY; }
  CUIMG_SEG_HD std::uint32_t Local(int k) const {
    return static_cast<std::uint32_t>((Lz(k) * S::kY + Ly(k)) * S::kX + lx);
  }
  CUIMG_SEG_HD bool Inside(const Geometry& g, int k) const {
    return x0 + lx < g.width && y0 + Ly(k) < g.height && z0 + Lz(k) < g.depth;
  }
  CUIMG_SEG_HD std::uint32_t Global(const Geometry& g, int lx_, int ly, int lz) const {
    return ((z0 + lz) * g.height + (y0 + ly)) * g.width + (x0 + lx_);
  }
};

// A tile in shared memory: the union-find links of its pixels (local indices), and each row's
// set as a bit mask (bit x: pixel x of the row is in the set; rows numbered ly + kY * lz).
template <Connectivity C>
struct TileMemory {
  std::uint32_t links[TileShape<C>::kPixels];
  std::uint32_t rows[TileShape<C>::kY * TileShape<C>::kZ];
};

// Whether the tile's pixel (x, y, z) is in the set; false outside the tile.
template <Connectivity C>
CUIMG_SEG_HD bool InSet(const TileMemory<C>& m, int x, int y, int z) {
  using S = TileShape<C>;
  if (x < 0 || x >= S::kX || y < 0 || y >= S::kY || z < 0 || z >= S::kZ) return false;
  return (m.rows[y + S::kY * z] >> x) & 1u;
}

// Row y + kY * z's mask; 0 outside the tile.
template <Connectivity C>
CUIMG_SEG_HD std::uint32_t RowMask(const TileMemory<C>& m, int y, int z) {
  using S = TileShape<C>;
  if (y < 0 || y >= S::kY || z < 0 || z >= S::kZ) return 0;
  return m.rows[y + S::kY * z];
}

// Phase 1: the rows' masks, and each pixel of the set linked to the first pixel of its run along
// x (so a run is one tree from the start, without unions), others kBackground. On the GPU a warp
// holds a tile row and finds the runs with one ballot; the host (a test's emulation) scans left.
// `m.rows` must be zero on the host.
template <typename T, Connectivity C>
CUIMG_SEG_HD void LocalLoad(const T* in, const Foreground<T>& fg, TileMemory<C>& m,
                            const Geometry& g, std::uint32_t tile, int t) {
  using S = TileShape<C>;
  const TileThread<C> th(g, tile, t);
  CUIMG_SEG_UNROLL
  for (int k = 0; k < S::kPerThread; ++k) {
    const int ly = th.Ly(k), lz = th.Lz(k);
    const auto in_set = [&](int x) {
      return th.x0 + x < g.width && th.y0 + ly < g.height && th.z0 + lz < g.depth &&
             fg(in[th.Global(g, x, ly, lz)]);
    };
    const bool set = in_set(th.lx);
    const int row = ly + S::kY * lz;
#if defined(__CUDA_ARCH__)
    const std::uint32_t mask = __ballot_sync(0xffffffffu, set);
    if (th.lx == 0) m.rows[row] = mask;
    const std::uint32_t starts = mask & ~(mask << 1);
    const std::uint32_t upto = th.lx == 31 ? 0xffffffffu : (2u << th.lx) - 1;
    const int start = 31 - __clz(starts & upto);
#else
    if (set) m.rows[row] |= 1u << th.lx;
    int start = th.lx;
    while (start > 0 && in_set(start - 1)) --start;
#endif
    m.links[th.Local(k)] = set ? static_cast<std::uint32_t>(row * S::kX + start) : kBackground;
  }
}

// Phase 2: unions with the backward neighbours inside the tile (shared-memory atomics), except
// those other unions imply (by induction along x, then y, then z, each skip rests on edges
// already joined): the pixel before along x is the same run; with it in the set, a neighbour at
// dx = -1 is its neighbour at dx = 0, and a neighbour at dx >= 0 is in one run with its
// neighbour at the same offset; and Implied's diagonals.
template <Connectivity C>
CUIMG_SEG_HD void LocalUnite(TileMemory<C>& m, const Geometry& g, std::uint32_t tile, int t) {
  using S = TileShape<C>;
  const TileThread<C> th(g, tile, t);
  const int x = th.lx;
  // A loop: unrolled, its 8 copies of the neighbours' unions made 26-connectivity's local pass
  // take 4.3 ms on the benchmark's CT instead of 0.94 ms (H200, c1).
  CUIMG_SEG_KEEP_LOOP
  for (int k = 0; k < S::kPerThread; ++k) {
    const int y = th.Ly(k), z = th.Lz(k);
    // The masks of the rows around (dy in -1..1, dz in -1..0), read once: every test below is
    // then a shift of a register.
    std::uint32_t near[2][3];
    CUIMG_SEG_UNROLL
    for (int dz = -1; dz <= 0; ++dz) {
      CUIMG_SEG_UNROLL
      for (int dy = -1; dy <= 1; ++dy) near[dz + 1][dy + 1] = RowMask(m, y + dy, z + dz);
    }
    const auto in_set = [&](int dx, int dy, int dz) {
      const int nx = x + dx;
      return nx >= 0 && nx < S::kX && ((near[dz + 1][dy + 1] >> nx) & 1u) != 0;
    };
    if (!in_set(0, 0, 0)) continue;
    const bool left = in_set(-1, 0, 0);
    const bool up = in_set(0, -1, 0);
    const bool below = in_set(0, 0, -1);
    const std::uint32_t i = th.Local(k);
    CUIMG_SEG_UNROLL
    for (int j = 0; j < BackwardCount(C); ++j) {
      const Offset o = BackwardOffset(C, j);
      if (!in_set(o.dx, o.dy, o.dz)) continue;
      if (left && (o.dx < 0 || in_set(o.dx - 1, o.dy, o.dz))) continue;
      if (Implied(o, up, below)) continue;
      const auto n = static_cast<std::uint32_t>(((z + o.dz) * S::kY + y + o.dy) * S::kX + x + o.dx);
      Union<true>(m.links, i, n);
    }
  }
}

// Phase 3: each pixel's tile-local root (the smallest index of its component within the tile:
// the tile's raster order is the image's) as a global index, or kBackground. After the barrier
// the links no longer change and this phase only reads them: plain loads without compression,
// since the atomic loads of phase 2 serialize when a tile's threads all reach one root.
// `local_roots` (may be null; zeroed, a bit a pixel, pixels / 32 words rounded up): the bits of
// the tile-local roots are set. The merge only links local roots and halves paths to them, so
// afterwards every pixel's entry is a local root (NumberLocalRootsKernel's rule,
// label_kernels.cuh).
template <Connectivity C>
CUIMG_SEG_HD void LocalWrite(TileMemory<C>& m, std::uint32_t* labels, const Geometry& g,
                             std::uint32_t tile, int t, std::uint32_t* local_roots = nullptr) {
  using S = TileShape<C>;
  const TileThread<C> th(g, tile, t);
  CUIMG_SEG_UNROLL
  for (int k = 0; k < S::kPerThread; ++k) {
    if (!th.Inside(g, k)) continue;
    std::uint32_t value = kBackground;
    if (InSet(m, th.lx, th.Ly(k), th.Lz(k))) {
      std::uint32_t r = th.Local(k);
      for (std::uint32_t up = m.links[r]; up < r; up = m.links[r]) r = up;
      value = th.Global(g, static_cast<int>(r % S::kX), static_cast<int>((r / S::kX) % S::kY),
                        static_cast<int>(r / (S::kX * S::kY)));
    }
    const std::uint32_t p = th.Global(g, th.lx, th.Ly(k), th.Lz(k));
    labels[p] = value;
    if (local_roots != nullptr && value == p) AtomicOr(local_roots + p / 32, 1u << (p % 32));
  }
}

// A tile's face pixels, those with a backward neighbour in another tile: in 2D the first row and
// the first and last columns (94); in 3D the first slice, then in each other slice the first and
// last rows and the first and last columns between them (256 + 7 * 76 = 788).
struct FacePixel {
  int x, y, z;
};
template <Connectivity C>
CUIMG_SEG_HD constexpr int FacePixels() {
  using S = TileShape<C>;
  return IsVolume(C) ? S::kX * S::kY + (S::kZ - 1) * (2 * S::kX + 2 * (S::kY - 2))
                     : S::kX + 2 * (S::kY - 1);
}
template <Connectivity C>
CUIMG_SEG_HD FacePixel NthFacePixel(int f) {
  using S = TileShape<C>;
  if (!IsVolume(C)) {
    if (f < S::kX) return {f, 0, 0};
    f -= S::kX;
    return {(f & 1) ? S::kX - 1 : 0, 1 + f / 2, 0};
  }
  if (f < S::kX * S::kY) return {f % S::kX, f / S::kX, 0};
  f -= S::kX * S::kY;
  constexpr int kPerSlice = 2 * S::kX + 2 * (S::kY - 2);
  const int z = 1 + f / kPerSlice;
  f %= kPerSlice;
  if (f < S::kX) return {f, 0, z};
  if (f < 2 * S::kX) return {f - S::kX, S::kY - 1, z};
  f -= 2 * S::kX;
  return {(f & 1) ? S::kX - 1 : 0, 1 + f / 2, z};
}

// Joins the tiles: each face pixel (NthFacePixel) that has a backward neighbour in another tile
// unions with it. Those pixels lie on the first and last column, the first row, and in 3D the
// last row and the first slice (whose backward neighbours include (x, y + 1, z - 1)). The set is
// read from the input (read-only, cached), not from the links that the unions change.
//
// Skips, so that a face's run (or patch) makes one union per neighbouring run, not one per
// pixel. Each rests only on unions with a smaller later end (joined, by induction over raster
// order) and on unions of this pixel that do not rest on the skipped one:
// - LocalUnite's, over the whole image: with the pixel before (x - 1) in the set, in any tile;
//   that join is a run's link within a tile, or the union along x below.
// - Along x at the tile's first column: with the pixel above (or below, in the previous slice)
//   in the set and its own pixel before, around the square; the join with that pixel is inside
//   the tile, where the first column has no pixel before and so LocalUnite always makes it.
// - Along y at the first row (3D), with the pixel below and the one below the neighbour; along
//   z at the first slice, with the pixel above and the one above the neighbour: again around a
//   square whose fourth side is inside the tile (made there, or resting on the pixel before).
template <typename T, Connectivity C>
CUIMG_SEG_HD void MergePixels(const T* in, const Foreground<T>& fg, std::uint32_t* labels,
                              const Geometry& g, std::uint32_t tile, int t) {
  using S = TileShape<C>;
  const TileThread<C> th(g, tile, t);
  const auto in_set = [&](std::int64_t x, std::int64_t y, std::int64_t z) {
    if (x < 0 || x >= g.width || y < 0 || y >= g.height || z < 0) return false;
    return fg(in[(z * g.height + y) * g.width + x]);
  };
  // The threads take the tile's face pixels in turn (one to four each), not their own rows, of
  // which most are inside: each pass of this loop is a chain of dependent loads.
  CUIMG_SEG_KEEP_LOOP
  for (int f = t; f < FacePixels<C>(); f += kTileThreads) {
    const FacePixel fp = NthFacePixel<C>(f);
    const int lx = fp.x, ly = fp.y, lz = fp.z;
    if (th.x0 + lx >= g.width || th.y0 + ly >= g.height || th.z0 + lz >= g.depth) continue;
    const std::int64_t gx = th.x0 + lx, gy = th.y0 + ly, gz = th.z0 + lz;
    if (!in_set(gx, gy, gz)) continue;
    const std::uint32_t p = th.Global(g, lx, ly, lz);
    const bool left = in_set(gx - 1, gy, gz);
    const bool up = in_set(gx, gy - 1, gz);
    const bool below = IsVolume(C) && in_set(gx, gy, gz - 1);
    CUIMG_SEG_UNROLL
    for (int j = 0; j < BackwardCount(C); ++j) {
      const Offset o = BackwardOffset(C, j);
      const int nx = lx + o.dx, ny = ly + o.dy, nz = lz + o.dz;
      if (nx >= 0 && nx < S::kX && ny >= 0 && ny < S::kY && nz >= 0) continue;  // same tile
      const std::int64_t qx = gx + o.dx, qy = gy + o.dy, qz = gz + o.dz;
      const bool along_x = o.dx == -1 && o.dy == 0 && o.dz == 0;
      const bool along_y = o.dx == 0 && o.dy == -1 && o.dz == 0;
      const bool along_z = o.dx == 0 && o.dy == 0 && o.dz == -1;
      if (!along_x && left && (o.dx < 0 || in_set(gx - 1 + o.dx, gy + o.dy, gz + o.dz))) continue;
      if (Implied(o, up, below)) continue;
      if ((along_x || along_z) && ly > 0 && up && in_set(qx, qy - 1, qz)) continue;
      if ((along_x || along_y) && lz > 0 && below && in_set(qx, qy, qz - 1)) continue;
      if (!in_set(qx, qy, qz)) continue;
      Union(labels, p, static_cast<std::uint32_t>((qz * g.height + qy) * g.width + qx));
    }
  }
}

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_CCL_PHASES_H_
