// DetectPlan's construction and its host-side accessors: the levels' jobs and grids of the two
// launches (hog_detect.cu), frames included, and the hits read back. Host code only; built with
// -fmad=false and -ffp-contract=off as the kernels are, so that the weight tables it fills
// (FillAxisWeights) round as they always did.
#include "hog_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/detect_geometry.h"
#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/pyramid_types.h"

namespace cuimg {
namespace {

using hog::BlockJob;
using hog::BlocksParams;
using hog::kHitsHeader;
using hog::kMaxJobs;
using hog::kParamBlocks;
using hog::kParamFloats;
using hog::kParamFrom;
using hog::kScoreLanes;
using hog::kScoreRows;
using hog::kStripBlocksX;
using hog::kStripMaxBlocksY;
using hog::kWindowScoreX;
using hog::kWindowScoreY;
using hog::ScoreJob;
using hog::ScoresParams;

std::size_t AlignUp(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// The block rows a strip of each level. The CUDA blocks start in level order; a strip gets as
// many block rows as each resident CUDA block still has strip rows of work left (this level's and
// the later ones', every frame's), within [3, kStripMaxBlocksY]: the big levels take tall strips
// (fewer halo rows) and the launch ends in short ones, so the multiprocessors run out of work
// together. Run 210 on the H100 (one frame): 1080p 318 us against 330 with 8 rows for every level
// (and 320-326 with other bounds), 768x576 84 against 87. With 8 frames, 27 of 1080p's 44 levels
// reached the former bound of 16 rows (7 with one frame).
std::vector<int> StripRowsOf(const DetectGeometry& g, int frames) {
  constexpr int kFewestRows = 3;
  const double resident = ResidentStrips();
  std::vector<int> rows(g.levels.size());
  double left = 0;  // strip rows of levels i.. (14 blocks across, one down), every frame
  for (std::size_t i = g.levels.size(); i-- > 0;) {
    const DetectLevel& level = g.levels[i];
    left += static_cast<double>(frames) * ((level.blocks_x + kStripBlocksX - 1) / kStripBlocksX) *
            level.blocks_y;
    rows[i] = std::clamp(static_cast<int>(left / resident), kFewestRows, kStripMaxBlocksY);
  }
  return rows;
}

// CUDA blocks of the exact pass (hog_filter.h): one for each of the few hundred candidates of a
// few frames at once (16 an SM fit); more candidates (a low hit_threshold) loop.
constexpr std::int64_t kExactGrid = 2048;

// The filter's lower bound for candidates (hog_filter.h): hit_threshold - S / 128, rounded down
// to a float, S the sum of the model blocks' weight norms.
float FilterLow(const HogModel& model, double threshold) {
  double norms = 0;
  const int blocks = model.BlocksX() * model.BlocksY();
  for (int b = 0; b < blocks; ++b) {
    double squares = 0;
    for (int k = 0; k < kHogBlockFeatures; ++k) {
      const double w = model.weights[static_cast<std::size_t>(b) * kHogBlockFeatures + k];
      squares += w * w;
    }
    norms += std::sqrt(squares);
  }
  const double low = threshold - norms / 128;
  // Thresholds past float's range (finite doubles, which the request allows) list every window
  // or none; the conversion of such a double to float would be undefined.
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (low < -std::numeric_limits<float>::max()) return -kInf;
  if (low > std::numeric_limits<float>::max()) return kInf;
  float f = static_cast<float>(low);
  if (static_cast<double>(f) > low) f = std::nextafter(f, -kInf);
  return f;
}

absl::Status TooLarge(int frames, const Extent& extent, const std::string& what) {
  return InvalidFieldError(
      ErrorReason::kValueOutOfRange, "frames",
      absl::StrCat(frames, " frames of ", extent.width, "x", extent.height, " take ", what));
}

// The chunk of levels [begin, end): its jobs and both scores kernels' tilings, every frame.
// `offset` (floats) is where the next level's features go in a frame's workspace.
absl::StatusOr<DetectChunk> PlanChunk(const Extent& extent, int channels, int frames,
                                      const HogModel& model, const DetectSpec& spec,
                                      const DetectGeometry& g, const std::vector<int>& strip_rows,
                                      std::size_t begin, std::size_t end, std::size_t* offset) {
  DetectChunk chunk;
  BlocksParams& bp = chunk.blocks;
  ScoresParams& sp = chunk.scores;
  bp.src_w = static_cast<int>(extent.width);
  bp.src_h = static_cast<int>(extent.height);
  bp.channels = channels;
  bp.padding = g.padding;
  bp.gamma = spec.gamma_correction ? 1 : 0;
  bp.reset_count = begin == 0 ? 1 : 0;
  hog::FillAxisWeights(bp.row_weight);
  hog::FillAxisWeights(bp.column_weight);
  sp.capacity = static_cast<unsigned int>(frames * g.windows);  // Create checked the range
  sp.frames = frames;
  sp.levels = static_cast<int>(g.levels.size());
  sp.threshold = spec.hit_threshold;
  sp.bias = model.bias;
  sp.step = g.win_stride / kHogBlockStride;
  sp.model_blocks_x = model.BlocksX();
  sp.model_blocks_y = model.BlocksY();
  ScoresParams& wp = chunk.per_window_scores;
  wp = sp;
  std::int64_t block_grid = 0;
  std::int64_t score_grid = 0;
  std::int64_t per_window_grid = 0;
  std::int64_t filter_grid = 0;
  ScoresParams& fp = chunk.filter.s;
  fp = sp;
  for (std::size_t i = begin; i < end; ++i) {
    const DetectLevel& level = g.levels[i];
    const int j = static_cast<int>(i - begin);
    BlockJob& bj = bp.jobs[j];
    bj.scale_x = ResizeScale(extent.width, level.width);
    bj.scale_y = ResizeScale(extent.height, level.height);
    bj.width = level.width;
    bj.height = level.height;
    bj.blocks_x = level.blocks_x;
    bj.blocks_y = level.blocks_y;
    bj.tiles_x = (level.blocks_x + kStripBlocksX - 1) / kStripBlocksX;
    bj.pitch = static_cast<int>(AlignUp(level.blocks_x, 32));
    bj.direct = level.width == extent.width && level.height == extent.height;
    bj.feature_offset = static_cast<long long>(*offset);
    *offset = AlignUp(
        *offset + static_cast<std::size_t>(level.blocks_y) * kHogBlockFeatures * bj.pitch, 64);
    static_assert(kHogBlockFeatures == 4 * hog::kFeatureQuads, "a block's features in quads");
    bj.strip_rows = strip_rows[i];
    bj.strips = bj.tiles_x * ((level.blocks_y + bj.strip_rows - 1) / bj.strip_rows);
    bp.first_block[j] = static_cast<int>(block_grid);
    block_grid += std::int64_t{frames} * bj.strips;

    // Both scores kernels tile the frames' windows side by side along x.
    const std::int64_t columns = std::int64_t{frames} * level.windows_x;
    ScoreJob& sj = sp.jobs[j];
    sj.feature_offset = bj.feature_offset;
    sj.pitch = bj.pitch;
    sj.windows_x = level.windows_x;
    sj.windows_y = level.windows_y;
    sj.level = static_cast<int>(i);
    ScoreJob& wj = wp.jobs[j];
    wj = sj;
    sj.tiles_x = static_cast<int>((columns + kScoreLanes - 1) / kScoreLanes);
    sp.first_block[j] = static_cast<int>(score_grid);
    score_grid += std::int64_t{sj.tiles_x} * ((level.windows_y + kScoreRows - 1) / kScoreRows);
    ScoreJob& fj = fp.jobs[j];
    fj = sj;  // a tile holds one frame's windows (FilterTileOf)
    fj.tiles_x = (level.windows_x + hog::kFilterColumns - 1) / hog::kFilterColumns;
    fp.first_block[j] = static_cast<int>(filter_grid);
    filter_grid += std::int64_t{frames} * fj.tiles_x * hog::FilterTilesY(fj);
    wj.tiles_x = static_cast<int>((columns + kWindowScoreX - 1) / kWindowScoreX);
    wp.first_block[j] = static_cast<int>(per_window_grid);
    per_window_grid +=
        std::int64_t{wj.tiles_x} * ((level.windows_y + kWindowScoreY - 1) / kWindowScoreY);
    constexpr std::int64_t kMaxGrid = std::numeric_limits<int>::max();
    if (block_grid > kMaxGrid || score_grid > kMaxGrid || per_window_grid > kMaxGrid ||
        filter_grid > kMaxGrid) {
      return TooLarge(frames, extent, "more than 2^31 - 1 CUDA blocks a launch");
    }
  }
  bp.num_jobs = sp.num_jobs = wp.num_jobs = fp.num_jobs = static_cast<int>(end - begin);
  chunk.filter_grid = fp.first_block[fp.num_jobs] = static_cast<int>(filter_grid);
  // The exact pass's CUDA blocks loop over the candidates, however many the filter lists.
  chunk.exact_grid = static_cast<int>(std::min<std::int64_t>(kExactGrid, sp.capacity));
  chunk.block_grid = bp.first_block[bp.num_jobs] = static_cast<int>(block_grid);
  chunk.score_grid = sp.first_block[sp.num_jobs] = static_cast<int>(score_grid);
  chunk.per_window_grid = wp.first_block[wp.num_jobs] = static_cast<int>(per_window_grid);
  return chunk;
}

}  // namespace

absl::StatusOr<DetectPlan> DetectPlan::Create(const Extent& extent, int channels,
                                              const HogModel& model, const DetectSpec& spec,
                                              int frames) {
  // The plan reads U8 pixels (its precondition); the rest of the input rule is checked here.
  CUIMG_RETURN_IF_ERROR(ValidateDetectInput(PixelType::kU8, extent, channels, "image"));
  if (frames < 1 || frames > kMaxDetectFrames) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "frames",
                             absl::StrCat(frames, " is not in [1, ", kMaxDetectFrames, "]"));
  }
  CUIMG_RETURN_IF_ERROR(ValidateHogModel(model));
  // The blocks kernel addresses input rows by 32-bit byte offsets.
  if (extent.Pixels() * channels >= (std::int64_t{1} << 31)) {
    return InvalidFieldError(
        ErrorReason::kValueOutOfRange, "extent",
        absl::StrCat(extent.width, "x", extent.height, "x", channels, " is 2 GiB or more"));
  }
  auto impl = std::make_shared<Impl>();
  CUIMG_ASSIGN_OR_RETURN(impl->geometry,
                         PlanDetection(extent, model.window_width, model.window_height, spec));
  impl->channels = channels;
  impl->frames = frames;
  const DetectGeometry& g = impl->geometry;
  // The hit count and the records' frame * levels + level are 32-bit.
  if (frames * g.windows > std::numeric_limits<std::uint32_t>::max() ||
      std::int64_t{frames} * static_cast<std::int64_t>(g.levels.size()) >
          std::numeric_limits<int>::max()) {
    return TooLarge(frames, extent, "more than 2^32 - 1 windows");
  }
  const std::vector<int> strip_rows = StripRowsOf(g, frames);
  std::size_t offset = 0;  // floats
  for (std::size_t begin = 0; begin < g.levels.size(); begin += kMaxJobs) {
    const std::size_t end = std::min(g.levels.size(), begin + kMaxJobs);
    CUIMG_ASSIGN_OR_RETURN(DetectChunk chunk, PlanChunk(extent, channels, frames, model, spec, g,
                                                        strip_rows, begin, end, &offset));
    impl->chunks.push_back(chunk);
  }
  // Each frame's features start 256-byte aligned: every level's offset is a multiple of 64.
  impl->frame_bytes = offset * sizeof(float);
  impl->filter = !impl->chunks.empty() && hog::FilterApplies(g.win_stride / kHogBlockStride,
                                                             model.BlocksX(), model.BlocksY());
  if (impl->filter) {
    // A share a frame (the header's too), so that the workspace grows with the frames.
    impl->candidate_bytes =
        frames * AlignUp(hog::kCandidatesHeader +
                             static_cast<std::size_t>(g.windows) * sizeof(hog::Candidate),
                         256);
  }
  const float low = FilterLow(model, spec.hit_threshold);
  for (DetectChunk& chunk : impl->chunks) {
    chunk.blocks.frame_floats = static_cast<long long>(offset);
    chunk.scores.frame_floats = static_cast<long long>(offset);
    chunk.per_window_scores.frame_floats = static_cast<long long>(offset);
    chunk.filter.s.frame_floats = static_cast<long long>(offset);
    chunk.filter.low = low;
  }
  const int model_blocks = model.BlocksX() * model.BlocksY();
  if (model_blocks <= kParamBlocks) {
    impl->weight_quads.reserve(static_cast<std::size_t>(model_blocks) * kParamFloats);
    for (int b = 0; b < model_blocks; ++b) {
      const auto first = model.weights.begin() + b * kHogBlockFeatures + kParamFrom * 4;
      impl->weight_quads.insert(impl->weight_quads.end(), first, first + kParamFloats);
    }
  }
  DetectPlan plan;
  plan.impl_ = std::move(impl);
  return plan;
}

const DetectGeometry& DetectPlan::geometry() const { return impl_->geometry; }
int DetectPlan::frames() const { return impl_->frames; }
std::size_t DetectPlan::WorkspaceBytes() const {
  return impl_->feature_bytes() + impl_->candidate_bytes;
}
std::size_t DetectPlan::FeatureBytes() const { return impl_->feature_bytes(); }
std::size_t DetectPlan::HitsBytes() const {
  return HitsPrefixBytes(static_cast<std::size_t>(impl_->frames * impl_->geometry.windows));
}
std::size_t DetectPlan::HitsPrefixBytes(std::size_t hits) {
  return kHitsHeader + hits * sizeof(DeviceHit);
}
DetectPlan::FeaturePlane DetectPlan::Features(int level, int frame) const {
  const BlockJob& job = impl_->chunks[level / kMaxJobs].blocks.jobs[level % kMaxJobs];
  const auto frame_floats = static_cast<std::int64_t>(impl_->frame_bytes / sizeof(float));
  return FeaturePlane{frame * frame_floats + job.feature_offset, job.pitch};
}

int DetectPlan::LaunchCount() const {
  return (impl_->filter ? 3 : 2) * static_cast<int>(impl_->chunks.size());
}

std::uint32_t DetectPlan::FilterCandidates(const void* host_workspace) const {
  if (!impl_->filter) return 0;
  std::uint32_t count = 0;
  std::memcpy(&count, static_cast<const std::uint8_t*>(host_workspace) + impl_->feature_bytes(),
              sizeof(count));
  return count;
}

std::uint32_t DetectPlan::HitCount(const void* host_hits) {
  std::uint32_t count = 0;
  std::memcpy(&count, host_hits, sizeof(count));
  return count;
}

namespace {

WindowHit HitAt(const void* host_hits, std::uint32_t i) {
  DeviceHit h;
  std::memcpy(&h, static_cast<const std::uint8_t*>(host_hits) + kHitsHeader + i * sizeof(DeviceHit),
              sizeof(h));
  return WindowHit{h.level, h.window_x, h.window_y, h.score};
}

}  // namespace

std::vector<WindowHit> DetectPlan::DecodeHits(const void* host_hits, std::uint32_t count) {
  std::vector<WindowHit> out(count);
  for (std::uint32_t i = 0; i < count; ++i) out[i] = HitAt(host_hits, i);
  std::sort(out.begin(), out.end(), HitOrder);
  return out;
}

std::vector<std::vector<WindowHit>> DetectPlan::DecodeFrameHits(const void* host_hits,
                                                                std::uint32_t count) const {
  const int levels = static_cast<int>(impl_->geometry.levels.size());
  std::vector<std::vector<WindowHit>> out(impl_->frames);
  for (std::uint32_t i = 0; i < count; ++i) {
    WindowHit h = HitAt(host_hits, i);
    const int frame = h.level / levels;  // the kernels' records are in range
    h.level -= frame * levels;
    out[frame].push_back(h);
  }
  for (std::vector<WindowHit>& frame : out) std::sort(frame.begin(), frame.end(), HitOrder);
  return out;
}

namespace {

// "16" or "16..3": the strips' block rows, first level to last.
std::string StripRowsText(const DetectPlan::Impl& plan) {
  if (plan.chunks.empty()) return "0";
  const int first = plan.chunks.front().blocks.jobs[0].strip_rows;
  const BlocksParams& last = plan.chunks.back().blocks;
  const int final_rows = last.jobs[last.num_jobs - 1].strip_rows;
  return first == final_rows ? absl::StrCat(first) : absl::StrCat(first, "..", final_rows);
}

}  // namespace

std::string DetectPlan::Describe() const {
  const Impl& plan = *impl_;
  std::int64_t block_grid = 0;
  std::int64_t score_grid = 0;
  for (const DetectChunk& c : plan.chunks) {
    block_grid += c.block_grid;
    score_grid += plan.filter ? c.filter_grid : c.score_grid;
  }
  const int tile_rows = plan.filter ? hog::kFilterRows : kScoreRows;
  return absl::StrCat(plan.frames > 1 ? absl::StrCat(plan.frames, " frames of ") : "",
                      plan.geometry.levels.size(), " levels, ", plan.geometry.windows, " windows, ",
                      plan.geometry.blocks, " blocks; launches ", LaunchCount(), " (", block_grid,
                      " strips of ", kStripBlocksX, "x", StripRowsText(plan), " blocks, ",
                      score_grid, " tiles of ", kScoreLanes, "x", tile_rows, " windows",
                      plan.filter ? ", filtered" : "", ")");
}

}  // namespace cuimg
