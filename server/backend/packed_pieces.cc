#include "server/backend/packed_pieces.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace cuimg {

std::vector<PackedPiece> GroupPyramidLevels(const std::vector<PyramidLevel>& levels,
                                            std::size_t max_bytes) {
  std::vector<PackedPiece> pieces;
  for (const PyramidLevel& level : levels) {
    const std::size_t end = level.offset_bytes + level.bytes;
    if (!pieces.empty() && end - pieces.back().offset <= max_bytes) {
      pieces.back().bytes = end - pieces.back().offset;
      continue;
    }
    pieces.push_back(PackedPiece{level.offset_bytes, level.bytes, nullptr});
  }
  return pieces;
}

absl::Status CheckPackedPieces(const std::vector<PackedPiece>& pieces, std::size_t total) {
  for (const PackedPiece& p : pieces) {
    if (p.data == nullptr || p.offset > total || p.bytes > total - p.offset) {
      return absl::InternalError(absl::StrCat("a packed output piece [", p.offset, ", +", p.bytes,
                                              ") lies outside the ", total,
                                              " bytes or has no memory"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> PackedDestination(const std::vector<PackedPiece>& pieces, std::size_t offset,
                                        std::size_t bytes) {
  for (const PackedPiece& p : pieces) {
    if (p.data != nullptr && offset >= p.offset && bytes <= p.bytes &&
        offset - p.offset <= p.bytes - bytes) {
      return static_cast<std::uint8_t*>(p.data) + (offset - p.offset);
    }
  }
  return absl::InternalError(
      absl::StrCat("no packed output piece holds bytes [", offset, ", +", bytes, ")"));
}

}  // namespace cuimg
