// DetectPlan: HOG block histograms of every pyramid level in one launch, SVM scores of every
// window in a second one (hog_detect.h has the contract). The per-pixel arithmetic is
// hog_math.h's and the scores' hog_scores.h's, shared with the CPU reference; this file is built
// with -fmad=false, so every product and sum rounds as the reference's do (fmaf is written where
// fusion is wanted).
#include "cuimg/kernels/hog_detect.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/div_small.cuh"
#include "common/kernel_attributes.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/detect_geometry.h"
#include "cuimg/kernels/pyramid_types.h"
#include "hog_plan.h"

namespace cuimg {
namespace {

using hog::BlockJob;
using hog::BlocksParams;
using hog::kFeatureQuads;
using hog::kHitsHeader;
using hog::kMaxJobs;
using hog::kParamBlocks;
using hog::kParamFloats;
using hog::kParamFrom;
using hog::kScoreLanes;
using hog::kScoreMaxWarps;
using hog::kScoreRows;
using hog::kStripBlocksX;
using hog::kStripMaxBlocksY;
using hog::kStripThreads;
using hog::kWindowScoreThreads;
using hog::kWindowScoreX;
using hog::kWindowScoreY;
using hog::ScoreJob;
using hog::ScoresKernelParams;
using hog::ScoresParams;
using hog::StripSmem;
using hog::StripThread;
using hog::TilePos;

std::size_t AlignUp(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// The job a CUDA block belongs to: how many first_block entries are <= block, minus one.
__device__ __forceinline__ int FindJob(const int* first_block, int num_jobs, int block) {
  const int lane = threadIdx.x & 31;
  const unsigned low = __ballot_sync(0xffffffffu, lane < num_jobs && first_block[lane] <= block);
  const unsigned high =
      __ballot_sync(0xffffffffu, lane + 32 < num_jobs && first_block[lane + 32] <= block);
  return __popc(low) + __popc(high) - 1;
}

// The sum over a HOG block's 8 threads (lanes 8k..8k+7: 4 cells x 2 halves), the same in every
// lane: ((h0 + h1) + (h2 + h3)) + ((h4 + h5) + (h6 + h7)) by cell and half (EmulateBlocks' order).
__device__ __forceinline__ float BlockSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  return v + __shfl_xor_sync(0xffffffffu, v, 4);
}

// One CUDA block: a strip of 14 x 8 HOG blocks of one level (hog_strip.h).
template <int kChannels>
__global__ void __launch_bounds__(kStripThreads)
    HogBlocksKernel(const __grid_constant__ BlocksParams p) {
  constexpr int kPlanes = kChannels == 1 ? 1 : 3;
  __shared__ StripSmem s;
  const int t = threadIdx.x;
  const int block = static_cast<int>(blockIdx.x);
  if (p.reset_count && block == 0 && t == 0) *p.hit_count = 0;
  const int j = FindJob(p.first_block, p.num_jobs, block);
  const BlockJob& job = p.jobs[j];
  // Exact: a level has < 2^21 strips (DivSmall's rule).
  const int strip_y = DivSmall(block - p.first_block[j], job.inv_tiles_x);
  const TilePos strip{block - p.first_block[j] - strip_y * job.tiles_x, strip_y};
  StripThread<kPlanes> th;
  hog::StartStrip<kChannels>(p, job, strip, t, s, th);
  __syncthreads();
  for (int period = 0; period <= job.strip_rows; ++period) {
    hog::SamplePeriod<kChannels>(p, job, period, t, s, th);
    __syncthreads();
    hog::VotePeriod(p, job, period, t, s, th);
    __syncthreads();
    if (period > 0) {
      float h[kHogBins];
      hog::HorizontalHalf(p, period, t, s, h);
#pragma unroll
      for (int k = 0; k < kHogBins; ++k) h[k] += __shfl_xor_sync(0xffffffffu, h[k], 1);
      const float ss = BlockSum(hog::CellHalf(t, h));
      const float ss2 = BlockSum(hog::ClipCell(h, ss));
      hog::StoreCell(p, job, strip, period, t, h, hog::RenormScale(ss2));
    }
  }
}

// CUDA blocks of the blocks kernel resident at once on the current device: its multiprocessors
// (CurrentDeviceLimits) x the occupancy the kernel's registers and shared memory allow (6 on the
// H100, found once per process; 6 where there is no device: plans for the emulation).
int ResidentStrips() {
  static const int per_sm = [] {
    int blocks = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, HogBlocksKernel<3>, kStripThreads,
                                                      0) != cudaSuccess ||
        blocks <= 0) {
      (void)cudaGetLastError();  // a machine without a GPU: not an error of any later call
      return 6;
    }
    return blocks;
  }();
  return CurrentDeviceLimits().multiprocessors * per_sm;
}

// The block rows a strip of each level. The CUDA blocks start in level order; a strip gets as
// many block rows as each resident CUDA block still has strip rows of work left (this level's and
// the later ones'), within [3, 16]: the big levels take tall strips (fewer halo rows) and the
// launch ends in short ones, so the multiprocessors run out of work together. Run 210 on the H100:
// 1080p 318 us against 330 with 8 rows for every level (and 320-326 with other bounds), 768x576 84
// against 87.
std::vector<int> StripRowsOf(const DetectGeometry& g) {
  constexpr int kFewestRows = 3;
  const double resident = ResidentStrips();
  std::vector<int> rows(g.levels.size());
  double left = 0;  // strip rows of levels i.. (14 blocks across, one down)
  for (std::size_t i = g.levels.size(); i-- > 0;) {
    const DetectLevel& level = g.levels[i];
    left +=
        static_cast<double>((level.blocks_x + kStripBlocksX - 1) / kStripBlocksX) * level.blocks_y;
    rows[i] = std::clamp(static_cast<int>(left / resident), kFewestRows, kStripMaxBlocksY);
  }
  return rows;
}

// Appends hit (level, wx, wy) unless its score is below the threshold (the reference's test, in
// double); the record keeps the score as a float.
__device__ __forceinline__ void AppendHit(const ScoresParams& p, const ScoreJob& job, int wx,
                                          int wy, double score) {
  if (!(score >= p.threshold)) return;
  const unsigned int slot = atomicAdd(p.hit_count, 1u);
  if (slot < p.capacity) p.hits[slot] = DeviceHit{job.level, wx, wy, static_cast<float>(score)};
}

// One CUDA block: a tile of 32 x kScoreRows windows, a warp per model block column
// (hog_scores.h); warp 0 adds the columns' sums in sx order and reports the hits. kFirst: the
// first weight quad read from the parameters (kFeatureQuads: none). 3 CUDA blocks an SM: ptxas
// holds it to 80 registers without spilling, 186 us at 1080p against 213 at its own 117 (run 211).
template <int kFirst>
__global__ void __launch_bounds__(kScoreMaxWarps* kScoreLanes, 3)
    HogScoresKernel(const __grid_constant__ ScoresKernelParams k) {
  const ScoresParams& p = k.s;
  __shared__ double parts[kScoreMaxWarps][kScoreRows][kScoreLanes];
  const int block = static_cast<int>(blockIdx.x);
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int j = FindJob(p.first_block, p.num_jobs, block);
  const ScoreJob& job = p.jobs[j];
  const int tile = block - p.first_block[j];
  const int tile_y = DivSmall(tile, job.inv_tiles_x);
  const int tile_x = tile - tile_y * job.tiles_x;
  const int wx = tile_x * kScoreLanes + lane;
  const int wy0 = tile_y * kScoreRows;
  double score[kScoreRows];
#pragma unroll
  for (int r = 0; r < kScoreRows; ++r) score[r] = static_cast<double>(p.bias);
  const int warps = static_cast<int>(blockDim.x) >> 5;  // hog::ScoreThreads
  for (int sx0 = 0; sx0 < p.model_blocks_x; sx0 += warps) {
    const int columns = min(warps, p.model_blocks_x - sx0);
    if (warp < columns) {
      double part[kScoreRows];
      hog::ScoreColumnPart<kFirst>(p, k.weight_quads, job, wx, wy0, sx0 + warp, part);
#pragma unroll
      for (int r = 0; r < kScoreRows; ++r) parts[warp][r][lane] = part[r];
    }
    __syncthreads();
    if (warp == 0) {
      for (int k = 0; k < columns; ++k) {
#pragma unroll
        for (int r = 0; r < kScoreRows; ++r) score[r] += parts[k][r][lane];
      }
    }
    __syncthreads();
  }
  if (warp != 0 || wx >= job.windows_x) return;
#pragma unroll
  for (int r = 0; r < kScoreRows; ++r) {
    if (wy0 + r < job.windows_y) AppendHit(p, job, wx, wy0 + r, score[r]);
  }
}

// Issue 5's scores kernel, one thread per window (RunScoresPerWindow).
__global__ void __launch_bounds__(kWindowScoreThreads)
    HogScoresPerWindowKernel(const __grid_constant__ ScoresParams p) {
  const int block = static_cast<int>(blockIdx.x);
  const int j = FindJob(p.first_block, p.num_jobs, block);
  const ScoreJob& job = p.jobs[j];
  const int tile = block - p.first_block[j];
  const int tile_y = DivSmall(tile, job.inv_tiles_x);
  const int tile_x = tile - tile_y * job.tiles_x;
  const int wx = tile_x * kWindowScoreX + static_cast<int>(threadIdx.x & 31);
  const int wy = tile_y * kWindowScoreY + static_cast<int>(threadIdx.x >> 5);
  const float score = hog::ScoreWindowPerThread(p, job, wx, wy);
  if (wx >= job.windows_x || wy >= job.windows_y) return;
  AppendHit(p, job, wx, wy, score);
}

}  // namespace

absl::StatusOr<DetectPlan> DetectPlan::Create(const Extent& extent, int channels,
                                              const HogModel& model, const DetectSpec& spec) {
  // The plan reads U8 pixels (its precondition); the rest of the input rule is checked here.
  CUIMG_RETURN_IF_ERROR(ValidateDetectInput(PixelType::kU8, extent, channels, "image"));
  CUIMG_RETURN_IF_ERROR(ValidateHogModel(model));
  // The blocks kernel addresses input rows by 32-bit byte offsets.
  if (extent.Pixels() * channels >= (std::int64_t{1} << 31)) {
    return absl::InvalidArgumentError(absl::StrCat("extent: ", extent.width, "x", extent.height,
                                                   "x", channels, " is 2 GiB or more"));
  }
  auto impl = std::make_shared<Impl>();
  CUIMG_ASSIGN_OR_RETURN(impl->geometry,
                         PlanDetection(extent, model.window_width, model.window_height, spec));
  impl->channels = channels;
  const DetectGeometry& g = impl->geometry;
  const std::vector<int> strip_rows = StripRowsOf(g);
  std::size_t offset = 0;  // floats
  for (std::size_t begin = 0; begin < g.levels.size(); begin += kMaxJobs) {
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
    sp.capacity = static_cast<unsigned int>(g.windows);
    sp.threshold = spec.hit_threshold;
    sp.bias = model.bias;
    sp.step = g.win_stride / kHogBlockStride;
    sp.model_blocks_x = model.BlocksX();
    sp.model_blocks_y = model.BlocksY();
    const std::size_t end = std::min(g.levels.size(), begin + kMaxJobs);
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
      bj.inv_tiles_x = 1.0f / static_cast<float>(bj.tiles_x);
      bj.pitch = static_cast<int>(AlignUp(level.blocks_x, 32));
      bj.direct = level.width == extent.width && level.height == extent.height;
      bj.feature_offset = static_cast<long long>(offset);
      offset = AlignUp(
          offset + static_cast<std::size_t>(level.blocks_y) * kHogBlockFeatures * bj.pitch, 64);
      static_assert(kHogBlockFeatures == 4 * hog::kFeatureQuads, "a block's features in quads");
      bj.strip_rows = strip_rows[i];
      const int tiles = bj.tiles_x * ((level.blocks_y + bj.strip_rows - 1) / bj.strip_rows);
      bp.first_block[j] = chunk.block_grid;
      chunk.block_grid += tiles;

      ScoreJob& sj = sp.jobs[j];
      sj.feature_offset = bj.feature_offset;
      sj.pitch = bj.pitch;
      sj.windows_x = level.windows_x;
      sj.windows_y = level.windows_y;
      sj.level = static_cast<int>(i);
      ScoreJob& wj = chunk.per_window_scores.jobs[j];
      wj = sj;
      sj.tiles_x = (level.windows_x + kScoreLanes - 1) / kScoreLanes;
      sj.inv_tiles_x = 1.0f / static_cast<float>(sj.tiles_x);
      sp.first_block[j] = chunk.score_grid;
      chunk.score_grid += sj.tiles_x * ((level.windows_y + kScoreRows - 1) / kScoreRows);
      wj.tiles_x = (level.windows_x + kWindowScoreX - 1) / kWindowScoreX;
      wj.inv_tiles_x = 1.0f / static_cast<float>(wj.tiles_x);
      chunk.per_window_scores.first_block[j] = chunk.per_window_grid;
      chunk.per_window_grid += wj.tiles_x * ((level.windows_y + kWindowScoreY - 1) / kWindowScoreY);
    }
    bp.num_jobs = sp.num_jobs = static_cast<int>(end - begin);
    bp.first_block[bp.num_jobs] = chunk.block_grid;
    sp.first_block[sp.num_jobs] = chunk.score_grid;
    // The per-window kernel's parameters: the same scalars, its own tiling.
    ScoresParams per_window = sp;
    std::memcpy(per_window.jobs, chunk.per_window_scores.jobs, sizeof(per_window.jobs));
    std::memcpy(per_window.first_block, chunk.per_window_scores.first_block,
                sizeof(per_window.first_block));
    per_window.first_block[per_window.num_jobs] = chunk.per_window_grid;
    chunk.per_window_scores = per_window;
    impl->chunks.push_back(chunk);
  }
  impl->workspace_bytes = offset * sizeof(float);
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
std::size_t DetectPlan::WorkspaceBytes() const { return impl_->workspace_bytes; }
std::size_t DetectPlan::HitsBytes() const {
  return HitsPrefixBytes(static_cast<std::size_t>(impl_->geometry.windows));
}
std::size_t DetectPlan::HitsPrefixBytes(std::size_t hits) {
  return kHitsHeader + hits * sizeof(DeviceHit);
}
DetectPlan::FeaturePlane DetectPlan::Features(int level) const {
  const BlockJob& job = impl_->chunks[level / kMaxJobs].blocks.jobs[level % kMaxJobs];
  return FeaturePlane{job.feature_offset, job.pitch};
}

int DetectPlan::LaunchCount() const { return 2 * static_cast<int>(impl_->chunks.size()); }

std::uint32_t DetectPlan::HitCount(const void* host_hits) {
  std::uint32_t count = 0;
  std::memcpy(&count, host_hits, sizeof(count));
  return count;
}

std::vector<WindowHit> DetectPlan::DecodeHits(const void* host_hits, std::uint32_t count) {
  std::vector<WindowHit> out(count);
  const auto* bytes = static_cast<const std::uint8_t*>(host_hits) + kHitsHeader;
  for (std::uint32_t i = 0; i < count; ++i) {
    DeviceHit h;
    std::memcpy(&h, bytes + i * sizeof(DeviceHit), sizeof(h));
    out[i] = WindowHit{h.level, h.window_x, h.window_y, h.score};
  }
  std::sort(out.begin(), out.end(), HitOrder);
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
  int block_grid = 0;
  int score_grid = 0;
  for (const DetectChunk& c : plan.chunks) {
    block_grid += c.block_grid;
    score_grid += c.score_grid;
  }
  return absl::StrCat(plan.geometry.levels.size(), " levels, ", plan.geometry.windows, " windows, ",
                      plan.geometry.blocks, " blocks; launches ", LaunchCount(), " (", block_grid,
                      " strips of ", kStripBlocksX, "x", StripRowsText(plan), " blocks, ",
                      score_grid, " tiles of ", kScoreLanes, "x", kScoreRows, " windows)");
}

absl::Status DetectPlan::RunBlocks(const void* in, void* workspace, void* hits,
                                   cudaStream_t stream) const {
  const Impl& plan = *impl_;
  if (in == nullptr || hits == nullptr || (plan.workspace_bytes > 0 && workspace == nullptr)) {
    return absl::InvalidArgumentError("in, workspace, hits: must not be null");
  }
  auto* count = static_cast<unsigned int*>(hits);
  if (plan.chunks.empty()) {
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(count, 0, sizeof(*count), stream),
                               "zero the hit count");
    return absl::OkStatus();
  }
  for (const DetectChunk& chunk : plan.chunks) {
    BlocksParams p = chunk.blocks;
    p.src = static_cast<const std::uint8_t*>(in);
    p.features = static_cast<float*>(workspace);
    p.hit_count = count;
    const auto grid = static_cast<unsigned>(chunk.block_grid);
    switch (plan.channels) {
      case 1:
        HogBlocksKernel<1><<<grid, kStripThreads, 0, stream>>>(p);
        break;
      case 3:
        HogBlocksKernel<3><<<grid, kStripThreads, 0, stream>>>(p);
        break;
      default:
        HogBlocksKernel<4><<<grid, kStripThreads, 0, stream>>>(p);
        break;
    }
    CUIMG_CUDA_CHECK_LAUNCH(stream, "HogBlocksKernel");
  }
  return absl::OkStatus();
}

namespace {

// The scores launches of `plan`, of the new kernel or (per_window) issue 5's.
absl::Status LaunchScores(const DetectPlan::Impl& plan, bool per_window, const float* weights,
                          const void* workspace, void* hits, cudaStream_t stream) {
  if (plan.chunks.empty()) return absl::OkStatus();
  if (weights == nullptr || hits == nullptr || workspace == nullptr) {
    return absl::InvalidArgumentError("weights, workspace, hits: must not be null");
  }
  for (const DetectChunk& chunk : plan.chunks) {
    ScoresParams p = per_window ? chunk.per_window_scores : chunk.scores;
    p.features = static_cast<const float*>(workspace);
    p.weights = weights;
    p.hit_count = static_cast<unsigned int*>(hits);
    p.hits = reinterpret_cast<DeviceHit*>(static_cast<std::uint8_t*>(hits) + kHitsHeader);
    if (per_window) {
      HogScoresPerWindowKernel<<<static_cast<unsigned>(chunk.per_window_grid), kWindowScoreThreads,
                                 0, stream>>>(p);
      CUIMG_CUDA_CHECK_LAUNCH(stream, "HogScoresPerWindowKernel");
    } else {
      ScoresKernelParams k{};
      k.s = p;
      std::copy(plan.weight_quads.begin(), plan.weight_quads.end(), k.weight_quads);
      const auto grid = static_cast<unsigned>(chunk.score_grid);
      const auto threads = static_cast<unsigned>(hog::ScoreThreads(p));
      if (plan.weight_quads.empty()) {
        HogScoresKernel<kFeatureQuads><<<grid, threads, 0, stream>>>(k);
      } else {
        HogScoresKernel<kParamFrom><<<grid, threads, 0, stream>>>(k);
      }
      CUIMG_CUDA_CHECK_LAUNCH(stream, "HogScoresKernel");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DetectPlan::RunScores(const float* weights, const void* workspace, void* hits,
                                   cudaStream_t stream) const {
  return LaunchScores(*impl_, false, weights, workspace, hits, stream);
}

absl::Status DetectPlan::RunScoresPerWindow(const float* weights, const void* workspace, void* hits,
                                            cudaStream_t stream) const {
  return LaunchScores(*impl_, true, weights, workspace, hits, stream);
}

absl::Status DetectPlan::Run(const void* in, const float* weights, void* workspace, void* hits,
                             cudaStream_t stream) const {
  CUIMG_RETURN_IF_ERROR(RunBlocks(in, workspace, hits, stream));
  return RunScores(weights, workspace, hits, stream);
}

}  // namespace cuimg
