// Grey-level reconstruction on the CPU: Vincent's hybrid (a raster and an anti-raster sweep,
// then a queue of the pixels that can still propagate), with the queue drained best value first
// so that every pixel is final when it leaves it: O(N log N) whatever the geodesic paths, where
// a FIFO queue may revisit a pixel once per level it passes through.
#include "cuimg/reference/reconstruction_reference.h"

#include <cstdint>
#include <cstring>
#include <queue>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "segmentation_steps.h"

namespace cuimg {
namespace internal {
namespace {

struct Neighbour {
  int dx, dy, dz;
  std::int64_t delta;  // in pixels
};

// The neighbours of `connectivity` on `e` (resolved), split by raster order: `before` are
// visited before the centre by a raster scan (x fastest), `after` after it.
struct Neighbourhood {
  std::vector<Neighbour> before;
  std::vector<Neighbour> after;
  std::vector<Neighbour> all;
};

Neighbourhood NeighbourhoodOf(Connectivity connectivity, const Extent& e) {
  const Connectivity c = ResolveConnectivity(connectivity, e);
  const bool volume = c == Connectivity::k6 || c == Connectivity::k18 || c == Connectivity::k26;
  // Offsets with at most this many non-zero coordinates are neighbours.
  const int max_nonzero =
      (c == Connectivity::k4 || c == Connectivity::k6) ? 1 : (c == Connectivity::k26 ? 3 : 2);
  Neighbourhood n;
  for (int dz = volume ? -1 : 0; dz <= (volume ? 1 : 0); ++dz) {
    for (int dy = -1; dy <= 1; ++dy) {
      for (int dx = -1; dx <= 1; ++dx) {
        const int nonzero = (dx != 0) + (dy != 0) + (dz != 0);
        if (nonzero == 0 || nonzero > max_nonzero) continue;
        const Neighbour nb{dx, dy, dz, (dz * e.height + dy) * e.width + dx};
        (nb.delta < 0 ? n.before : n.after).push_back(nb);
        n.all.push_back(nb);
      }
    }
  }
  return n;
}

constexpr std::int64_t kVisitsPerCancelCheck = std::int64_t{1} << 16;

template <bool kDilate, typename T>
class Propagation {
  using O = seg::Order<kDilate>;

 public:
  Propagation(const T* mask, T* r, const Extent& e, Connectivity c, const CancelToken& cancel)
      : mask_(mask), r_(r), e_(e), n_(NeighbourhoodOf(c, e)), cancel_(cancel) {}

  // False when cancelled.
  bool Run() { return Forward() && Backward() && Drain(); }

 private:
  T Mask(std::int64_t i) const { return seg::Prepare<kDilate>(mask_[i]); }

  // Calls fn(j) for every neighbour j (from `nbs`) of pixel i at (x, y, z) inside the image.
  template <typename Fn>
  void ForNeighbours(const std::vector<Neighbour>& nbs, std::int64_t i, std::int64_t x,
                     std::int64_t y, std::int64_t z, const Fn& fn) const {
    const bool interior = x > 0 && y > 0 && x + 1 < e_.width && y + 1 < e_.height &&
                          (e_.depth == 1 || (z > 0 && z + 1 < e_.depth));
    for (const Neighbour& nb : nbs) {
      if (!interior) {
        const std::int64_t xx = x + nb.dx, yy = y + nb.dy, zz = z + nb.dz;
        if (xx < 0 || yy < 0 || zz < 0 || xx >= e_.width || yy >= e_.height || zz >= e_.depth) {
          continue;
        }
      }
      fn(i + nb.delta);
    }
  }

  // r(i) = best of r(i) and min(best neighbour in `nbs`, mask(i)).
  void Update(const std::vector<Neighbour>& nbs, std::int64_t i, std::int64_t x, std::int64_t y,
              std::int64_t z) {
    T best = O::template Worst<T>();
    ForNeighbours(nbs, i, x, y, z, [&](std::int64_t j) { best = O::Win(best, r_[j]); });
    r_[i] = O::Win(r_[i], O::Lose(best, Mask(i)));
  }

  bool Forward() {
    std::int64_t i = 0;
    for (std::int64_t z = 0; z < e_.depth; ++z) {
      for (std::int64_t y = 0; y < e_.height; ++y) {
        if (cancel_.Stopped()) return false;
        for (std::int64_t x = 0; x < e_.width; ++x, ++i) Update(n_.before, i, x, y, z);
      }
    }
    return true;
  }

  // The anti-raster sweep; a pixel that could still raise a neighbour already swept (Vincent's
  // condition: only those can be left unsatisfied) goes into the queue.
  bool Backward() {
    std::int64_t i = e_.Pixels() - 1;
    for (std::int64_t z = e_.depth - 1; z >= 0; --z) {
      for (std::int64_t y = e_.height - 1; y >= 0; --y) {
        if (cancel_.Stopped()) return false;
        for (std::int64_t x = e_.width - 1; x >= 0; --x, --i) {
          Update(n_.after, i, x, y, z);
          bool active = false;
          ForNeighbours(n_.after, i, x, y, z, [&](std::int64_t j) {
            active = active || O::Beats(O::Lose(r_[i], Mask(j)), r_[j]);
          });
          if (active) Push(r_[i], i);
        }
      }
    }
    return true;
  }

  // Best value first: a pixel popped at its current value is final (as in Dijkstra's algorithm,
  // with the bottleneck min(r, mask) for a path's length). Values pop in non-increasing order
  // (dilation) and a raise never beats the value that made it, so a pixel is raised at most once
  // here: the queue holds at most two entries a pixel (its seed and its raise).
  bool Drain() {
    std::int64_t visits = 0;
    while (!queue_.empty()) {
      if (++visits % kVisitsPerCancelCheck == 0 && cancel_.Stopped()) return false;
      const std::uint64_t key = queue_.top();
      queue_.pop();
      const std::int64_t i = static_cast<std::int64_t>(key & 0xFFFFFFFFu);
      const T v = ValueOf(static_cast<std::uint32_t>(key >> 32));
      if (r_[i] != v) continue;  // raised since it was queued; its newer entry came first
      const std::int64_t x = i % e_.width;
      const std::int64_t y = (i / e_.width) % e_.height;
      const std::int64_t z = i / e_.SlicePixels();
      ForNeighbours(n_.all, i, x, y, z, [&](std::int64_t j) {
        const T c = O::Lose(v, Mask(j));
        if (O::Beats(c, r_[j])) {
          r_[j] = c;
          Push(c, j);
        }
      });
    }
    return true;
  }

  // Queue entries are one word: the value's rank bits above the pixel index (images of at most
  // 2^32 pixels), ordered so that the largest word is the best value.
  void Push(T v, std::int64_t i) {
    queue_.push(std::uint64_t{RankOf(v)} << 32 | static_cast<std::uint64_t>(i));
  }
  // Bits whose unsigned order is the order of the values (better is larger).
  static std::uint32_t RankOf(T v) {
    std::uint32_t bits;
    if constexpr (std::is_floating_point_v<T>) {
      std::memcpy(&bits, &v, sizeof(bits));
      bits = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
    } else if constexpr (std::is_signed_v<T>) {
      bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(v) - std::int32_t{INT16_MIN});
    } else {
      bits = static_cast<std::uint32_t>(v);
    }
    return kDilate ? bits : ~bits;
  }
  static T ValueOf(std::uint32_t rank) {
    std::uint32_t bits = kDilate ? rank : ~rank;
    if constexpr (std::is_floating_point_v<T>) {
      bits = (bits & 0x80000000u) ? bits & 0x7FFFFFFFu : ~bits;
      T v;
      std::memcpy(&v, &bits, sizeof(v));
      return v;
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(static_cast<std::int32_t>(bits) + std::int32_t{INT16_MIN});
    } else {
      return static_cast<T>(bits);
    }
  }

  const T* mask_;
  T* r_;
  Extent e_;
  Neighbourhood n_;
  const CancelToken& cancel_;
  std::priority_queue<std::uint64_t> queue_;
};

template <bool kDilate, typename T>
bool Reconstruct(const T* mask, T* r, const Extent& e, Connectivity c, const CancelToken& cancel) {
  const std::int64_t n = e.Pixels();
  for (std::int64_t i = 0; i < n; ++i) r[i] = seg::ClampedMarker<kDilate>(r[i], mask[i]);
  if (!Propagation<kDilate, T>(mask, r, e, c, cancel).Run()) return false;
  if constexpr (std::is_floating_point_v<T>) {
    for (std::int64_t i = 0; i < n; ++i) r[i] = seg::FinalValue(r[i], mask[i]);
  }
  return true;
}

}  // namespace

bool ReconstructInPlace(const ImageView& mask, const ImageView& r, bool dilate,
                        Connectivity connectivity, const CancelToken& cancel) {
  return VisitAnyPixelType(mask.type, [&](auto tag) {
    using T = decltype(tag);
    const T* g = mask.As<const T>();
    return dilate ? Reconstruct<true>(g, r.As<T>(), mask.extent, connectivity, cancel)
                  : Reconstruct<false>(g, r.As<T>(), mask.extent, connectivity, cancel);
  });
}

}  // namespace internal

absl::Status ReconstructionReferenceInto(const ImageView& marker, const ImageView& mask,
                                         const ImageView& output, ReconstructionMethod method,
                                         Connectivity connectivity, const CancelToken& cancel) {
  for (const ImageView* v : {&marker, &output}) {
    if (v->type != mask.type || v->extent != mask.extent || v->channels != 1 ||
        mask.channels != 1) {
      return InvalidFieldError(ErrorReason::kShapeMismatch, v == &marker ? "marker" : "output",
                               "must be one channel of the mask's type and extent");
    }
  }
  CUIMG_RETURN_IF_ERROR(ValidateConnectivity(connectivity, mask.extent, "connectivity"));
  if (mask.extent.Pixels() > kMaxReconstructionPixels) {
    return InvalidFieldError(ErrorReason::kLimitExceeded, "mask",
                             "reconstruction takes images of at most 2^32 pixels");
  }
  if (output.data != marker.data) std::memcpy(output.data, marker.data, mask.Bytes());
  internal::ReconstructInPlace(mask, output, method == ReconstructionMethod::kDilation,
                               connectivity, cancel);
  return cancel.Check();
}

std::int64_t ReconstructionReferenceQueueBytes(const Extent& extent) {
  return 2 * 2 * 8 * extent.Pixels();
}

}  // namespace cuimg
