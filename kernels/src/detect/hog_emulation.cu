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

// One warp's m16n8k8 on the host from its lanes' fragments (PTX's layout): d[lane] += A B, the
// products and sums in float (the device's tensor cores round otherwise: the filter's margin
// covers both).
void MmaOnHost(const std::uint32_t (&a)[32][4], const std::uint32_t (&b)[32][2],
               float (&d)[32][4]) {
  float am[16][8];
  float bm[8][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2;
    const int tig = lane & 3;
    am[g][tig] = hog::BitsFloat(a[lane][0]);
    am[g + 8][tig] = hog::BitsFloat(a[lane][1]);
    am[g][tig + 4] = hog::BitsFloat(a[lane][2]);
    am[g + 8][tig + 4] = hog::BitsFloat(a[lane][3]);
    bm[tig][g] = hog::BitsFloat(b[lane][0]);
    bm[tig + 4][g] = hog::BitsFloat(b[lane][1]);
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2;
    const int tig = lane & 3;
    for (int r = 0; r < 4; ++r) {
      const int row = g + 8 * (r >> 1);
      const int col = 2 * tig + (r & 1);
      float sum = d[lane][r];
      for (int k = 0; k < 8; ++k) sum += am[row][k] * bm[k][col];
      d[lane][r] = sum;
    }
  }
}

// The filter kernel's warp for model block column sx = sx0 + warp of a tile on the host, lane by
// lane with HogFilterKernel's functions: block rows staged as the kernel stages them (bx0 =
// wx0 + sx0, FilterStageSource), its finished column sums into parts[r][column].
// A warp's registers and its CUDA block's staged row, on the heap (tens of KB).
struct FilterWarpState {
  std::uint32_t b[32][2][hog::kFilterSlots];
  float acc[32][2][2][2][2];  // [lane][m][h][n8 tile][c0 or c1]
  float4 stage[hog::kFilterStageQuads];
};

void EmulateFilterWarp(const ScoresParams& p, const ScoreJob& job, const hog::FilterTile& tile,
                       int sx0, int warp, FilterWarpState& state,
                       float (&parts)[hog::kFilterRows][hog::kFilterColumns]) {
  const int wx0 = tile.x * hog::kFilterColumns;
  const int wy0 = tile.y * hog::kFilterRows;
  const int ny = p.model_blocks_y;
  const int blocks_x = job.windows_x + p.model_blocks_x - 1;
  const int rows = std::min(hog::kFilterRows, job.windows_y - wy0);
  const float* level = hog::LevelFeatures(p, job, tile.frame);
  const hog::FilterDone done = hog::FilterDoneOf(ny);
  auto& b = state.b;
  auto& acc = state.acc;
  auto& stage = state.stage;
  for (int lane = 0; lane < 32; ++lane) {
    for (int t = 0; t < 2; ++t) {
      float w[hog::kFilterSlots];
      hog::FilterWeights(p.weights, ny, sx0 + warp, t, lane, w);
      for (int i = 0; i < hog::kFilterSlots; ++i) b[lane][t][i] = hog::Tf32Rounded(w[i]);
    }
  }
  std::memset(acc, 0, sizeof(acc));
  for (int y = wy0; y < wy0 + rows + ny - 1; ++y) {
    for (int i = 0; i < hog::kFilterStageQuads; ++i) {
      stage[i] = *hog::FilterStageSource(level, job, blocks_x, wx0 + sx0, y, i);
    }
    float from[32][2][2][2];  // each lane's shuffle of its source lane's c1, per m, h, tile
    for (int lane = 0; lane < 32; ++lane) {
      const int src = hog::FilterShiftSource(lane);
      for (int m = 0; m < 2; ++m) {
        for (int h = 0; h < 2; ++h) {
          for (int t = 0; t < 2; ++t) from[lane][m][h][t] = acc[src][m][h][t][1];
        }
      }
    }
    for (int lane = 0; lane < 32; ++lane) {
      for (int m = 0; m < 2; ++m) {
        for (int h = 0; h < 2; ++h) {
          hog::FilterShift(lane, acc[lane][m][h], from[lane][m][h][0], from[lane][m][h][1]);
        }
      }
    }
    for (int m = 0; m < 2; ++m) {
      float a[32][2][hog::kFilterSlots];
      for (int lane = 0; lane < 32; ++lane) {
        const float4* row = stage + warp + (lane >> 2) + 16 * m;
        hog::FilterRow(row, lane, a[lane][0]);
        hog::FilterRow(row + 8, lane, a[lane][1]);
      }
      for (int s = 0; s < hog::kFilterSteps; ++s) {
        std::uint32_t frag[32][4];
        for (int lane = 0; lane < 32; ++lane) {
          frag[lane][0] = hog::Tf32Truncated(a[lane][0][2 * s]);
          frag[lane][1] = hog::Tf32Truncated(a[lane][1][2 * s]);
          frag[lane][2] = hog::Tf32Truncated(a[lane][0][2 * s + 1]);
          frag[lane][3] = hog::Tf32Truncated(a[lane][1][2 * s + 1]);
        }
        for (int t = 0; t < 2; ++t) {
          std::uint32_t bf[32][2];
          float d[32][4];
          for (int lane = 0; lane < 32; ++lane) {
            bf[lane][0] = b[lane][t][2 * s];
            bf[lane][1] = b[lane][t][2 * s + 1];
            d[lane][0] = acc[lane][m][0][t][0];
            d[lane][1] = acc[lane][m][0][t][1];
            d[lane][2] = acc[lane][m][1][t][0];
            d[lane][3] = acc[lane][m][1][t][1];
          }
          MmaOnHost(frag, bf, d);
          for (int lane = 0; lane < 32; ++lane) {
            acc[lane][m][0][t][0] = d[lane][0];
            acc[lane][m][0][t][1] = d[lane][1];
            acc[lane][m][1][t][0] = d[lane][2];
            acc[lane][m][1][t][1] = d[lane][3];
          }
        }
      }
    }
    const int r = y - (ny - 1) - wy0;
    if (r < 0) continue;
    for (int lane = 0; lane < 32; ++lane) {
      if ((lane & 3) != done.tig) continue;
      for (int m = 0; m < 2; ++m) {
        for (int h = 0; h < 2; ++h) {
          parts[r][16 * m + 8 * h + (lane >> 2)] = acc[lane][m][h][done.tile][done.reg];
        }
      }
    }
  }
}

// The filter and the exact pass of one chunk on the host (HogFilterKernel, HogExactKernel).
void EmulateFilter(const hog::FilterParams& f, int grid) {
  const ScoresParams& p = f.s;
  float parts[hog::kFilterRows][hog::kFilterColumns];
  float totals[hog::kFilterRows][hog::kFilterColumns];
  const int warps = std::min(p.model_blocks_x, hog::kFilterMaxWarps);
  auto state = std::make_unique<FilterWarpState>();
  for (int block = 0; block < grid; ++block) {
    const int j = FindJobOnHost(p.first_block, p.num_jobs, block);
    const ScoreJob& job = p.jobs[j];
    const hog::FilterTile tile = hog::FilterTileOf(job, block - p.first_block[j]);
    const int wx0 = tile.x * hog::kFilterColumns;
    const int wy0 = tile.y * hog::kFilterRows;
    const int rows = std::min(hog::kFilterRows, job.windows_y - wy0);
    std::fill(&totals[0][0], &totals[0][0] + hog::kFilterRows * hog::kFilterColumns, p.bias);
    for (int sx0 = 0; sx0 < p.model_blocks_x; sx0 += warps) {
      const int columns = std::min(warps, p.model_blocks_x - sx0);
      for (int warp = 0; warp < columns; ++warp) {
        std::fill(&parts[0][0], &parts[0][0] + hog::kFilterRows * hog::kFilterColumns,
                  std::numeric_limits<float>::quiet_NaN());  // every window read is written
        EmulateFilterWarp(p, job, tile, sx0, warp, *state, parts);
        for (int r = 0; r < rows; ++r) {
          for (int c = 0; c < hog::kFilterColumns; ++c) totals[r][c] += parts[r][c];
        }
      }
    }
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < hog::kFilterColumns; ++c) {
        if (wx0 + c >= job.windows_x || !(totals[r][c] >= f.low)) continue;
        const unsigned int slot = (*f.candidate_count)++;
        if (slot < p.capacity) f.candidates[slot] = hog::Candidate{j, tile.frame, wx0 + c, wy0 + r};
      }
    }
  }
  auto* out = p.hits;
  double dots[hog::kExactMaxBlocks];
  const unsigned int count = std::min(*f.candidate_count, p.capacity);
  for (unsigned int c = 0; c < count; ++c) {
    const hog::Candidate w = f.candidates[c];
    const ScoreJob& job = p.jobs[w.job];
    const float* level = hog::LevelFeatures(p, job, w.frame);
    for (int b = 0; b < p.model_blocks_x * p.model_blocks_y; ++b) {
      dots[b] = hog::ExactBlockDot(p, job, level, w.wx, w.wy, b);
    }
    double score = p.bias;
    for (int sx = 0; sx < p.model_blocks_x; ++sx) score += hog::ExactColumn(p, dots, sx);
    if (!(score >= p.threshold)) continue;
    const unsigned int slot = (*p.hit_count)++;
    if (slot < p.capacity) {
      out[slot] = DeviceHit{w.frame * p.levels + job.level, w.wx, w.wy, static_cast<float>(score)};
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
  if (plan.filter) {
    auto* end = static_cast<std::uint8_t*>(workspace) + plan.feature_bytes();
    for (const DetectChunk& chunk : plan.chunks) {
      hog::FilterParams f = chunk.filter;
      f.s.features = static_cast<const float*>(workspace);
      f.s.weights = weights;
      f.s.hit_count = count;
      f.s.hits = out;
      f.candidate_count = reinterpret_cast<unsigned int*>(end);
      f.candidates = reinterpret_cast<hog::Candidate*>(end + hog::kCandidatesHeader);
      *f.candidate_count = 0;
      EmulateFilter(f, chunk.filter_grid);
    }
    return absl::OkStatus();
  }
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
