// DetectPlan: HOG block histograms of every pyramid level and frame in one launch, SVM scores of
// every window in a second one (hog_detect.h has the contract; hog_plan.cu builds the plan). The
// per-pixel arithmetic is hog_math.h's and the scores' hog_scores.h's, shared with the CPU
// reference; this file is built with -fmad=false, so every product and sum rounds as the
// reference's do (fmaf is written where fusion is wanted).
#include "cuimg/kernels/hog_detect.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernel_attributes.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "hog_device.h"
#include "hog_plan.h"

namespace cuimg {
namespace {

using hog::AppendHit;
using hog::BlockJob;
using hog::BlocksParams;
using hog::FindJob;
using hog::kFeatureQuads;
using hog::kHitsHeader;
using hog::kParamFrom;
using hog::kScoreLanes;
using hog::kScoreMaxWarps;
using hog::kScoreRows;
using hog::kStripThreads;
using hog::kWindowScoreThreads;
using hog::kWindowScoreX;
using hog::kWindowScoreY;
using hog::LaneWindow;
using hog::ScoreJob;
using hog::ScoresKernelParams;
using hog::ScoresParams;
using hog::Strip;
using hog::StripSmem;
using hog::StripThread;
using hog::TilePos;

// The sum over a HOG block's 8 threads (lanes 8k..8k+7: 4 cells x 2 halves), the same in every
// lane: ((h0 + h1) + (h2 + h3)) + ((h4 + h5) + (h6 + h7)) by cell and half (EmulateBlocks' order).
__device__ __forceinline__ float BlockSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  return v + __shfl_xor_sync(0xffffffffu, v, 4);
}

// One CUDA block: a strip of up to 14 x 16 HOG blocks of one level of one frame (hog_strip.h).
// ptxas gives it 80 registers, which 6 CUDA blocks an SM (their shared memory) allow; holding it
// there with a minimum of 6 blocks in the bounds cost 80 instructions a period (sm_90 SASS).
template <int kChannels, bool kWords = false>
__global__ void __launch_bounds__(kStripThreads)
    HogBlocksKernel(const __grid_constant__ BlocksParams p) {
  constexpr int kPlanes = kChannels == 1 ? 1 : 3;
  __shared__ StripSmem s;
  const int t = threadIdx.x;
  const int block = static_cast<int>(blockIdx.x);
  if (p.reset_count && block == 0 && t == 0) *p.hit_count = 0;
  const int j = FindJob(p.first_block, p.num_jobs, block);
  const BlockJob& job = p.jobs[j];
  const Strip strip = hog::StripOf(job, block - p.first_block[j]);
  const std::uint8_t* src = p.src[strip.frame];
  StripThread<kPlanes> th;
  hog::StartStrip<kChannels, kWords>(p, job, strip, t, s, th);
  __syncthreads();
  const int rows = hog::StripRows(job, strip);
  for (int period = 0; period <= rows; ++period) {
    if (job.direct) {
      hog::SamplePeriod<kChannels, kWords, true>(src, period, t, s, th);
    } else {
      hog::SamplePeriod<kChannels, kWords, false>(src, period, t, s, th);
    }
    __syncthreads();
    if (period > 0 && period < rows) {
      hog::VotePeriod<true>(p, rows, period, t, s, th);
    } else {
      hog::VotePeriod<false>(p, rows, period, t, s, th);
    }
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

}  // namespace

// CUDA blocks of the blocks kernel resident at once on the current device: its multiprocessors
// (CurrentDeviceLimits) x the occupancy the kernel's registers and shared memory allow (6 on the
// H100, found once per process; 6 where there is no device: plans for the emulation).
int ResidentStrips() {
  static const int per_sm = [] {
    int blocks = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, HogBlocksKernel<3, true>,
                                                      kStripThreads, 0) != cudaSuccess ||
        blocks <= 0) {
      (void)cudaGetLastError();  // a machine without a GPU: not an error of any later call
      return 6;
    }
    return blocks;
  }();
  return CurrentDeviceLimits().multiprocessors * per_sm;
}

namespace {

// One CUDA block: a tile of 32 x kScoreRows windows (the frames' side by side: each lane's frame
// and column from LaneWindowOf), a warp per model block column (hog_scores.h); warp 0 adds the
// columns' sums in sx order and reports the hits. kFirst: the
// first weight quad read from the parameters (kFeatureQuads: none). 3 CUDA blocks an SM: ptxas
// holds it to 80 registers without spilling, 186 us at 1080p against 213 at its own 117 (run 211).
template <int kFirst>
__global__ void __launch_bounds__(kScoreMaxWarps* kScoreLanes, 3)
    HogScoresKernel(const __grid_constant__ ScoresKernelParams k) {
  const ScoresParams& p = k.s;
  __shared__ double parts[kScoreMaxWarps][kScoreRows][kScoreLanes];
  // Warp 0's running scores, here rather than in registers that every warp would hold through
  // ScoreColumnPart (with the lanes' frames, the kernel spilled at 80 registers).
  __shared__ double scores[kScoreRows][kScoreLanes];
  const int block = static_cast<int>(blockIdx.x);
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int j = FindJob(p.first_block, p.num_jobs, block);
  const ScoreJob& job = p.jobs[j];
  const TilePos tile = hog::TileOf(job, block - p.first_block[j]);
  const int x = tile.x * kScoreLanes + lane;
  const int wy0 = tile.y * kScoreRows;
  if (warp == 0) {
#pragma unroll
    for (int r = 0; r < kScoreRows; ++r) scores[r][lane] = static_cast<double>(p.bias);
  }
  const int warps = static_cast<int>(blockDim.x) >> 5;  // hog::ScoreThreads
  for (int sx0 = 0; sx0 < p.model_blocks_x; sx0 += warps) {
    const int columns = min(warps, p.model_blocks_x - sx0);
    if (warp < columns) {
      const LaneWindow w = hog::LaneWindowOf(p, job, x);
      double part[kScoreRows];
      hog::ScoreColumnPart<kFirst>(p, k.weight_quads, job, hog::LevelFeatures(p, job, w.frame),
                                   w.wx, wy0, sx0 + warp, part);
#pragma unroll
      for (int r = 0; r < kScoreRows; ++r) parts[warp][r][lane] = part[r];
    }
    __syncthreads();
    if (warp == 0) {  // each lane its own windows' scores: no other thread touches them
      for (int k = 0; k < columns; ++k) {
#pragma unroll
        for (int r = 0; r < kScoreRows; ++r) scores[r][lane] += parts[k][r][lane];
      }
    }
    __syncthreads();
  }
  if (warp != 0) return;
  const LaneWindow w = hog::LaneWindowOf(p, job, x);
  if (!w.valid) return;
#pragma unroll
  for (int r = 0; r < kScoreRows; ++r) {
    if (wy0 + r < job.windows_y) AppendHit(p, job, w.frame, w.wx, wy0 + r, scores[r][lane]);
  }
}

// Issue 5's scores kernel, one thread per window (ScoresPath::kPerWindow).
__global__ void __launch_bounds__(kWindowScoreThreads)
    HogScoresPerWindowKernel(const __grid_constant__ ScoresParams p) {
  const int block = static_cast<int>(blockIdx.x);
  const int j = FindJob(p.first_block, p.num_jobs, block);
  const ScoreJob& job = p.jobs[j];
  const TilePos tile = hog::TileOf(job, block - p.first_block[j]);
  const LaneWindow w =
      hog::LaneWindowOf(p, job, tile.x * kWindowScoreX + static_cast<int>(threadIdx.x & 31));
  const int wy = tile.y * kWindowScoreY + static_cast<int>(threadIdx.x >> 5);
  const float score =
      hog::ScoreWindowPerThread(p, job, hog::LevelFeatures(p, job, w.frame), w.wx, wy);
  if (!w.valid || wy >= job.windows_y) return;
  AppendHit(p, job, w.frame, w.wx, wy, score);
}

}  // namespace

namespace {

// INVALID_ARGUMENT unless `in` holds a non-null input for each of the plan's frames.
absl::Status CheckInputs(const DetectPlan::Impl& plan, absl::Span<const void* const> in) {
  if (static_cast<int>(in.size()) != plan.frames) {
    return InvalidFieldError(
        ErrorReason::kInvalidCombination, "in",
        absl::StrCat(in.size(), " inputs for a plan of ", plan.frames, " frames"));
  }
  for (std::size_t f = 0; f < in.size(); ++f) {
    if (in[f] == nullptr) {
      return InvalidFieldError(ErrorReason::kFieldRequired, absl::StrCat("in[", f, "]"),
                               "must not be null");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DetectPlan::RunBlocks(absl::Span<const void* const> in, void* workspace, void* hits,
                                   cudaStream_t stream) const {
  const Impl& plan = *impl_;
  CUIMG_RETURN_IF_ERROR(CheckInputs(plan, in));
  if (hits == nullptr || (plan.frame_bytes > 0 && workspace == nullptr)) {
    return absl::InvalidArgumentError("workspace, hits: must not be null");
  }
  auto* count = static_cast<unsigned int*>(hits);
  if (plan.chunks.empty()) {
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(count, 0, sizeof(*count), stream),
                               "zero the hit count");
    return absl::OkStatus();
  }
  for (const DetectChunk& chunk : plan.chunks) {
    BlocksParams p = chunk.blocks;
    for (std::size_t f = 0; f < in.size(); ++f) p.src[f] = static_cast<const std::uint8_t*>(in[f]);
    p.features = static_cast<float*>(workspace);
    p.hit_count = count;
    const auto grid = static_cast<unsigned>(chunk.block_grid);
    switch (plan.channels) {
      case 1:
        HogBlocksKernel<1><<<grid, kStripThreads, 0, stream>>>(p);
        break;
      case 3:
        if (hog::SampleWords(p, plan.frames)) {
          HogBlocksKernel<3, true><<<grid, kStripThreads, 0, stream>>>(p);
        } else {
          HogBlocksKernel<3><<<grid, kStripThreads, 0, stream>>>(p);
        }
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

// The scores launches of `plan` by `path` (DetectPlan::ScoresPath).
absl::Status LaunchScores(const DetectPlan::Impl& plan, DetectPlan::ScoresPath path,
                          const float* weights, const void* workspace, void* hits,
                          cudaStream_t stream) {
  if (plan.chunks.empty()) return absl::OkStatus();
  if (weights == nullptr || hits == nullptr || workspace == nullptr) {
    return absl::InvalidArgumentError("weights, workspace, hits: must not be null");
  }
  const bool per_window = path == DetectPlan::ScoresPath::kPerWindow;
  const bool filter = path == DetectPlan::ScoresPath::kDefault && plan.filter;
  for (const DetectChunk& chunk : plan.chunks) {
    ScoresParams p = per_window ? chunk.per_window_scores : chunk.scores;
    p.features = static_cast<const float*>(workspace);
    p.weights = weights;
    p.hit_count = static_cast<unsigned int*>(hits);
    p.hits = reinterpret_cast<DeviceHit*>(static_cast<std::uint8_t*>(hits) + kHitsHeader);
    if (filter) {
      // The candidates lie past the frames' features (DetectPlan::Impl::filter).
      void* end = static_cast<std::uint8_t*>(const_cast<void*>(workspace)) + plan.feature_bytes();
      CUIMG_RETURN_IF_ERROR(LaunchFilter(chunk, p, end, stream));
    } else if (per_window) {
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
  return LaunchScores(*impl_, ScoresPath::kDefault, weights, workspace, hits, stream);
}

absl::Status DetectPlan::RunScoresWith(ScoresPath path, const float* weights, const void* workspace,
                                       void* hits, cudaStream_t stream) const {
  return LaunchScores(*impl_, path, weights, workspace, hits, stream);
}

absl::Status DetectPlan::Run(absl::Span<const void* const> in, const float* weights,
                             void* workspace, void* hits, cudaStream_t stream) const {
  CUIMG_RETURN_IF_ERROR(RunBlocks(in, workspace, hits, stream));
  return RunScores(weights, workspace, hits, stream);
}

}  // namespace cuimg
