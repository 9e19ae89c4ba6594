// The filter and exact scores launches (hog_filter.h has the method and the margin): a TF32
// tensor-core sweep lists the windows near the threshold, then a warp per listed window computes
// its exact score. Built with -fmad=false as hog_detect.cu: the exact pass is the reference's
// arithmetic.
#include <algorithm>
#include <cstdint>

#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "hog_device.h"
#include "hog_filter.h"
#include "hog_plan.h"

namespace cuimg {
namespace {

using hog::AppendHit;
using hog::FindJob;
using hog::kScoreLanes;
using hog::LaneWindow;
using hog::ScoreJob;
using hog::ScoresParams;
using hog::TilePos;

// D += A B for one m16n8k8 TF32 tile (PTX's fragment layout: hog_filter.h's slot order).
__device__ __forceinline__ void MmaTf32(float (&d)[4], const std::uint32_t (&a)[4],
                                        std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The filter (hog_filter.h): a CUDA block per tile of 32 x kFilterRows windows, a warp per model
// block column. Lane (g, tig) holds accumulator rows g and g + 8 of each m16 half m: window
// columns x = 32 tile.x + 16 m + 8 h + g.
__global__ void __launch_bounds__(hog::kFilterMaxWarps* kScoreLanes)
    HogFilterKernel(const __grid_constant__ hog::FilterParams f) {
  const ScoresParams& p = f.s;
  __shared__ float parts[hog::kFilterMaxWarps][hog::kFilterRows][hog::kFilterColumns];
  __shared__ float totals[hog::kFilterRows][hog::kFilterColumns];
  const int block = static_cast<int>(blockIdx.x);
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int threads = static_cast<int>(blockDim.x);
  const int j = FindJob(p.first_block, p.num_jobs, block);
  const ScoreJob& job = p.jobs[j];
  const TilePos tile = hog::TileOf(job, block - p.first_block[j]);
  const int wy0 = tile.y * hog::kFilterRows;
  const int ny = p.model_blocks_y;
  const int rows = min(hog::kFilterRows, job.windows_y - wy0);
  const int y_end = wy0 + rows + ny - 1;
  const hog::FilterDone done = hog::FilterDoneOf(ny);
  const int src = hog::FilterShiftSource(lane);
  for (int i = static_cast<int>(threadIdx.x); i < hog::kFilterRows * hog::kFilterColumns;
       i += threads) {
    totals[i / hog::kFilterColumns][i % hog::kFilterColumns] = p.bias;
  }
  const int warps = threads >> 5;
  for (int sx0 = 0; sx0 < p.model_blocks_x; sx0 += warps) {
    const int columns = min(warps, p.model_blocks_x - sx0);
    if (warp < columns) {
      const int sx = sx0 + warp;
      std::uint32_t b[2][hog::kFilterSlots];
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        float w[hog::kFilterSlots];
        hog::FilterWeights(p.weights, ny, sx, t, lane, w);
#pragma unroll
        for (int i = 0; i < hog::kFilterSlots; ++i) b[t][i] = hog::Tf32Rounded(w[i]);
      }
      const float* column[2][2];
#pragma unroll
      for (int m = 0; m < 2; ++m) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const LaneWindow w =
              hog::LaneWindowOf(p, job, tile.x * kScoreLanes + 16 * m + 8 * h + (lane >> 2));
          column[m][h] =
              hog::LevelFeatures(p, job, w.frame) + hog::FeatureIndex(job.pitch, w.wx + sx, 0, 0);
        }
      }
      float acc[2][2][2][2] = {};  // [m][h][n8 tile][c0 or c1]
      for (int y = wy0; y < y_end; ++y) {
#pragma unroll
        for (int m = 0; m < 2; ++m) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const float from0 = __shfl_sync(0xffffffffu, acc[m][h][0][1], src);
            const float from1 = __shfl_sync(0xffffffffu, acc[m][h][1][1], src);
            hog::FilterShift(lane, acc[m][h], from0, from1);
          }
        }
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          float a[2][hog::kFilterSlots];
          hog::FilterRow(column[m][0], job.pitch, y, lane, a[0]);
          hog::FilterRow(column[m][1], job.pitch, y, lane, a[1]);
#pragma unroll
          for (int s = 0; s < hog::kFilterSteps; ++s) {
            const std::uint32_t frag[4] = {
                hog::Tf32Truncated(a[0][2 * s]), hog::Tf32Truncated(a[1][2 * s]),
                hog::Tf32Truncated(a[0][2 * s + 1]), hog::Tf32Truncated(a[1][2 * s + 1])};
#pragma unroll
            for (int t = 0; t < 2; ++t) {
              float d[4] = {acc[m][0][t][0], acc[m][0][t][1], acc[m][1][t][0], acc[m][1][t][1]};
              MmaTf32(d, frag, b[t][2 * s], b[t][2 * s + 1]);
              acc[m][0][t][0] = d[0];
              acc[m][0][t][1] = d[1];
              acc[m][1][t][0] = d[2];
              acc[m][1][t][1] = d[3];
            }
          }
        }
        const int r = y - (ny - 1) - wy0;  // the window row whose column sum is now finished
        if (r >= 0 && (lane & 3) == done.tig) {
#pragma unroll
          for (int m = 0; m < 2; ++m) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              // Selects, not an index: acc stays in registers.
              const float t0 = done.reg == 0 ? acc[m][h][0][0] : acc[m][h][0][1];
              const float t1 = done.reg == 0 ? acc[m][h][1][0] : acc[m][h][1][1];
              const float v = done.tile == 0 ? t0 : t1;
              parts[warp][r][16 * m + 8 * h + (lane >> 2)] = v;
            }
          }
        }
      }
    }
    __syncthreads();
    for (int i = static_cast<int>(threadIdx.x); i < rows * hog::kFilterColumns; i += threads) {
      const int r = i / hog::kFilterColumns;
      const int c = i % hog::kFilterColumns;
      for (int k = 0; k < columns; ++k) totals[r][c] += parts[k][r][c];
    }
    __syncthreads();
  }
  for (int i = static_cast<int>(threadIdx.x); i < rows * hog::kFilterColumns; i += threads) {
    const int r = i / hog::kFilterColumns;
    const int c = i % hog::kFilterColumns;
    const LaneWindow w = hog::LaneWindowOf(p, job, tile.x * kScoreLanes + c);
    if (!w.valid || !(totals[r][c] >= f.low)) continue;
    const unsigned int slot = atomicAdd(f.candidate_count, 1u);
    if (slot < p.capacity) f.candidates[slot] = hog::Candidate{j, w.frame, w.wx, wy0 + r};
  }
}

// The exact pass (hog_filter.h): a warp per candidate, the lanes its model blocks' dots, then
// lanes sx < model_blocks_x its columns' sums and lane 0 the score, in the reference's order.
__global__ void __launch_bounds__(hog::kExactWarps* kScoreLanes)
    HogExactKernel(const __grid_constant__ hog::FilterParams f) {
  const ScoresParams& p = f.s;
  __shared__ double dots[hog::kExactWarps][hog::kExactMaxBlocks];
  __shared__ double columns[hog::kExactWarps][hog::kExactMaxBlocks];
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const unsigned int count = min(*f.candidate_count, p.capacity);
  const int blocks = p.model_blocks_x * p.model_blocks_y;
  for (unsigned int c = blockIdx.x * hog::kExactWarps + warp; c < count;
       c += gridDim.x * hog::kExactWarps) {
    const hog::Candidate w = f.candidates[c];
    const ScoreJob& job = p.jobs[w.job];
    const float* level = hog::LevelFeatures(p, job, w.frame);
    for (int b = lane; b < blocks; b += kScoreLanes) {
      dots[warp][b] = hog::ExactBlockDot(p, job, level, w.wx, w.wy, b);
    }
    __syncwarp();
    for (int sx = lane; sx < p.model_blocks_x; sx += kScoreLanes) {
      columns[warp][sx] = hog::ExactColumn(p, dots[warp], sx);
    }
    __syncwarp();
    if (lane == 0) {
      double score = p.bias;
      for (int sx = 0; sx < p.model_blocks_x; ++sx) score += columns[warp][sx];
      AppendHit(p, job, w.frame, w.wx, w.wy, score);
    }
    __syncwarp();
  }
}

}  // namespace

absl::Status LaunchFilter(const DetectChunk& chunk, const ScoresParams& p, void* candidates,
                          cudaStream_t stream) {
  hog::FilterParams f = chunk.filter;
  f.s.features = p.features;
  f.s.weights = p.weights;
  f.s.hit_count = p.hit_count;
  f.s.hits = p.hits;
  f.candidate_count = static_cast<unsigned int*>(candidates);
  f.candidates = reinterpret_cast<hog::Candidate*>(static_cast<std::uint8_t*>(candidates) +
                                                   hog::kCandidatesHeader);
  CUIMG_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(f.candidate_count, 0, sizeof(unsigned int), stream),
                             "zero the candidates");
  const auto threads =
      static_cast<unsigned>(std::min(p.model_blocks_x, hog::kFilterMaxWarps) * kScoreLanes);
  HogFilterKernel<<<static_cast<unsigned>(chunk.filter_grid), threads, 0, stream>>>(f);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "HogFilterKernel");
  HogExactKernel<<<static_cast<unsigned>(chunk.exact_grid), hog::kExactWarps * kScoreLanes, 0,
                   stream>>>(f);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "HogExactKernel");
  return absl::OkStatus();
}

}  // namespace cuimg
