// ReconstructionPlan's internals, shared by its kernels (reconstruction.cu) and their host
// emulation (reconstruction_emulation.cu).
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_PLAN_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_PLAN_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuimg/kernels/label_types.h"
#include "cuimg/kernels/reconstruction.h"
#include "segmentation/reconstruction_brick.h"
#include "segmentation/reconstruction_rules.h"

namespace cuimg {

struct ReconstructionPlan::Impl {
  PixelType type = PixelType::kU8;
  Extent extent;
  bool dilate = true;
  bool volume = false;
  Connectivity connectivity = Connectivity::kDefault;  // resolved
  int max_nonzero = 1;
  // ReconstructionTuning: one queue, else rounds.
  bool queue = true;
  std::int64_t bricks_x = 0, bricks_y = 0, bricks_z = 0;
  std::int64_t bricks = 0;
  std::int64_t first_stride = 1;  // seg::FirstRunBrick
  // Workspace: a stamp per brick (the last round it was put on a worklist for), three worklists
  // (the current round's, the next one's, and one being reset), then the counters.
  std::size_t stamps_offset = 0;
  std::size_t lists_offset[3] = {};
  std::size_t counters_offset = 0;
  // Per round (the first kProfiledRounds): the worklist's length and the bricks' iterations.
  std::size_t round_bricks_offset = 0;
  std::size_t round_iterations_offset = 0;
  // The queue's slots (8 bytes, 2 a brick; ReconstructionSchedule::kQueue).
  std::size_t queue_offset = 0;
  // The union-find route (ReconstructionRoute::kAuto): the two values found, the seed indicator
  // (a byte a pixel) and the labelling's workspace.
  bool two_levels = false;
  std::size_t levels_offset = 0;
  std::size_t indicator_offset = 0;
  std::size_t fill_offset = 0;
  std::size_t workspace_bytes = 0;
};

namespace seg {

// The counters in the workspace: per worklist its length and how far the round has taken it,
// and statistics.
struct WorklistCounters {
  int count[3];
  int fetch[3];
  int busy_rounds;
  int pad;
  unsigned long long bricks_run;
  unsigned long long iterations;
};

// The order bricks first run in, entry i: brick i * stride mod bricks, with a stride coprime with
// the count near 0.618 of it, so that entries taken together lie far apart. In raster order the
// thousands of bricks running at once hold every brick's neighbours, so each runs on its
// neighbours' first values and again when they change (c1, hmax on the CT: 825,362 runs off the
// queue against 374,844 one at a time in the emulation).
inline std::int64_t FirstRunStride(std::int64_t bricks) {
  std::int64_t stride = static_cast<std::int64_t>(0.6180339887 * static_cast<double>(bricks));
  auto gcd = [](std::int64_t a, std::int64_t b) {
    while (b != 0) {
      const std::int64_t t = a % b;
      a = b;
      b = t;
    }
    return a;
  };
  while (stride > 1 && gcd(stride, bricks) != 1) --stride;
  return stride < 1 ? 1 : stride;
}
CUIMG_SEG_HD std::uint32_t FirstRunBrick(std::int64_t i, std::int64_t bricks, std::int64_t stride) {
  return static_cast<std::uint32_t>(i * stride % bricks);
}

// The workspace's share for the counters of either schedule (WorklistCounters, or the queue's).
inline constexpr std::size_t kCountersBytes = 1024;

// Rounds whose worklist length and iterations the workspace keeps (ReconstructionStats::profile).
inline constexpr int kProfiledRounds = 4096;

// What the device's pass over the mask and the clamped marker found: the bit patterns of up to
// two values (kNoValue: none), and whether there were more (or NaN).
struct TwoLevels {
  static constexpr unsigned long long kNoValue = ~0ull;
  unsigned long long value[2];
  int more;
  int pad;
};

// The binary reconstruction that a two-valued (lo < hi) mask and clamped marker reduce to, as a
// FillUnseededComponents: by dilation the components of {mask = hi} seeded where the marker is hi
// keep their value and the rest of them become lo (pixels where the mask is lo stay lo); by
// erosion, {mask = lo} seeded where the marker is lo, the rest becoming hi. `seed`: the marker's
// value that seeds (a pixel of the indicator is 1 where the marker holds it).
template <typename T>
SeededFillSpec TwoLevelFill(bool dilate, T lo, T hi, Connectivity connectivity, T* seed) {
  *seed = dilate ? hi : lo;
  SeededFillSpec spec;
  spec.connectivity = connectivity;
  spec.range = std::array<double, 2>{static_cast<double>(*seed), static_cast<double>(*seed)};
  spec.seed_marker = true;
  spec.fill = static_cast<double>(dilate ? lo : hi);
  return spec;
}

// The brick kinds the kernels are compiled for: 2D or 3D, and face connectivity (4 or 6
// neighbours: ProcessTile's kFace) or not. Returns fn(std::bool_constant<volume>{},
// std::bool_constant<face>{}).
template <typename Fn>
auto VisitBrickKind(const ReconstructionPlan::Impl& p, Fn&& fn) {
  const bool face = p.max_nonzero == 1;
  if (p.volume) {
    if (face) return fn(std::true_type{}, std::true_type{});
    return fn(std::true_type{}, std::false_type{});
  }
  if (face) return fn(std::false_type{}, std::true_type{});
  return fn(std::false_type{}, std::false_type{});
}

template <typename T>
BrickArgs<T> ArgsOf(const ReconstructionPlan::Impl& p, const T* mask, T* r) {
  BrickArgs<T> a;
  a.mask = mask;
  a.r = r;
  // Create keeps every index under 2^31 (BrickIndex).
  a.width = static_cast<BrickIndex>(p.extent.width);
  a.height = static_cast<BrickIndex>(p.extent.height);
  a.depth = static_cast<BrickIndex>(p.extent.depth);
  a.bricks_x = static_cast<BrickIndex>(p.bricks_x);
  a.bricks_y = static_cast<BrickIndex>(p.bricks_y);
  a.bricks_z = static_cast<BrickIndex>(p.bricks_z);
  a.max_nonzero = p.max_nonzero;
  a.flip = !p.dilate;
  return a;
}

// The marker clamped by the mask, NaN where the mask is NaN (reconstruction_rules.h), in place:
// what every pixel holds before the first round.
template <bool kDilate, typename T>
CUIMG_SEG_HD T StartValue(T marker, T mask) {
  return FinalValue(ClampedMarker<kDilate>(marker, mask), mask);
}

// ReconstructionSchedule::kQueue (reconstruction_queue.cu): after the clamp, the
// bricks run off one queue until none is left; the host looks at the cancel token between
// launches of a budget of brick runs. The stats count launches as rounds.
absl::Status RunQueue(const ReconstructionPlan::Impl& p, const void* mask, void* r,
                      std::uint8_t* workspace, cudaStream_t stream, const CancelToken& cancel,
                      ReconstructionStats* stats);

}  // namespace seg
}  // namespace cuimg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_RECONSTRUCTION_PLAN_H_
