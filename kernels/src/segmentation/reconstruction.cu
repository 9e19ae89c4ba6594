// ReconstructionPlan on the GPU: the clamp of the marker, the union-find route's check, then the
// bricks (reconstruction_tile.h): off one queue (reconstruction_queue.cu), or in
// rounds over worklists that the rounds themselves fill, launched in batches between which the
// host reads whether any brick is left.
#include "cuimg/kernels/reconstruction.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/kernel_attributes.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/mask_steps.h"
#include "segmentation/reconstruction_plan.h"
#include "segmentation/reconstruction_tile.h"
#include "segmentation/two_levels.h"

namespace cuimg {
namespace {

constexpr int kRoundThreads = 128;  // 4 warps, a brick each at a time
constexpr int kWarpsPerBlock = kRoundThreads / 32;
constexpr int kBlocksPerSm = 8;  // the round's blocks loop over the worklist
constexpr std::size_t kAlign = 256;
// 32-bit pixel indices in the bricks, with room for a row's 32 lanes past the last pixel.
constexpr std::int64_t kMaxPixels = std::numeric_limits<std::int32_t>::max() - 64;
std::size_t AlignUp(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Worklists {
  std::uint32_t* stamp;
  std::uint32_t* list[3];
  seg::WorklistCounters* counters;
  int* round_bricks;                     // seg::kProfiledRounds
  unsigned long long* round_iterations;  // seg::kProfiledRounds
};

template <bool kDilate, typename T>
__global__ void ClampKernel(const T* mask, T* r, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    r[i] = seg::StartValue<kDilate>(r[i], mask[i]);
  }
}

// fill_holes' marker, a block a row at a time: the row's y and z cost one division, where a
// pixel's x, y and z from its index cost three 64-bit divisions a pixel.
template <typename T>
__global__ void FillHolesMarkerKernel(const T* mask, T* r, std::int64_t width, std::int64_t height,
                                      std::int64_t depth) {
  for (std::int64_t row = blockIdx.x; row < height * depth; row += gridDim.x) {
    const std::int64_t y = row % height, z = row / height;
    for (std::int64_t x = threadIdx.x; x < width; x += blockDim.x) {
      const std::int64_t i = row * width + x;
      r[i] = seg::FillHolesMarker(mask[i], seg::OnBorder(x, y, z, width, height, depth));
    }
  }
}

// Round 0's worklist: every brick (seg::FirstRunBrick's order), stamped 0; the other lists empty.
__global__ void ResetWorklistsKernel(Worklists w, std::int64_t bricks, std::int64_t stride) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < bricks; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    w.stamp[i] = 0;
    w.list[0][i] = seg::FirstRunBrick(i, bricks, stride);
  }
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < seg::kProfiledRounds; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    w.round_bricks[i] = 0;
    w.round_iterations[i] = 0;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *w.counters = seg::WorklistCounters{};
    w.counters->count[0] = static_cast<int>(bricks);
  }
}

// Round `round` (ReconstructionTuning::rounds): warps take bricks off the round's list until it is
// spent, each brick in the warp's tiles of shared memory (reconstruction_tile.h); a brick's marked
// neighbours go on the next round's list once each (the stamp). The list after next is reset for
// the round after (nothing reads or writes it in this one).
template <typename T, bool kVolume, bool kFace>
__global__ void __launch_bounds__(kRoundThreads)
    RoundKernel(seg::BrickArgs<T> a, Worklists w, std::uint32_t round) {
  using K = typename seg::KeyTraits<T>::K;
  __shared__ K tiles[kWarpsPerBlock][2][seg::kTileKeys];
  const int cur = round % 3, next = (round + 1) % 3, spare = (round + 2) % 3;
  seg::WorklistCounters& c = *w.counters;
  const int n = c.count[cur];
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    c.count[spare] = 0;
    c.fetch[spare] = 0;
    if (n > 0) {
      atomicAdd(&c.busy_rounds, 1);
      atomicAdd(&c.bricks_run, static_cast<unsigned long long>(n));
      if (round < seg::kProfiledRounds) w.round_bricks[round] = n;
    }
  }
  const int lane = threadIdx.x & 31;
  K* s = tiles[threadIdx.x / 32][0];
  K* g = tiles[threadIdx.x / 32][1];
  int iterations = 0;  // this warp's, added once
  for (;;) {
    int i = 0;
    if (lane == 0) i = atomicAdd(&c.fetch[cur], 1);
    i = __shfl_sync(~0u, i, 0);
    if (i >= n) break;
    const std::uint32_t brick = w.list[cur][i];
    const std::uint32_t marks = seg::ProcessTile<seg::DeviceWarp<K>, T, kVolume, kFace>(
        a, brick, round == 0, iterations, s, g);
    if (lane == 0 && marks != 0) {
      seg::ForEachMarkedBrick(a, brick, marks, [&](std::int64_t nb) {
        if (atomicMax(&w.stamp[nb], round + 1) < round + 1) {
          w.list[next][atomicAdd(&c.count[next], 1)] = static_cast<std::uint32_t>(nb);
        }
      });
    }
  }
  if (lane == 0 && iterations > 0) {
    const auto its = static_cast<unsigned long long>(iterations);
    atomicAdd(&c.iterations, its);
    if (round < seg::kProfiledRounds) atomicAdd(&w.round_iterations[round], its);
  }
}

int Blocks(std::int64_t n, int threads) {
  return static_cast<int>(std::min<std::int64_t>((n + threads - 1) / threads, 4096));
}

template <typename T>
absl::Status RunOnDevice(const ReconstructionPlan::Impl& p, const T* mask, T* r,
                         std::uint8_t* workspace, cudaStream_t stream, const CancelToken& cancel,
                         ReconstructionStats* stats) {
  const std::int64_t n = p.extent.Pixels();
  if (p.dilate) {
    ClampKernel<true><<<Blocks(n, 256), 256, 0, stream>>>(mask, r, n);
  } else {
    ClampKernel<false><<<Blocks(n, 256), 256, 0, stream>>>(mask, r, n);
  }
  CUIMG_CUDA_CHECK_LAUNCH(stream, "reconstruction ClampKernel");
  if (p.two_levels) {
    CUIMG_ASSIGN_OR_RETURN(const bool done, seg::RunTwoLevels(p, mask, r, workspace, stream));
    if (done) {
      if (stats != nullptr) *stats = ReconstructionStats{/*two_levels=*/true};
      return absl::OkStatus();
    }
  }
  Worklists w;
  w.stamp = reinterpret_cast<std::uint32_t*>(workspace + p.stamps_offset);
  for (int i = 0; i < 3; ++i) {
    w.list[i] = reinterpret_cast<std::uint32_t*>(workspace + p.lists_offset[i]);
  }
  w.counters = reinterpret_cast<seg::WorklistCounters*>(workspace + p.counters_offset);
  w.round_bricks = reinterpret_cast<int*>(workspace + p.round_bricks_offset);
  w.round_iterations = reinterpret_cast<unsigned long long*>(workspace + p.round_iterations_offset);
  ResetWorklistsKernel<<<Blocks(std::max<std::int64_t>(p.bricks, seg::kProfiledRounds), 256), 256,
                         0, stream>>>(w, p.bricks, p.first_stride);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "reconstruction ResetWorklistsKernel");
  if (p.queue) return seg::RunQueue(p, mask, r, workspace, stream, cancel, stats);
  const seg::BrickArgs<T> a = seg::ArgsOf(p, mask, r);
  const int grid = static_cast<int>(
      std::min<std::int64_t>((p.bricks + kWarpsPerBlock - 1) / kWarpsPerBlock,
                             std::int64_t{CurrentDeviceLimits().multiprocessors} * kBlocksPerSm));
  const bool profile = stats != nullptr && stats->profile;
  std::vector<CudaEvent> events;  // profile: one before the first round and one after each
  auto record = [&]() -> absl::Status {
    CUIMG_ASSIGN_OR_RETURN(CudaEvent e, CudaEvent::Create());
    CUIMG_RETURN_IF_ERROR(e.Record(stream));
    events.push_back(std::move(e));
    return absl::OkStatus();
  };
  if (profile) CUIMG_RETURN_IF_ERROR(record());
  const std::int64_t cap = ReconstructionPlan::WorstCaseRounds(p.extent);
  // Batches of 1, 2, 4, ... 64 rounds between looks: most images are done in a few rounds, an
  // empty round costs a launch (a few microseconds), and a look costs a host round trip (a
  // one-pixel spiral takes tens of thousands of rounds).
  std::uint32_t round = 0;
  for (int batch = 1;; batch = profile ? 1 : std::min(batch * 2, 64)) {
    for (int b = 0; b < batch; ++b, ++round) {
      seg::VisitBrickKind(p, [&](auto volume, auto face) {
        RoundKernel<T, decltype(volume)::value, decltype(face)::value>
            <<<grid, kRoundThreads, 0, stream>>>(a, w, round);
      });
      CUIMG_CUDA_CHECK_LAUNCH(stream, "reconstruction RoundKernel");
      if (profile) CUIMG_RETURN_IF_ERROR(record());
    }
    int left = 0;
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&left, &w.counters->count[round % 3], sizeof(left),
                                               cudaMemcpyDeviceToHost, stream),
                               "reconstruction worklist length");
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "reconstruction rounds");
    if (left == 0) break;
    CUIMG_RETURN_IF_ERROR(cancel.Check());
    if (round > cap) {
      return absl::InternalError(
          absl::StrCat("reconstruction: ", round, " rounds exceed the bound ", cap));
    }
  }
  if (stats != nullptr) {
    seg::WorklistCounters counters;
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(&counters, w.counters, sizeof(counters), cudaMemcpyDeviceToHost, stream),
        "reconstruction statistics");
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "reconstruction statistics");
    stats->two_levels = false;
    stats->rounds = counters.busy_rounds;
    stats->launched_rounds = static_cast<int>(round);
    stats->bricks = static_cast<std::int64_t>(counters.bricks_run);
    stats->iterations = static_cast<std::int64_t>(counters.iterations);
    stats->per_round.clear();
    if (profile) {
      const int n = std::min<int>(static_cast<int>(round), seg::kProfiledRounds);
      std::vector<int> bricks(static_cast<std::size_t>(n));
      std::vector<unsigned long long> iterations(static_cast<std::size_t>(n));
      CUIMG_CUDA_RETURN_IF_ERROR(
          cudaMemcpy(bricks.data(), w.round_bricks, n * sizeof(int), cudaMemcpyDeviceToHost),
          "reconstruction profile");
      CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpy(iterations.data(), w.round_iterations,
                                            n * sizeof(unsigned long long), cudaMemcpyDeviceToHost),
                                 "reconstruction profile");
      for (int i = 0; i < n; ++i) {
        CUIMG_ASSIGN_OR_RETURN(const float ms, CudaEvent::ElapsedMs(events[i], events[i + 1]));
        stats->per_round.push_back(
            ReconstructionRound{bricks[i], static_cast<std::int64_t>(iterations[i]), ms * 1000.0f});
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReconstructionPlan> ReconstructionPlan::Create(PixelType type, const Extent& extent,
                                                              ReconstructionMethod method,
                                                              Connectivity connectivity,
                                                              ReconstructionRoute route,
                                                              const ReconstructionTuning& tuning) {
  if (extent.width < 1 || extent.height < 1 || extent.depth < 1) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "extent",
                             "every dimension must be >= 1");
  }
  if (extent.width > (1 << 30) || extent.height > (1 << 30) || extent.depth > (1 << 30)) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "extent", "a dimension exceeds 2^30");
  }
  CUIMG_RETURN_IF_ERROR(ValidateConnectivity(connectivity, extent, "connectivity"));
  if (extent.Pixels() > kMaxPixels) {
    return InvalidFieldError(ErrorReason::kLimitExceeded, "extent",
                             "reconstruction on the GPU takes images of fewer than 2^31 - 64 "
                             "pixels");
  }
  auto impl = std::make_shared<Impl>();
  impl->type = type;
  impl->extent = extent;
  impl->dilate = method == ReconstructionMethod::kDilation;
  impl->volume = extent.depth > 1;
  const Connectivity c = ResolveConnectivity(connectivity, extent);
  impl->connectivity = c;
  impl->max_nonzero =
      (c == Connectivity::k4 || c == Connectivity::k6) ? 1 : (c == Connectivity::k26 ? 3 : 2);
  impl->queue = tuning.schedule == ReconstructionSchedule::kQueue;
  const int rows_y = impl->volume ? seg::BrickShape<true>::kRowsY : seg::BrickShape<false>::kRowsY;
  const int rows_z = impl->volume ? seg::BrickShape<true>::kRowsZ : seg::BrickShape<false>::kRowsZ;
  impl->bricks_x = (extent.width + seg::kBrickWidth - 1) / seg::kBrickWidth;
  impl->bricks_y = (extent.height + rows_y - 1) / rows_y;
  impl->bricks_z = (extent.depth + rows_z - 1) / rows_z;
  impl->bricks = impl->bricks_x * impl->bricks_y * impl->bricks_z;
  impl->first_stride = tuning.raster_first ? 1 : seg::FirstRunStride(impl->bricks);
  const std::size_t list_bytes = AlignUp(static_cast<std::size_t>(impl->bricks) * 4);
  impl->stamps_offset = 0;
  for (int i = 0; i < 3; ++i) impl->lists_offset[i] = list_bytes * (1 + i);
  impl->counters_offset = list_bytes * 4;
  static_assert(sizeof(seg::WorklistCounters) <= seg::kCountersBytes);
  impl->round_bricks_offset = impl->counters_offset + seg::kCountersBytes;
  impl->round_iterations_offset =
      impl->round_bricks_offset + AlignUp(seg::kProfiledRounds * sizeof(int));
  impl->workspace_bytes =
      impl->round_iterations_offset + AlignUp(seg::kProfiledRounds * sizeof(unsigned long long));
  if (impl->queue) {
    impl->queue_offset = impl->workspace_bytes;
    impl->workspace_bytes += AlignUp(static_cast<std::size_t>(impl->bricks) * 16);
  }
  impl->two_levels = route == ReconstructionRoute::kAuto;
  if (impl->two_levels) {
    impl->levels_offset = impl->workspace_bytes;
    impl->indicator_offset = impl->levels_offset + AlignUp(sizeof(seg::TwoLevels));
    impl->fill_offset = impl->indicator_offset + AlignUp(static_cast<std::size_t>(extent.Pixels()));
    impl->workspace_bytes = impl->fill_offset + AlignUp(MaskStepWorkspaceBytes(extent));
  }
  ReconstructionPlan plan;
  plan.impl_ = std::move(impl);
  return plan;
}

absl::Status ReconstructionPlan::RunFillHoles(const void* d_mask, void* d_r, void* workspace,
                                              cudaStream_t stream, const CancelToken& cancel,
                                              ReconstructionStats* stats) const {
  CUIMG_RETURN_IF_ERROR(cancel.Check());
  if (impl_->dilate) return absl::InternalError("RunFillHoles: the plan dilates");
  const Impl& p = *impl_;
  return VisitAnyPixelType(p.type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const auto* mask = static_cast<const T*>(d_mask);
    auto* r = static_cast<T*>(d_r);
    auto* ws = static_cast<std::uint8_t*>(workspace);
    if (p.two_levels) {
      CUIMG_ASSIGN_OR_RETURN(const bool done, seg::FillHolesOfTwoLevels(p, mask, r, ws, stream));
      if (done) {
        if (stats != nullptr) *stats = ReconstructionStats{/*two_levels=*/true};
        return absl::OkStatus();
      }
    }
    const Extent& e = p.extent;
    FillHolesMarkerKernel<<<static_cast<int>(std::min<std::int64_t>(e.height * e.depth, 16384)),
                            256, 0, stream>>>(mask, r, e.width, e.height, e.depth);
    CUIMG_CUDA_CHECK_LAUNCH(stream, "FillHolesMarkerKernel");
    return RunOnDevice<T>(p, mask, r, ws, stream, cancel, stats);
  });
}

std::size_t ReconstructionPlan::WorkspaceBytes() const { return impl_->workspace_bytes; }
std::int64_t ReconstructionPlan::Bricks() const { return impl_->bricks; }

std::int64_t ReconstructionPlan::WorstCaseRounds(const Extent& extent) {
  return extent.Pixels() + 1;
}

absl::Status ReconstructionPlan::Run(const void* d_mask, void* d_r, void* workspace,
                                     cudaStream_t stream, const CancelToken& cancel,
                                     ReconstructionStats* stats) const {
  CUIMG_RETURN_IF_ERROR(cancel.Check());
  return VisitAnyPixelType(impl_->type, [&](auto tag) {
    using T = decltype(tag);
    return RunOnDevice<T>(*impl_, static_cast<const T*>(d_mask), static_cast<T*>(d_r),
                          static_cast<std::uint8_t*>(workspace), stream, cancel, stats);
  });
}

}  // namespace cuimg
