// The GPU labelling's union-find (segmentation/ccl_phases.h, the code its kernels run) on the
// host: each phase's threads run one after another in a shuffled order, one of the
// interleavings the GPU may take, and every pixel must end at the smallest index of its
// component as the CPU reference finds it. Covers the tiling, the faces the merge visits and the
// unions it skips, on images of many tiles, each connectivity, random and adversarial masks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cuimg/reference/label_reference.h"
#include "segmentation/ccl_phases.h"
#include "segmentation/region_stats.h"

namespace cuimg {
namespace {

// `local_roots` gets LocalWrite's bits of the tile-local roots.
template <Connectivity C>
std::vector<std::uint32_t> EmulateLinks(const Image& mask, std::mt19937& rng,
                                        std::vector<std::uint32_t>* local_roots) {
  using S = seg::TileShape<C>;
  const Extent& e = mask.extent();
  seg::Geometry g;
  g.width = static_cast<std::uint32_t>(e.width);
  g.height = static_cast<std::uint32_t>(e.height);
  g.depth = static_cast<std::uint32_t>(e.depth);
  g.tiles_x = static_cast<std::uint32_t>((e.width + S::kX - 1) / S::kX);
  g.tiles_y = static_cast<std::uint32_t>((e.height + S::kY - 1) / S::kY);
  g.pixels = static_cast<std::uint32_t>(e.Pixels());
  const std::uint32_t tiles = g.tiles_x * g.tiles_y * ((g.depth + S::kZ - 1) / S::kZ);
  const seg::Foreground<std::uint8_t> fg = seg::MakeForeground<std::uint8_t>(std::nullopt);
  std::vector<std::uint32_t> labels(static_cast<std::size_t>(e.Pixels()), 0x12345678u);
  local_roots->assign(static_cast<std::size_t>((e.Pixels() + 31) / 32), 0u);
  std::vector<int> threads(seg::kTileThreads);
  std::iota(threads.begin(), threads.end(), 0);
  std::vector<std::uint32_t> order(tiles);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), rng);
  for (std::uint32_t tile : order) {
    seg::TileMemory<C> m{};
    for (std::uint32_t& link : m.links) link = 0xdeadbeefu;
    for (int t : threads)
      seg::LocalLoad<std::uint8_t, C>(mask.As<std::uint8_t>(), fg, m, g, tile, t);
    std::shuffle(threads.begin(), threads.end(), rng);
    for (int t : threads) seg::LocalUnite<C>(m, g, tile, t);
    std::shuffle(threads.begin(), threads.end(), rng);
    for (int t : threads) seg::LocalWrite<C>(m, labels.data(), g, tile, t, local_roots->data());
  }
  std::shuffle(order.begin(), order.end(), rng);
  for (std::uint32_t tile : order) {
    std::shuffle(threads.begin(), threads.end(), rng);
    for (int t : threads) {
      seg::MergePixels<std::uint8_t, C>(mask.As<std::uint8_t>(), fg, labels.data(), g, tile, t);
    }
  }
  return labels;
}

std::vector<std::uint32_t> Links(const Image& mask, Connectivity c, std::mt19937& rng,
                                 std::vector<std::uint32_t>* local_roots) {
  switch (c) {
    case Connectivity::k8:
      return EmulateLinks<Connectivity::k8>(mask, rng, local_roots);
    case Connectivity::k6:
      return EmulateLinks<Connectivity::k6>(mask, rng, local_roots);
    case Connectivity::k18:
      return EmulateLinks<Connectivity::k18>(mask, rng, local_roots);
    case Connectivity::k26:
      return EmulateLinks<Connectivity::k26>(mask, rng, local_roots);
    default:
      break;
  }
  return EmulateLinks<Connectivity::k4>(mask, rng, local_roots);
}

// Every pixel's root (FindCompress over the emulated links) is its component's first pixel.
void ExpectRootsMatch(const Image& mask, Connectivity c, std::mt19937& rng,
                      const std::string& what) {
  LabelSpec spec;
  spec.connectivity = c;
  absl::StatusOr<LabelResult> want = LabelReference(mask.view(), spec);
  ASSERT_TRUE(want.ok()) << want.status();
  const std::uint32_t* label = want->labels.As<std::uint32_t>();
  std::vector<std::uint32_t> first(want->regions.size() + 1, seg::kBackground);
  for (std::uint32_t p = 0; p < want->labels.extent().Pixels(); ++p) {
    if (first[label[p]] == seg::kBackground) first[label[p]] = p;
  }
  std::vector<std::uint32_t> local_roots;
  std::vector<std::uint32_t> links = Links(mask, c, rng, &local_roots);
  // What the numbering without a flatten pass rests on (label_kernels.cuh): after the merge every
  // labelled pixel links to a marked local root (or is one), and local roots link only to local
  // roots, so numbering the local roots numbers every pixel's entry.
  const auto local_root = [&](std::uint32_t q) { return (local_roots[q / 32] >> (q % 32)) & 1u; };
  for (std::uint32_t p = 0; p < links.size(); ++p) {
    if (links[p] == seg::kBackground) {
      ASSERT_FALSE(local_root(p)) << what << " at pixel " << p;
      continue;
    }
    ASSERT_LE(links[p], p) << what << " at pixel " << p;
    ASSERT_TRUE(local_root(links[p])) << what << ": pixel " << p << " links to " << links[p];
  }
  for (std::uint32_t p = 0; p < links.size(); ++p) {
    const std::uint32_t got =
        links[p] == seg::kBackground ? seg::kBackground : seg::FindCompress(links.data(), p);
    const std::uint32_t expected = label[p] == 0 ? seg::kBackground : first[label[p]];
    ASSERT_EQ(got, expected) << what << " at pixel " << p;
  }
}

Image RandomMask(Extent e, double density, std::mt19937& rng) {
  Image mask(PixelType::kU8, e);
  std::bernoulli_distribution on(density);
  for (std::int64_t i = 0; i < e.Pixels(); ++i) mask.As<std::uint8_t>()[i] = on(rng);
  return mask;
}

// A line spiralling inwards, rings two apart: one component whose path crosses every tile many
// times, and whose complement is another.
Image Spiral(Extent e, bool invert) {
  Image mask(PixelType::kU8, e);
  std::uint8_t* m = mask.As<std::uint8_t>();
  const std::int64_t w = e.width, h = e.height;
  const int dx[] = {1, 0, -1, 0}, dy[] = {0, 1, 0, -1};
  std::int64_t x = 0, y = 0;
  int d = 0, turns = 0;
  m[0] = 1;
  while (turns < 2) {
    const std::int64_t nx = x + dx[d], ny = y + dy[d], fx = x + 2 * dx[d], fy = y + 2 * dy[d];
    const bool free = nx >= 0 && nx < w && ny >= 0 && ny < h && !m[ny * w + nx];
    if (free && !(fx >= 0 && fx < w && fy >= 0 && fy < h && m[fy * w + fx])) {
      x = nx;
      y = ny;
      m[y * w + x] = 1;
      turns = 0;
    } else {
      d = (d + 1) % 4;
      ++turns;
    }
  }
  for (std::int64_t z = 1; z < e.depth; ++z) std::copy(m, m + w * h, m + z * w * h);
  if (invert) {
    for (std::int64_t i = 0; i < e.Pixels(); ++i) m[i] = !m[i];
  }
  return mask;
}

// The merge's face pixels are each pixel with a neighbour before it in another tile, once.
template <Connectivity C>
void ExpectFacePixelsAreTheFaces() {
  using S = seg::TileShape<C>;
  std::vector<int> seen(S::kPixels, 0);
  for (int f = 0; f < seg::FacePixels<C>(); ++f) {
    const seg::FacePixel p = seg::NthFacePixel<C>(f);
    ASSERT_TRUE(p.x >= 0 && p.x < S::kX && p.y >= 0 && p.y < S::kY && p.z >= 0 && p.z < S::kZ);
    ++seen[(p.z * S::kY + p.y) * S::kX + p.x];
  }
  for (int z = 0; z < S::kZ; ++z) {
    for (int y = 0; y < S::kY; ++y) {
      for (int x = 0; x < S::kX; ++x) {
        const bool face =
            x == 0 || x == S::kX - 1 || y == 0 || (seg::IsVolume(C) && (z == 0 || y == S::kY - 1));
        EXPECT_EQ(seen[(z * S::kY + y) * S::kX + x], face ? 1 : 0) << x << "," << y << "," << z;
      }
    }
  }
}

TEST(LabelCclEmulationTest, FacePixelsAreEachFacePixelOnce) {
  ExpectFacePixelsAreTheFaces<Connectivity::k8>();
  ExpectFacePixelsAreTheFaces<Connectivity::k26>();
}

TEST(LabelCclEmulationTest, RootsAreFirstPixelsOnRandomMasksOfManyTiles) {
  std::mt19937 rng(48);
  for (Connectivity c : {Connectivity::k4, Connectivity::k8}) {
    for (double density : {0.2, 0.45, 0.6, 0.8}) {
      const Extent e{97, 70, 1};
      ExpectRootsMatch(
          RandomMask(e, density, rng), c, rng,
          "2d conn " + std::to_string(static_cast<int>(c)) + " density " + std::to_string(density));
    }
  }
  for (Connectivity c : {Connectivity::k6, Connectivity::k18, Connectivity::k26}) {
    for (double density : {0.15, 0.3, 0.5, 0.75}) {
      const Extent e{40, 19, 21};
      ExpectRootsMatch(
          RandomMask(e, density, rng), c, rng,
          "3d conn " + std::to_string(static_cast<int>(c)) + " density " + std::to_string(density));
    }
  }
}

TEST(LabelCclEmulationTest, RootsAreFirstPixelsOnSpiralsAndCheckerboards) {
  std::mt19937 rng(7);
  for (bool invert : {false, true}) {
    for (Connectivity c : {Connectivity::k4, Connectivity::k8}) {
      ExpectRootsMatch(Spiral({150, 101, 1}, invert), c, rng, "spiral 2d");
    }
    for (Connectivity c : {Connectivity::k6, Connectivity::k18, Connectivity::k26}) {
      ExpectRootsMatch(Spiral({67, 35, 10}, invert), c, rng, "spiral 3d");
    }
  }
  Image board(PixelType::kU8, {65, 33, 17});
  for (std::int64_t z = 0, i = 0; z < 17; ++z) {
    for (std::int64_t y = 0; y < 33; ++y) {
      for (std::int64_t x = 0; x < 65; ++x, ++i) board.As<std::uint8_t>()[i] = (x + y + z) % 2;
    }
  }
  for (Connectivity c : {Connectivity::k6, Connectivity::k18, Connectivity::k26}) {
    ExpectRootsMatch(board, c, rng, "checkerboard");
  }
}

TEST(LabelCclEmulationTest, RootsAreFirstPixelsOnThinAndTinyImages) {
  std::mt19937 rng(11);
  for (Extent e : {Extent{1, 1, 1}, Extent{1, 300, 1}, Extent{300, 1, 1}, Extent{33, 33, 1}}) {
    for (Connectivity c : {Connectivity::k4, Connectivity::k8}) {
      ExpectRootsMatch(RandomMask(e, 0.6, rng), c, rng, "thin 2d");
    }
  }
  for (Extent e : {Extent{1, 1, 40}, Extent{33, 9, 9}, Extent{2, 17, 3}}) {
    for (Connectivity c : {Connectivity::k6, Connectivity::k18, Connectivity::k26}) {
      ExpectRootsMatch(RandomMask(e, 0.6, rng), c, rng, "thin 3d");
    }
  }
}

}  // namespace
}  // namespace cuimg
