// A packed output (a pyramid's levels, one after another) received into host memory in pieces,
// so that each piece can be one page-locked buffer of the message pool (pinned_message_pool.h)
// instead of one large pageable one.
#ifndef CUIMG_SERVER_PACKED_PIECES_H_
#define CUIMG_SERVER_PACKED_PIECES_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuimg/kernels/pyramid_types.h"

namespace cuimg {

// Host memory for bytes [offset, offset + bytes) of a packed output.
struct PackedPiece {
  std::size_t offset = 0;
  std::size_t bytes = 0;
  void* data = nullptr;
};

// Consecutive levels grouped into pieces of at most `max_bytes` each (a level larger than that
// gets a piece of its own); each piece runs from its first level's start to its last level's
// end. `data` is left null for the caller to fill.
std::vector<PackedPiece> GroupPyramidLevels(const std::vector<PyramidLevel>& levels,
                                            std::size_t max_bytes);

// INTERNAL unless every piece has memory and lies within the packed output's `total` bytes.
absl::Status CheckPackedPieces(const std::vector<PackedPiece>& pieces, std::size_t total);

// Where bytes [offset, offset + bytes) of the packed output go: inside one piece, or INTERNAL.
absl::StatusOr<void*> PackedDestination(const std::vector<PackedPiece>& pieces, std::size_t offset,
                                        std::size_t bytes);

}  // namespace cuimg

#endif  // CUIMG_SERVER_PACKED_PIECES_H_
