// DetectPlan::EmulateOnHost: the blocks and scores kernels of hog_detect.cu run on the host, each
// phase of hog_strip.h and hog_scores.h for every thread of a CUDA block in the kernel's barrier
// order, so CPU tests check the kernels' own indexing and arithmetic. Built with -fmad=false and
// -ffp-contract=off, as hog_detect.cu, so that it rounds as the kernels do. Each emulated CUDA
// block starts from poisoned shared memory (Poison), so a value one reads that it did not write
// (a device's shared memory holds the last block's) turns the features it feeds into NaN or inf.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
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
using hog::LaneWindow;
using hog::ScoreJob;
using hog::ScoresParams;
using hog::Strip;
using hog::StripSmem;
using hog::StripThread;
using hog::TilePos;

// FindJob (hog_detect.cu) on the host: the level of a CUDA block.
int FindJobOnHost(const int* first_block, int num_jobs, int block) {
  return static_cast<int>(std::upper_bound(first_block, first_block + num_jobs, block) -
                          first_block) -
         1;
}

// BlockSum's order on the host, over v[0..7].
float BlockSumOnHost(const float* v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// A CUDA block's shared memory before it runs: NaN sums and gamma table, samples of 1e30 (a NaN
// sample would give a NaN orientation, whose conversion to a bin is undefined on the host: on the
// device it is bin 0, and the vote lands in a column no block reads), and row taps that point far
// outside any input.
void Poison(StripSmem& s) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  std::fill(&s.rows[0][0][0], &s.rows[0][0][0] + sizeof(s.rows) / sizeof(float), 1e30f);
  std::fill(std::begin(s.sums), std::end(s.sums), kNaN);
  std::fill(std::begin(s.lut), std::end(s.lut), kNaN);
  std::memset(s.ytap, 0x7f, sizeof(s.ytap));
}

// The blocks kernel on the host: each phase for every thread of a CUDA block, in the kernel's
// barrier order.
template <int kChannels, bool kWords = false>
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
    const Strip strip = hog::StripOf(job, block - p.first_block[j]);
    const std::uint8_t* src = p.src[strip.frame];
    Poison(s);
    for (int t = 0; t < kStripThreads; ++t) {
      hog::StartStrip<kChannels, kWords>(p, job, strip, t, s, threads[t]);
    }
    const int rows = hog::StripRows(job, strip);
    for (int period = 0; period <= rows; ++period) {
      for (int t = 0; t < kStripThreads; ++t) {
        if (job.direct) {
          hog::SamplePeriod<kChannels, kWords, true>(src, period, t, s, threads[t]);
        } else {
          hog::SamplePeriod<kChannels, kWords, false>(src, period, t, s, threads[t]);
        }
      }
      const bool middle = period > 0 && period < rows;  // the kernel's choice of VotePeriod
      for (int t = 0; t < kStripThreads; ++t) {
        if (middle) {
          hog::VotePeriod<true>(p, rows, period, t, s, threads[t]);
        } else {
          hog::VotePeriod<false>(p, rows, period, t, s, threads[t]);
        }
      }
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

absl::Status DetectPlan::EmulateOnHost(absl::Span<const void* const> in, const float* weights,
                                       void* workspace, void* hits) const {
  const Impl& plan = *impl_;
  if (static_cast<int>(in.size()) != plan.frames) {
    return InvalidFieldError(
        ErrorReason::kInvalidCombination, "in",
        absl::StrCat(in.size(), " inputs for a plan of ", plan.frames, " frames"));
  }
  if (std::find(in.begin(), in.end(), nullptr) != in.end() || hits == nullptr ||
      (plan.frame_bytes > 0 && workspace == nullptr) ||
      (!plan.chunks.empty() && weights == nullptr)) {
    return absl::InvalidArgumentError("in, weights, workspace, hits: must not be null");
  }
  auto* count = static_cast<unsigned int*>(hits);
  *count = 0;
  for (const DetectChunk& chunk : plan.chunks) {
    BlocksParams p = chunk.blocks;
    for (std::size_t f = 0; f < in.size(); ++f) p.src[f] = static_cast<const std::uint8_t*>(in[f]);
    p.features = static_cast<float*>(workspace);
    p.hit_count = count;
    switch (plan.channels) {
      case 1:
        EmulateBlocks<1>(p, chunk.block_grid);
        break;
      case 3:
        if (hog::SampleWords(p, plan.frames)) {  // the kernel's choice
          EmulateBlocks<3, true>(p, chunk.block_grid);
        } else {
          EmulateBlocks<3>(p, chunk.block_grid);
        }
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
      const TilePos tile = hog::TileOf(job, block - p.first_block[j]);
      for (int t = 0; t < kScoreLanes; ++t) {
        const LaneWindow w = hog::LaneWindowOf(p, job, tile.x * kScoreLanes + t);
        const float* level = hog::LevelFeatures(p, job, w.frame);
        const int wy0 = tile.y * kScoreRows;
        // The kernel's order: the bias, then the columns' sums with sx rising.
        double score[kScoreRows];
        std::fill(std::begin(score), std::end(score), static_cast<double>(p.bias));
        for (int sx = 0; sx < p.model_blocks_x; ++sx) {
          double part[kScoreRows];
          if (plan.weight_quads.empty()) {
            hog::ScoreColumnPart<hog::kFeatureQuads>(p, nullptr, job, level, w.wx, wy0, sx, part);
          } else {
            hog::ScoreColumnPart<hog::kParamFrom>(p, plan.weight_quads.data(), job, level, w.wx,
                                                  wy0, sx, part);
          }
          for (int r = 0; r < kScoreRows; ++r) score[r] += part[r];
        }
        for (int r = 0; r < kScoreRows; ++r) {
          if (!w.valid || wy0 + r >= job.windows_y || !(score[r] >= p.threshold)) continue;
          const unsigned int slot = (*count)++;
          if (slot < p.capacity) {
            out[slot] = DeviceHit{w.frame * p.levels + job.level, w.wx, wy0 + r,
                                  static_cast<float>(score[r])};
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace cuimg
