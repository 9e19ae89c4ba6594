// Planning a streamed volume (ProcessVolumeStream): which input slices each output slab needs, and
// which output slabs the slices received so far allow. Pure functions, no gRPC.
#ifndef CUIMG_SERVER_VOLUME_STREAM_PLAN_H_
#define CUIMG_SERVER_VOLUME_STREAM_PLAN_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "cuimg/kernels/morphology_types.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// Output slices [out_begin, out_end) are computed from input slices [in_begin, in_end): the
// output slices plus the reach either side, clipped to the volume.
struct SlabWindow {
  std::int64_t out_begin = 0;
  std::int64_t out_end = 0;
  std::int64_t in_begin = 0;
  std::int64_t in_end = 0;
  friend bool operator==(const SlabWindow& a, const SlabWindow& b) {
    return a.out_begin == b.out_begin && a.out_end == b.out_end && a.in_begin == b.in_begin &&
           a.in_end == b.in_end;
  }
};

// The slices either side of an output slice whose input it depends on: for each primitive pass
// (erosion or dilation; compound steps and iterations expand as PrimitivePassCount says) the
// element's larger z extent from its anchor, summed over the chain. 0 for per-slice (2D) elements.
// A slab computed with this many slices of halo either side (fewer at the volume's ends, where the
// whole volume's border applies too) equals the whole volume's result on its own slices.
int MorphologyZReach(const std::vector<MorphologyStep>& steps);

// MorphologyZReach for morphology; 0 for Gradient (slice by slice). A chain with a global step
// streams slab by slab only up to that step (SplitAtFirstGlobalStep): its slabs' reach is
// MorphologyZReach of the steps before it.
int VolumeStreamZReach(const VolumeStreamJob& job);

// The steps of `steps` before its first global one (IsGlobalStep; all of them when none is
// global), and the rest (empty when none is global): what a streamed volume runs slab by slab,
// and what it runs once the whole volume is in (volume_stream_whole.h).
std::pair<std::vector<MorphologyStep>, std::vector<MorphologyStep>> SplitAtFirstGlobalStep(
    const std::vector<MorphologyStep>& steps);

// The next slab that can be computed once input slices [0, received) of a `depth`-slice volume
// have arrived, starting at output slice `next_out`, at most `max_out_slices` (>= 1) long; nullopt
// when none can be yet (or all have been). Slice z needs input up to z + reach, except that the
// volume's last slices need only what exists.
std::optional<SlabWindow> NextSlabWindow(std::int64_t depth, int reach, std::int64_t received,
                                         std::int64_t next_out, std::int64_t max_out_slices);

}  // namespace cuimg

#endif  // CUIMG_SERVER_VOLUME_STREAM_PLAN_H_
