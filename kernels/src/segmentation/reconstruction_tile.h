// One brick of the GPU reconstruction (reconstruction.cu, reconstruction_queue.cu), converged by
// one warp in two tiles of shared memory: it takes what its neighbours outside the brick offer,
// propagates inside until nothing moves, writes back what changed and says which neighbouring
// bricks must run again. The passes are loops over rows and columns of the tile: a brick kept in
// registers needs every row's code unrolled, hundreds of kilobytes of instructions for a volume,
// which an SM's instruction cache cannot hold. Along x each lane takes one row and walks its 32
// pixels (the tile is read by columns: a row pitch of 33 keys keeps the lanes on distinct banks);
// along y and z each lane takes one column.
//
// Written against the warp policy of reconstruction_brick.h (DeviceWarp; the emulation's
// HostWarp), with the tile's accesses as policy calls: LoadRow/StoreRow (lane x: row j's pixel
// x), LoadCol/StoreCol (lane j: row j's pixel x), Sync (the tile written by some lanes is read by
// others).
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_TILE_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_TILE_H_

#include <cstdint>

#include "segmentation/reconstruction_brick.h"

#if defined(__CUDA_ARCH__)
#define CUIMG_TILE_UNROLL(n) _Pragma(#n)
#else
#define CUIMG_TILE_UNROLL(n)
#endif

namespace cuimg::seg {

// One pass along x, each lane its row, forward then back: r_x = max(r_x, min(g_x, r_{x -+ 1})).
// What rose is not tracked here: the run compares the tile with the image once, when it writes
// back (ProcessTile), which costs less than a bit a pixel a pass.
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W>
CUIMG_BRICK_HD void PassAlongX(typename W::Key* s, const typename W::Key* g,
                               const typename W::V& lowest) {
  using V = typename W::V;
  V previous = lowest;
  CUIMG_TILE_UNROLL(unroll 8)
  for (int x = 0; x < kBrickWidth; ++x) {
    previous = W::Max(W::LoadCol(s, x), W::Min(W::LoadCol(g, x), previous));
    W::StoreCol(s, x, previous, W::SplatB(true));
  }
  previous = lowest;
  CUIMG_TILE_UNROLL(unroll 8)
  for (int x = kBrickWidth - 1; x >= 0; --x) {
    previous = W::Max(W::LoadCol(s, x), W::Min(W::LoadCol(g, x), previous));
    W::StoreCol(s, x, previous, W::SplatB(true));
  }
}

// Row j (lane x: pixel x) raised to min(n, g); `moved` set in the lanes where it rose.
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W>
CUIMG_BRICK_HD typename W::V RaiseRow(typename W::Key* s, const typename W::Key* g, int j,
                                      const typename W::V& n, typename W::B& moved) {
  const typename W::V v = W::LoadRow(s, j);
  const typename W::V r = W::Max(v, W::Min(n, W::LoadRow(g, j)));
  W::StoreRow(s, j, r, W::SplatB(true));
  moved = W::Or(moved, W::Greater(r, v));
  return r;
}

// The brick's rows (bits j) on its side sy along y and sz along z (-1: first, 1: last, 0: any).
template <bool kVolume>
CUIMG_BRICK_HD std::uint32_t EdgeRows(int sy, int sz) {
  constexpr int kRowsY = BrickShape<kVolume>::kRowsY;
  constexpr int kRowsZ = BrickShape<kVolume>::kRowsZ;
  std::uint32_t rows = 0;
  for (int j = 0; j < kBrickRows; ++j) {
    const int yl = j % kRowsY, zl = j / kRowsY;
    const bool y_ok = sy == 0 || (sy < 0 ? yl == 0 : yl == kRowsY - 1);
    const bool z_ok = sz == 0 || (sz < 0 ? zl == 0 : zl == kRowsZ - 1);
    if (y_ok && z_ok) rows |= 1u << j;
  }
  return rows;
}

// The index of the lowest set bit of m (m != 0).
CUIMG_BRICK_HD int LowestBit(std::uint32_t m) {
#if defined(__CUDA_ARCH__)
  return __ffs(m) - 1;
#else
  return __builtin_ctz(m);
#endif
}

// The best of rows (zs, yl - 1 .. yl + 1) of the tile that connect to row yl of the next or
// previous slice (as FromSlice in reconstruction_brick.h).
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W, int kRowsY, bool kFace>
CUIMG_BRICK_HD typename W::V SliceNeighbours(const typename W::Key* s, int zs, int yl,
                                             int max_nonzero, const typename W::V& lowest) {
  if (kFace) return W::LoadRow(s, zs * kRowsY + yl);
  typename W::V n = lowest;
  for (int dy = -1; dy <= 1; ++dy) {
    if (yl + dy < 0 || yl + dy >= kRowsY) continue;
    const int nonzero = 1 + (dy != 0);
    if (nonzero > max_nonzero) continue;
    const typename W::V v = W::LoadRow(s, zs * kRowsY + yl + dy);
    n = W::Max(n, nonzero + 1 <= max_nonzero ? WithSides<W>(v) : v);
  }
  return n;
}

// Whether a pixel `ours` where `at` raises the pixel beyond it (`theirs` under `mask`).
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W>
CUIMG_BRICK_HD bool Raises(const typename W::V& ours, const typename W::V& mask,
                           const typename W::V& theirs, const typename W::B& at) {
  return W::Any(W::And2(at, W::Greater(W::Min(mask, ours), theirs)));
}

// Which neighbouring bricks (NeighbourBit) a run's changed pixels (`changed`: lane x, bit j) can
// raise, for face connectivity: a changed pixel on a face raises the pixel beyond it only where
// that one is below both its mask and the changed value. The pixels beyond are read after this
// run's stores; values only rise, so a stale read can only add a mark, and a pixel at or above
// min(mask, our value) stays so: the neighbour is at its fixed point for it. Without this a brick
// that a neighbour raised would send that neighbour back to run for nothing (on the CT, the
// fronts crossing the air: hmax 10 on the 512x512x300 volume).
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W, typename T, bool kVolume, typename RowValid, typename RowBase>
CUIMG_BRICK_HD std::uint32_t FaceMarks(const BrickArgs<T>& a, const typename W::U& changed,
                                       const typename W::Key* s, const typename W::B& x_in,
                                       BrickIndex x0, BrickIndex y0, BrickIndex z0,
                                       RowValid row_valid, RowBase row_base) {
  using Keys = KeyTraits<T>;
  using V = typename W::V;
  using B = typename W::B;
  constexpr int kRowsY = BrickShape<kVolume>::kRowsY;
  const V lowest = W::Splat(Keys::Lowest());
  std::uint32_t marks = 0;
  // Along y and z: the face's rows that hold a changed pixel, each against the row beyond it
  // (lane x: pixel x).
  const std::uint32_t changed_rows = W::ReduceOr(changed);
  for (int sz = kVolume ? -1 : 0; sz <= (kVolume ? 1 : 0); ++sz) {
    for (int sy = -1; sy <= 1; ++sy) {
      if ((sy != 0) + (sz != 0) != 1) continue;
      bool hit = false;
      for (std::uint32_t rows = EdgeRows<kVolume>(sy, sz) & changed_rows; rows != 0 && !hit;
           rows &= rows - 1) {
        const int j = LowestBit(rows);
        const BrickIndex y = y0 + j % kRowsY + sy, z = z0 + j / kRowsY + sz;
        if (!row_valid(y, z)) continue;
        const B at = W::And2(W::TestBit(changed, j), x_in);
        const V mask = W::template Load<T>(a.mask, row_base(y, z), at, a.flip, lowest);
        const V theirs = W::template Load<T>(a.r, row_base(y, z), at, a.flip, lowest);
        hit = Raises<W>(W::LoadRow(s, j), mask, theirs, at);
      }
      if (hit) marks |= NeighbourBit(0, sy, sz);
    }
  }
  // Along x: lane j takes row j's edge pixel and the one beside it in the next brick.
  for (int sx = -1; sx <= 1; sx += 2) {
    const int edge = sx < 0 ? 0 : kBrickWidth - 1;
    if (sx < 0 ? x0 == 0 : x0 + kBrickWidth >= a.width) continue;
    const std::uint32_t rows = W::Broadcast(changed, edge);
    if (rows == 0) continue;
    // Only pixels inside the image change.
    const B at = W::LaneWhere([&](int j) { return ((rows >> j) & 1u) != 0; });
    auto beside = [&](int j) { return row_base(y0 + j % kRowsY, z0 + j / kRowsY) + edge + sx; };
    const V mask = W::template LoadEach<T>(a.mask, beside, at, a.flip, lowest);
    const V theirs = W::template LoadEach<T>(a.r, beside, at, a.flip, lowest);
    if (Raises<W>(W::LoadCol(s, edge), mask, theirs, at)) marks |= NeighbourBit(sx, 0, 0);
  }
  return marks;
}

// Row (y, z) of p where it exists (`valid`; lane x: pixel x0 + x, where x_in), else the lowest
// key; `base` is the row's first pixel, not read when the row does not exist.
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W, typename T>
CUIMG_BRICK_HD typename W::V ImageRow(const T* p, const BrickArgs<T>& a, bool valid,
                                      BrickIndex base, const typename W::B& x_in) {
  return W::template Load<T>(p, valid ? base : 0, W::And(x_in, valid), a.flip,
                             W::Splat(KeyTraits<T>::Lowest()));
}

// The seeds, for any connectivity: each pixel raised to min(best neighbour outside the brick,
// mask). Rows of the tile by lanes (lane x: pixel x). Returns the lanes where a seed raised a
// pixel. Every load is predicated rather than branched around, so that the rows' loads overlap.
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W, typename T, bool kVolume, typename RowValid, typename RowBase>
CUIMG_BRICK_HD typename W::B SeedTile(const BrickArgs<T>& a, typename W::Key* s, typename W::Key* g,
                                      const typename W::B& x_in, BrickIndex x0, BrickIndex y0,
                                      BrickIndex z0, RowValid row_valid, RowBase row_base) {
  using V = typename W::V;
  using B = typename W::B;
  constexpr int kRowsY = BrickShape<kVolume>::kRowsY;
  constexpr int kRowsZ = BrickShape<kVolume>::kRowsZ;
  const V lowest = W::Splat(KeyTraits<T>::Lowest());
  const B left_in = W::And(W::LaneIs(0), x0 > 0);
  const B right_in = W::And(W::LaneIs(kBrickWidth - 1), x0 + kBrickWidth < a.width);
  B rose = W::SplatB(false);
  CUIMG_TILE_UNROLL(unroll 4)
  for (int j = 0; j < kBrickRows; ++j) {
    const int yl = j % kRowsY, zl = j / kRowsY;
    const BrickIndex y = y0 + yl, z = z0 + zl;
    const B in = W::And(x_in, row_valid(y, z));
    const V gj = W::template Load<T>(a.mask, row_base(y, z), in, a.flip, lowest);
    const V r = W::template Load<T>(a.r, row_base(y, z), in, a.flip, lowest);
    V n = lowest;
    CUIMG_TILE_UNROLL(unroll)
    for (int dz = kVolume ? -1 : 0; dz <= (kVolume ? 1 : 0); ++dz) {
      CUIMG_TILE_UNROLL(unroll)
      for (int dy = -1; dy <= 1; ++dy) {
        const int nonzero = (dy != 0) + (dz != 0);
        const bool active = nonzero <= a.max_nonzero && row_valid(y + dy, z + dz);
        const bool sides = active && nonzero + 1 <= a.max_nonzero;  // x +- 1 with (dy, dz)
        const bool inside = yl + dy >= 0 && yl + dy < kRowsY && zl + dz >= 0 && zl + dz < kRowsZ;
        const BrickIndex base = active ? row_base(y + dy, z + dz) : row_base(y, z);
        // The row where it lies outside the brick; its x neighbours beside the brick's edge
        // lanes (any row), else the row's own lanes shifted (a row outside).
        const V h = W::template Load<T>(a.r, base, W::And(x_in, active && !inside), a.flip, lowest);
        const V left_edge =
            W::template Load<T>(a.r, base - 1, W::And(left_in, sides), a.flip, lowest);
        const V right_edge =
            W::template Load<T>(a.r, base + 1, W::And(right_in, sides), a.flip, lowest);
        const B shifted = W::SplatB(sides && !inside);
        const V left =
            W::Select(W::LaneIs(0), left_edge, W::Select(shifted, W::ShflUp(h, 1), lowest));
        const V right = W::Select(W::LaneIs(kBrickWidth - 1), right_edge,
                                  W::Select(shifted, W::ShflDown(h, 1), lowest));
        n = W::Max(n, W::Max(h, W::Max(left, right)));
      }
    }
    W::StoreRow(g, j, gj, W::SplatB(true));
    const V up = W::Max(r, W::Min(n, gj));
    W::StoreRow(s, j, up, W::SplatB(true));
    rose = W::Or(rose, W::Greater(up, r));
  }
  return rose;
}

// The seeds with face connectivity (as SeedTile): the rows loaded, then each of the six faces
// raised by what lies beyond it, a row or column at a time: a pixel has at most three
// neighbours outside the brick, so this loads 24 rows and 2 columns beside the brick where
// SeedTile predicates four loads a row. Returns the lanes (of rows or columns) where a seed
// raised a pixel.
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W, typename T, bool kVolume, typename RowValid, typename RowBase>
CUIMG_BRICK_HD typename W::B SeedFaceTile(const BrickArgs<T>& a, typename W::Key* s,
                                          typename W::Key* g, const typename W::B& x_in,
                                          BrickIndex x0, BrickIndex y0, BrickIndex z0,
                                          RowValid row_valid, RowBase row_base) {
  using V = typename W::V;
  using B = typename W::B;
  constexpr int kRowsY = BrickShape<kVolume>::kRowsY;
  constexpr int kRowsZ = BrickShape<kVolume>::kRowsZ;
  const V lowest = W::Splat(KeyTraits<T>::Lowest());
  CUIMG_TILE_UNROLL(unroll 4)
  for (int j = 0; j < kBrickRows; ++j) {
    const BrickIndex y = y0 + j % kRowsY, z = z0 + j / kRowsY;
    W::StoreRow(g, j, ImageRow<W>(a.mask, a, row_valid(y, z), row_base(y, z), x_in),
                W::SplatB(true));
    W::StoreRow(s, j, ImageRow<W>(a.r, a, row_valid(y, z), row_base(y, z), x_in), W::SplatB(true));
  }
  B rose = W::SplatB(false);
  for (int side = -1; side <= 1; side += 2) {
    const int yl = side < 0 ? 0 : kRowsY - 1;
    CUIMG_TILE_UNROLL(unroll)
    for (int zl = 0; zl < kRowsZ; ++zl) {
      const BrickIndex y = y0 + yl + side, z = z0 + zl;
      RaiseRow<W>(s, g, zl * kRowsY + yl,
                  ImageRow<W>(a.r, a, row_valid(y, z), row_base(y, z), x_in), rose);
    }
    if (!kVolume) continue;
    const int zl = side < 0 ? 0 : kRowsZ - 1;
    CUIMG_TILE_UNROLL(unroll)
    for (int yl = 0; yl < kRowsY; ++yl) {
      const BrickIndex z = z0 + zl + side;
      RaiseRow<W>(s, g, zl * kRowsY + yl,
                  ImageRow<W>(a.r, a, row_valid(y0 + yl, z), row_base(y0 + yl, z), x_in), rose);
    }
  }
  // Along x, by columns: lane j takes row j's pixel beside the brick's edge.
  W::Sync();  // the rows just written are read by columns
  const B rows_in =
      W::LaneWhere([&](int j) { return row_valid(y0 + j % kRowsY, z0 + j / kRowsY); });
  for (int side = -1; side <= 1; side += 2) {
    const int edge = side < 0 ? 0 : kBrickWidth - 1;
    const bool beyond = side < 0 ? x0 > 0 : x0 + kBrickWidth < a.width;
    auto beside = [&](int j) { return row_base(y0 + j % kRowsY, z0 + j / kRowsY) + edge + side; };
    const V h = W::template LoadEach<T>(a.r, beside, W::And(rows_in, beyond), a.flip, lowest);
    const V v = W::LoadCol(s, edge);
    const V up = W::Max(v, W::Min(h, W::LoadCol(g, edge)));
    W::StoreCol(s, edge, up, W::SplatB(true));
    rose = W::Or(rose, W::Greater(up, v));
  }
  return rose;
}

// The brick `brick` once, in the tile `s` (working values) and `g` (mask), each kTileKeys keys
// of this warp's own: returns the neighbouring bricks (NeighbourBit) that one of its changed
// pixels connects to (kFace, face connectivity: only those it can raise, FaceMarks).
// `first_run`: the brick has not converged before (round 0); a later run whose seeds raise
// nothing has nothing to do (the brick is at its last fixed point). `iterations` counts the
// passes along x. kFace is a.max_nonzero == 1 known when compiling: the seeds and sweeps then
// skip the diagonal rows' code.
CUIMG_BRICK_EXEC_CHECK_DISABLE
template <class W, typename T, bool kVolume, bool kFace>
CUIMG_BRICK_HD std::uint32_t ProcessTile(const BrickArgs<T>& a, BrickIndex brick, bool first_run,
                                         int& iterations, typename W::Key* s, typename W::Key* g) {
  using V = typename W::V;
  using U = typename W::U;
  using B = typename W::B;
  constexpr int kRowsY = BrickShape<kVolume>::kRowsY;
  constexpr int kRowsZ = BrickShape<kVolume>::kRowsZ;
  const int max_nonzero = kFace ? 1 : a.max_nonzero;
  const V lowest = W::Splat(KeyTraits<T>::Lowest());
  const BrickIndex x0 = brick % a.bricks_x * kBrickWidth;
  const BrickIndex y0 = (brick / a.bricks_x) % a.bricks_y * kRowsY;
  const BrickIndex z0 = brick / (a.bricks_x * a.bricks_y) * kRowsZ;
  const B x_in = W::LaneBelow(a.width - x0);
  auto row_valid = [&](BrickIndex y, BrickIndex z) {
    return y >= 0 && z >= 0 && y < a.height && z < a.depth;
  };
  auto row_base = [&](BrickIndex y, BrickIndex z) { return (z * a.height + y) * a.width + x0; };

  // Load and seed: the neighbours outside the brick do not change while it converges (one that
  // changes them marks this brick again). Outside the image both images hold the lowest key,
  // which never rises nor raises.
  B rose;
  if constexpr (kFace) {
    rose = SeedFaceTile<W, T, kVolume>(a, s, g, x_in, x0, y0, z0, row_valid, row_base);
  } else {
    rose = SeedTile<W, T, kVolume>(a, s, g, x_in, x0, y0, z0, row_valid, row_base);
  }
  if (!first_run && !W::Any(rose)) return 0;

  const bool diagonal_in_plane = !kFace && a.max_nonzero >= 2;
  // Passes in turn, along x then along y and z together, until a pass along y and z moves
  // nothing: the pass along x before it left every row at its fixed point along x (a sweep each
  // way along a line reaches it), and that quiet pass checked every other neighbour in the tile
  // against values that did not change, so the tile is a fixed point of every neighbour.
  for (;;) {
    ++iterations;
    W::Sync();  // the rows just written are read by columns
    PassAlongX<W>(s, g, lowest);
    W::Sync();
    // Along y and z, each lane its column: a raster sweep over the rows (slice by slice) and
    // back, each row taking the rows before it that it connects to: the row above in its slice
    // (with its x neighbours when diagonals in the plane connect) and the slice before's rows
    // y - 1, y, y + 1 as connected. A path turning between y and z in one direction needs one
    // sweep. Each lane reads its own column of the tile, so no Sync is needed.
    B moved = W::SplatB(false);
    V previous = lowest;
    CUIMG_TILE_UNROLL(unroll 4)
    for (int j = 0; j < kBrickRows; ++j) {
      const int yl = j % kRowsY, zl = j / kRowsY;
      V n = yl > 0 ? (diagonal_in_plane ? WithSides<W>(previous) : previous) : lowest;
      if (kVolume && zl > 0) {
        n = W::Max(n, SliceNeighbours<W, kRowsY, kFace>(s, zl - 1, yl, max_nonzero, lowest));
      }
      previous = RaiseRow<W>(s, g, j, n, moved);
    }
    CUIMG_TILE_UNROLL(unroll 4)
    for (int j = kBrickRows - 1; j >= 0; --j) {
      const int yl = j % kRowsY, zl = j / kRowsY;
      V n = yl < kRowsY - 1 ? (diagonal_in_plane ? WithSides<W>(previous) : previous) : lowest;
      if (kVolume && zl < kRowsZ - 1) {
        n = W::Max(n, SliceNeighbours<W, kRowsY, kFace>(s, zl + 1, yl, max_nonzero, lowest));
      }
      previous = RaiseRow<W>(s, g, j, n, moved);
    }
    if (!W::Any(moved)) break;
  }

  // Write back what changed: the tile against the image, whose pixels in this brick only this
  // run writes (a brick never runs on two warps at once), so it still holds the run's inputs.
  U changed = W::SplatU(0);  // lane x, bit j: row j's pixel x rose in this run
  CUIMG_TILE_UNROLL(unroll 4)
  for (int j = 0; j < kBrickRows; ++j) {
    const BrickIndex y = y0 + j % kRowsY, z = z0 + j / kRowsY;
    const bool valid = row_valid(y, z);
    const V now = W::LoadRow(s, j);
    const B up = W::And2(W::And(x_in, valid),
                         W::Greater(now, ImageRow<W>(a.r, a, valid, row_base(y, z), x_in)));
    W::template Store<T>(a.r, valid ? row_base(y, z) : 0, now, up, a.flip);
    changed = W::OrU(changed, W::SelectU(up, 1u << j, 0u));
  }
  if (kFace) {
    return FaceMarks<W, T, kVolume>(a, changed, s, x_in, x0, y0, z0, row_valid, row_base);
  }
  // The neighbouring bricks a changed pixel is connected to: those across the faces, edges and
  // corners (as the connectivity allows) that hold a changed pixel, found from the rows' bits.
  U marks = W::SplatU(0);
  for (int sz = kVolume ? -1 : 0; sz <= (kVolume ? 1 : 0); ++sz) {
    for (int sy = -1; sy <= 1; ++sy) {
      const std::uint32_t rows = EdgeRows<kVolume>(sy, sz);
      for (int sx = -1; sx <= 1; ++sx) {
        const int nonzero = (sx != 0) + (sy != 0) + (sz != 0);
        if (nonzero == 0 || nonzero > a.max_nonzero) continue;
        const B hit = W::AnyBits(changed, rows);
        const B at = sx == 0 ? hit : W::And2(hit, W::LaneIs(sx < 0 ? 0 : kBrickWidth - 1));
        marks = W::OrU(marks, W::SelectU(at, NeighbourBit(sx, sy, sz), 0u));
      }
    }
  }
  return W::ReduceOr(marks);
}

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_TILE_H_
