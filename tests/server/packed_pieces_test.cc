// packed_pieces: a pyramid's packed levels grouped into pieces that fit one pinned buffer each,
// and every level found inside exactly the piece that holds it.
#include "server/backend/packed_pieces.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;

TEST(PackedPieces, GroupsConsecutiveLevelsUpToTheLimitAndCoversEveryLevel) {
  for (const std::size_t limit :
       {std::size_t{1}, std::size_t{4} << 20, std::size_t{16} << 20, std::size_t{1} << 40}) {
    // The default: 31 levels at 1.05, F32 out.
    absl::StatusOr<std::vector<PyramidLevel>> levels =
        PlanPyramidLevels(PixelType::kU8, Extent{1920, 1080, 1}, PyramidSpec{});
    ASSERT_TRUE(levels.ok()) << levels.status();
    std::vector<PackedPiece> pieces = GroupPyramidLevels(*levels, limit);
    std::vector<std::vector<std::uint8_t>> memory;
    for (PackedPiece& p : pieces) {
      // Larger than the limit only when one level is.
      if (p.bytes > limit) {
        EXPECT_TRUE(std::any_of(levels->begin(), levels->end(), [&](const PyramidLevel& l) {
          return l.offset_bytes == p.offset && l.bytes == p.bytes;
        }));
      }
      memory.emplace_back(p.bytes);
      p.data = memory.back().data();
    }
    EXPECT_TRUE(CheckPackedPieces(pieces, PyramidOutputBytes(*levels)).ok());
    for (std::size_t i = 0; i + 1 < pieces.size(); ++i) {
      EXPECT_LE(pieces[i].offset + pieces[i].bytes, pieces[i + 1].offset);
      // A piece ends only where the next level would not have fitted.
      const auto next = std::find_if(levels->begin(), levels->end(), [&](const PyramidLevel& l) {
        return l.offset_bytes == pieces[i + 1].offset;
      });
      ASSERT_NE(next, levels->end());
      EXPECT_GT(next->offset_bytes + next->bytes - pieces[i].offset, limit);
    }
    for (const PyramidLevel& l : *levels) {
      absl::StatusOr<void*> at = PackedDestination(pieces, l.offset_bytes, l.bytes);
      ASSERT_TRUE(at.ok()) << at.status();
      const auto* p = static_cast<std::uint8_t*>(*at);
      EXPECT_TRUE(
          std::any_of(memory.begin(), memory.end(), [&](const std::vector<std::uint8_t>& m) {
            return p >= m.data() && p + l.bytes <= m.data() + m.size();
          }));
    }
    if (limit == std::size_t{1} << 40) {
      EXPECT_EQ(pieces.size(), 1u);
    }
    if (limit == 1) {
      EXPECT_EQ(pieces.size(), levels->size());
    }
  }
}

TEST(PackedPieces, RangesOutsideEveryPieceOrTheOutputAreInternal) {
  std::vector<std::uint8_t> a(100), b(50);
  const std::vector<PackedPiece> pieces = {{0, 100, a.data()}, {256, 50, b.data()}};
  EXPECT_EQ(*PackedDestination(pieces, 256 + 10, 40), b.data() + 10);
  EXPECT_THAT(PackedDestination(pieces, 90, 20), StatusIs(absl::StatusCode::kInternal));
  EXPECT_THAT(PackedDestination(pieces, 120, 1), StatusIs(absl::StatusCode::kInternal));
  EXPECT_TRUE(CheckPackedPieces(pieces, 306).ok());
  EXPECT_THAT(CheckPackedPieces(pieces, 305), StatusIs(absl::StatusCode::kInternal));
  EXPECT_THAT(CheckPackedPieces({{0, 1, nullptr}}, 10), StatusIs(absl::StatusCode::kInternal));
}

}  // namespace
}  // namespace cuimg
