// DetectPlan::EmulateOnHost: the blocks and scores kernels of hog_detect.cu run on the host, each
// phase of hog_strip.h and hog_scores.h for every thread of a CUDA block in the kernel's barrier
// order, so CPU tests check the kernels' own indexing and arithmetic. Built with -fmad=false and
// -ffp-contract=off, as hog_detect.cu, so that it rounds as the kernels do.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>

#include "cuimg/kernels/hog_detect.h"
#include "hog_plan.h"

namespace cuimg {
namespace {

using hog::BlockJob;
using hog::BlocksParams;
using hog::kHitsHeader;
using hog::kScoreLanes;
using hog::kScoreRows;
using hog::kStripThreads;
using hog::ScoreJob;
using hog::ScoresParams;
using hog::StripSmem;
using hog::StripThread;
using hog::TilePos;

// FindJob (hog_detect.cu) on the host: the level of a CUDA block.
int FindJobOnHost(const int* first_block, int num_jobs, int block) {
  return static_cast<int>(std::upper_bound(first_block, first_block + num_jobs, block) -
                          first_block) -
         1;
}

// DivSmall's quotient (div_small.cuh) on the host: the kernels' tile of a block index.
TilePos TileOf(int tile, int tiles_x, float inv_tiles_x) {
  const int y = static_cast<int>((static_cast<float>(tile) + 0.5f) * inv_tiles_x);
  return TilePos{tile - y * tiles_x, y};
}

// BlockSum's order on the host, over v[0..7].
float BlockSumOnHost(const float* v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// The blocks kernel on the host: each phase for every thread of a CUDA block, in the kernel's
// barrier order.
template <int kChannels>
void EmulateBlocks(const BlocksParams& p, int grid) {
  constexpr int kPlanes = kChannels == 1 ? 1 : 3;
  auto smem = std::make_unique<StripSmem>();
  StripSmem& s = *smem;
  auto threads = std::make_unique<StripThread<kPlanes>[]>(kStripThreads);
  float part[kStripThreads][kHogBins];
  float h[kStripThreads][kHogBins];
  float ss[kStripThreads];
  for (int block = 0; block < grid; ++block) {
    const int j = FindJobOnHost(p.first_block, p.num_jobs, block);
    const BlockJob& job = p.jobs[j];
    const TilePos strip = TileOf(block - p.first_block[j], job.tiles_x, job.inv_tiles_x);
    for (int t = 0; t < kStripThreads; ++t) {
      hog::StartStrip<kChannels>(p, job, strip, t, s, threads[t]);
    }
    for (int period = 0; period <= job.strip_rows; ++period) {
      for (int t = 0; t < kStripThreads; ++t) {
        hog::SamplePeriod<kChannels>(p, job, period, t, s, threads[t]);
      }
      for (int t = 0; t < kStripThreads; ++t) hog::VotePeriod(p, job, period, t, s, threads[t]);
      if (period == 0) continue;
      for (int t = 0; t < kStripThreads; ++t) hog::HorizontalHalf(p, period, t, s, part[t]);
      for (int t = 0; t < kStripThreads; ++t) {  // the kernel's shuffle: own half + the other
        for (int k = 0; k < kHogBins; ++k) h[t][k] = part[t][k] + part[t ^ 1][k];
        ss[t] = hog::CellHalf(t, h[t]);
      }
      for (int g = 0; g < kStripThreads; g += 8) {
        const float total = BlockSumOnHost(ss + g);
        for (int t = g; t < g + 8; ++t) ss[t] = hog::ClipCell(h[t], total);
        const float scale = hog::RenormScale(BlockSumOnHost(ss + g));
        for (int t = g; t < g + 8; ++t) hog::StoreCell(p, job, strip, period, t, h[t], scale);
      }
    }
  }
}

}  // namespace

absl::Status DetectPlan::EmulateOnHost(const void* in, const float* weights, void* workspace,
                                       void* hits) const {
  const Impl& plan = *impl_;
  if (in == nullptr || hits == nullptr || (plan.workspace_bytes > 0 && workspace == nullptr) ||
      (!plan.chunks.empty() && weights == nullptr)) {
    return absl::InvalidArgumentError("in, weights, workspace, hits: must not be null");
  }
  auto* count = static_cast<unsigned int*>(hits);
  *count = 0;
  for (const DetectChunk& chunk : plan.chunks) {
    BlocksParams p = chunk.blocks;
    p.src = static_cast<const std::uint8_t*>(in);
    p.features = static_cast<float*>(workspace);
    p.hit_count = count;
    switch (plan.channels) {
      case 1:
        EmulateBlocks<1>(p, chunk.block_grid);
        break;
      case 3:
        EmulateBlocks<3>(p, chunk.block_grid);
        break;
      default:
        EmulateBlocks<4>(p, chunk.block_grid);
        break;
    }
  }
  auto* out = reinterpret_cast<DeviceHit*>(static_cast<std::uint8_t*>(hits) + kHitsHeader);
  for (const DetectChunk& chunk : plan.chunks) {
    ScoresParams p = chunk.scores;
    p.features = static_cast<const float*>(workspace);
    p.weights = weights;
    for (int block = 0; block < chunk.score_grid; ++block) {
      const int j = FindJobOnHost(p.first_block, p.num_jobs, block);
      const ScoreJob& job = p.jobs[j];
      const TilePos tile = TileOf(block - p.first_block[j], job.tiles_x, job.inv_tiles_x);
      for (int t = 0; t < kScoreLanes; ++t) {
        const int wx = tile.x * kScoreLanes + t;
        const int wy0 = tile.y * kScoreRows;
        // The kernel's order: the bias, then the columns' sums with sx rising.
        double score[kScoreRows];
        std::fill(std::begin(score), std::end(score), static_cast<double>(p.bias));
        for (int sx = 0; sx < p.model_blocks_x; ++sx) {
          double part[kScoreRows];
          if (plan.weight_quads.empty()) {
            hog::ScoreColumnPart<hog::kFeatureQuads>(p, nullptr, job, wx, wy0, sx, part);
          } else {
            hog::ScoreColumnPart<hog::kParamFrom>(p, plan.weight_quads.data(), job, wx, wy0, sx,
                                                  part);
          }
          for (int r = 0; r < kScoreRows; ++r) score[r] += part[r];
        }
        for (int r = 0; r < kScoreRows; ++r) {
          if (wx >= job.windows_x || wy0 + r >= job.windows_y || !(score[r] >= p.threshold)) {
            continue;
          }
          const unsigned int slot = (*count)++;
          if (slot < p.capacity) {
            out[slot] = DeviceHit{job.level, wx, wy0 + r, static_cast<float>(score[r])};
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace cuimg
