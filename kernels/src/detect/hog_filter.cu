// The filter and exact scores launches (hog_filter.h has the method and the margin): a TF32
// tensor-core sweep lists the windows near the threshold, then a CUDA block per listed window
// computes its exact score. Built with -fmad=false as hog_detect.cu: the exact pass is the
// reference's arithmetic.
#include "hog_filter.h"

#include <algorithm>
#include <cstdint>

#include "common/kernel_attributes.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "hog_device.h"
#include "hog_plan.h"

namespace cuimg {
namespace {

using hog::AppendHit;
using hog::FindJob;
using hog::kScoreLanes;
using hog::ScoreJob;
using hog::ScoresParams;

// D += A B for one m16n8k8 TF32 tile (PTX's fragment layout: hog_filter.h's slot order).
__device__ __forceinline__ void MmaTf32(float (&d)[4], const std::uint32_t (&a)[4],
                                        std::uint32_t b0, std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 16 bytes from global to shared memory without passing registers; the waits below.
__device__ __forceinline__ void CopyAsync(float4* to, const float4* from) {
  const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(to));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared), "l"(from));
}
__device__ __forceinline__ void CommitCopies() { asm volatile("cp.async.commit_group;"); }
template <int kPending>
__device__ __forceinline__ void WaitCopies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending));
}

// The CUDA block's copies of block row y into `slot` (FilterStageSource).
__device__ __forceinline__ void StageRow(const float* level, const ScoreJob& job, int blocks_x,
                                         int bx0, int y, float4* slot) {
  for (int i = static_cast<int>(threadIdx.x); i < hog::kFilterStageQuads;
       i += static_cast<int>(blockDim.x)) {
    CopyAsync(slot + i, hog::FilterStageSource(level, job, blocks_x, bx0, y, i));
  }
}

// The filter's shared memory: the staged rows, each warp's finished column sums, the totals.
struct FilterSmem {
  float4 stage[hog::kFilterStageRows][hog::kFilterStageQuads];
  float parts[hog::kFilterMaxWarps][hog::kFilterRows][hog::kFilterColumns];
  float totals[hog::kFilterRows][hog::kFilterColumns];
};

// The filter (hog_filter.h): a CUDA block per tile of 32 x kFilterRows windows of one frame, a
// warp per model block column. Lane (g, tig) holds accumulator rows g and g + 8 of each m16 half
// m: window columns 16 m + 8 h + g of the tile.
// 3 CUDA blocks an SM (91 registers, 3 x 55 KB of shared memory with the largest carve-out): with
// 2, a one-frame launch of 1080p (355 tiles) took a second, partial wave.
__global__ void __launch_bounds__(hog::kFilterMaxWarps* kScoreLanes, 3)
    HogFilterKernel(const __grid_constant__ hog::FilterParams f) {
  const ScoresParams& p = f.s;
  extern __shared__ float4 dynamic_smem[];
  FilterSmem& sm = *reinterpret_cast<FilterSmem*>(dynamic_smem);
  const int block = static_cast<int>(blockIdx.x);
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int threads = static_cast<int>(blockDim.x);
  const int j = FindJob(p.first_block, p.num_jobs, block);
  const ScoreJob& job = p.jobs[j];
  const hog::FilterTile tile = hog::FilterTileOf(job, block - p.first_block[j]);
  const float* level = hog::LevelFeatures(p, job, tile.frame);
  const int wx0 = tile.x * hog::kFilterColumns;
  const int wy0 = tile.y * hog::kFilterRows;
  const int ny = p.model_blocks_y;
  const int blocks_x = job.windows_x + p.model_blocks_x - 1;  // one block between windows
  const int rows = min(hog::kFilterRows, job.windows_y - wy0);
  const int y_end = wy0 + rows + ny - 1;
  const hog::FilterDone done = hog::FilterDoneOf(ny);
  const int src = hog::FilterShiftSource(lane);
  for (int i = static_cast<int>(threadIdx.x); i < hog::kFilterRows * hog::kFilterColumns;
       i += threads) {
    sm.totals[i / hog::kFilterColumns][i % hog::kFilterColumns] = p.bias;
  }
  constexpr int kAhead = hog::kFilterStageRows - 1;  // rows in flight besides the current one
  const int warps = threads >> 5;
  for (int sx0 = 0; sx0 < p.model_blocks_x; sx0 += warps) {
    const int columns = min(warps, p.model_blocks_x - sx0);
    const int bx0 = wx0 + sx0;
    for (int k = 0; k < kAhead; ++k) {
      if (wy0 + k < y_end) StageRow(level, job, blocks_x, bx0, wy0 + k, sm.stage[k]);
      CommitCopies();  // a group per row, empty or not, so that the waits count rows
    }
    const int sx = sx0 + min(warp, columns - 1);  // a warp past the columns idles (below)
    std::uint32_t b[2][hog::kFilterSlots];
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      float w[hog::kFilterSlots];
      hog::FilterWeights(p.weights, ny, sx, t, lane, w);
#pragma unroll
      for (int i = 0; i < hog::kFilterSlots; ++i) b[t][i] = hog::Tf32Rounded(w[i]);
    }
    float acc[2][2][2][2] = {};  // [m][h][n8 tile][c0 or c1]
    for (int y = wy0; y < y_end; ++y) {
      WaitCopies<kAhead - 1>();  // this thread's copies of row y are done
      __syncthreads();           // everyone's, and every warp is past row y - 1's slot
      const int ahead = y + kAhead;
      if (ahead < y_end) {
        StageRow(level, job, blocks_x, bx0, ahead, sm.stage[(ahead - wy0) % hog::kFilterStageRows]);
      }
      CommitCopies();
      if (warp >= columns) continue;
#pragma unroll
      for (int m = 0; m < 2; ++m) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float from0 = __shfl_sync(0xffffffffu, acc[m][h][0][1], src);
          const float from1 = __shfl_sync(0xffffffffu, acc[m][h][1][1], src);
          hog::FilterShift(lane, acc[m][h], from0, from1);
        }
      }
      const float4* row = sm.stage[(y - wy0) % hog::kFilterStageRows] + warp + (lane >> 2);
      float a[2][2][hog::kFilterSlots];  // [m][h]
#pragma unroll
      for (int m = 0; m < 2; ++m) {
#pragma unroll
        for (int h = 0; h < 2; ++h) hog::FilterRow(row + 16 * m + 8 * h, lane, a[m][h]);
      }
      // Step by step over the four accumulator tiles (m, t): four independent chains.
#pragma unroll
      for (int s = 0; s < hog::kFilterSteps; ++s) {
#pragma unroll
        for (int m = 0; m < 2; ++m) {
          const std::uint32_t frag[4] = {
              hog::Tf32Truncated(a[m][0][2 * s]), hog::Tf32Truncated(a[m][1][2 * s]),
              hog::Tf32Truncated(a[m][0][2 * s + 1]), hog::Tf32Truncated(a[m][1][2 * s + 1])};
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
            sm.parts[warp][r][16 * m + 8 * h + (lane >> 2)] = done.tile == 0 ? t0 : t1;
          }
        }
      }
    }
    WaitCopies<0>();
    __syncthreads();
    for (int i = static_cast<int>(threadIdx.x); i < rows * hog::kFilterColumns; i += threads) {
      const int r = i / hog::kFilterColumns;
      const int c = i % hog::kFilterColumns;
      for (int k = 0; k < columns; ++k) sm.totals[r][c] += sm.parts[k][r][c];
    }
    __syncthreads();
  }
  for (int i = static_cast<int>(threadIdx.x); i < rows * hog::kFilterColumns; i += threads) {
    const int r = i / hog::kFilterColumns;
    const int c = i % hog::kFilterColumns;
    if (wx0 + c >= job.windows_x || !(sm.totals[r][c] >= f.low)) continue;
    const unsigned int slot = atomicAdd(f.candidate_count, 1u);
    if (slot < p.capacity) f.candidates[slot] = hog::Candidate{j, tile.frame, wx0 + c, wy0 + r};
  }
}

// The exact pass (hog_filter.h): a CUDA block per candidate, its threads the model blocks' dots,
// then threads sx < model_blocks_x the columns' sums and thread 0 the score, in the reference's
// order. (A warp per candidate took 23 us for one 1080p frame's few hundred, ncu: each lane's 4
// dots one after the other.)
__global__ void __launch_bounds__(hog::kExactThreads)
    HogExactKernel(const __grid_constant__ hog::FilterParams f) {
  const ScoresParams& p = f.s;
  __shared__ double dots[hog::kExactMaxBlocks];
  __shared__ double columns[hog::kExactMaxBlocks];
  const int t = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  const unsigned int count = min(*f.candidate_count, p.capacity);
  const int blocks = p.model_blocks_x * p.model_blocks_y;
  for (unsigned int c = blockIdx.x; c < count; c += gridDim.x) {
    const hog::Candidate w = f.candidates[c];
    const ScoreJob& job = p.jobs[w.job];
    const float* level = hog::LevelFeatures(p, job, w.frame);
    for (int b = t; b < blocks; b += threads) {
      dots[b] = hog::ExactBlockDot(p, job, level, w.wx, w.wy, b);
    }
    __syncthreads();
    for (int sx = t; sx < p.model_blocks_x; sx += threads) {
      columns[sx] = hog::ExactColumn(p, dots, sx);
    }
    __syncthreads();
    if (t == 0) {
      double score = p.bias;
      for (int sx = 0; sx < p.model_blocks_x; ++sx) score += columns[sx];
      AppendHit(p, job, w.frame, w.wx, w.wy, score);
    }
    __syncthreads();  // the next candidate's dots overwrite these
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
  // Past the 48 KB a kernel gets without asking, and the largest carve-out (3 CUDA blocks an SM).
  constexpr std::size_t kSmem = sizeof(FilterSmem);
  CUIMG_RETURN_IF_ERROR(EnsureKernelSharedMemory(reinterpret_cast<const void*>(HogFilterKernel),
                                                 kSmem, "HogFilterKernel",
                                                 /*max_shared_carveout=*/true));
  HogFilterKernel<<<static_cast<unsigned>(chunk.filter_grid), threads, kSmem, stream>>>(f);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "HogFilterKernel");
  HogExactKernel<<<static_cast<unsigned>(chunk.exact_grid), hog::kExactThreads, 0, stream>>>(f);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "HogExactKernel");
  return absl::OkStatus();
}

}  // namespace cuimg
