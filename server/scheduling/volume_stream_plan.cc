#include "server/scheduling/volume_stream_plan.h"

#include <algorithm>

namespace cuimg {

int MorphologyZReach(const std::vector<MorphologyStep>& steps) {
  int reach = 0;
  for (const MorphologyStep& step : steps) {
    const StructuringElement& e = step.element;
    // Erosion and dilation use the element and its reflection; the larger side covers both.
    const int radius = std::max(e.anchor_z(), e.depth() - 1 - e.anchor_z());
    reach += radius * PrimitivePassCount(step);
  }
  return reach;
}

int VolumeStreamZReach(const VolumeStreamJob& job) {
  if (job.op != VolumeStreamJob::Op::kMorphology) return 0;
  return MorphologyZReach(SplitAtFirstGlobalStep(job.steps).first);
}

std::pair<std::vector<MorphologyStep>, std::vector<MorphologyStep>> SplitAtFirstGlobalStep(
    const std::vector<MorphologyStep>& steps) {
  const auto first = std::find_if(steps.begin(), steps.end(), IsGlobalStep);
  return {std::vector<MorphologyStep>(steps.begin(), first),
          std::vector<MorphologyStep>(first, steps.end())};
}

std::optional<SlabWindow> NextSlabWindow(std::int64_t depth, int reach, std::int64_t received,
                                         std::int64_t next_out, std::int64_t max_out_slices) {
  const std::int64_t computable =
      received >= depth ? depth : std::max<std::int64_t>(0, received - reach);
  const std::int64_t out_end =
      std::min(computable, next_out + std::max<std::int64_t>(1, max_out_slices));
  if (out_end <= next_out) return std::nullopt;
  SlabWindow w;
  w.out_begin = next_out;
  w.out_end = out_end;
  w.in_begin = std::max<std::int64_t>(0, next_out - reach);
  w.in_end = std::min(depth, out_end + reach);
  return w;
}

}  // namespace cuimg
