// ReconstructionSchedule::kQueue: the bricks (reconstruction_tile.h) without rounds. Warps take
// bricks off one queue and put the neighbours their changes reach back on it, until no brick is
// queued or running, so a brick waits for its own inputs only, never for a round's slowest brick
// or a launch. The host relaunches after a budget of brick runs to look at the cancel token.
//
// A brick is IDLE, QUEUED (once in the queue), RUNNING or DIRTY (running, and a neighbour changed
// since it read its seeds): a mark queues an IDLE brick and dirties a RUNNING one; a run that ends
// DIRTY runs again. So a brick never runs on two warps at once (their stores could lower each
// other's values) and the queue holds at most `bricks` entries. The queue is a ring of 2 x bricks
// slots, each holding its entry's number with the brick; a taker draws the next number and waits
// for that entry (or for the queue to be done). An entry's slot was last used 2 x bricks pushes
// before, and that entry's number has been drawn (otherwise more than `bricks` entries would be
// waiting), so a push waits at most for a running taker to empty it. The bricks read the image
// through L2 (__ldcg): another SM's L1 may hold stale lines of it, and a stale read here is not
// repaired by a later round.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/kernel_attributes.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "segmentation/reconstruction_plan.h"
#include "segmentation/reconstruction_tile.h"

namespace cuimg::seg {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
enum BrickState : std::uint32_t { kIdle = 0, kQueued = 1, kRunning = 2, kDirty = 3 };

// Each hot counter on its own 128-byte line, so that polling one does not queue behind the
// atomics on another.
struct QueueCounters {
  alignas(128) unsigned long long head;  // entry numbers drawn
  alignas(128) unsigned long long tail;  // entries pushed
  alignas(128) int pending;              // entries pushed and not yet finished
  alignas(128) unsigned long long runs;  // statistics, added once a warp
  unsigned long long iterations;
};

struct BrickQueue {
  // 2 x bricks: (entry number + 1) << 32 | brick, 0 when free.
  unsigned long long* slots;
  std::uint32_t* state;  // per brick
  std::uint32_t* ran;    // per brick: 1 once it converged
  QueueCounters* c;
  unsigned long long capacity;
};

__device__ __forceinline__ unsigned long long Entry(unsigned long long number,
                                                    std::uint32_t brick) {
  return ((number + 1) << 32) | brick;
}

// DeviceWarp reading global memory through L2.
template <typename K>
struct L2Warp : DeviceWarp<K> {
  using typename DeviceWarp<K>::V;
  using typename DeviceWarp<K>::B;
  template <typename T>
  static __device__ __forceinline__ V Load(const T* p, BrickIndex base, B in, bool flip,
                                           V fallback) {
    return in ? KeyTraits<T>::ToKey(__ldcg(p + base + DeviceWarp<K>::Lane()), flip) : fallback;
  }
  template <typename T, typename F>
  static __device__ __forceinline__ V LoadEach(const T* p, F index, B in, bool flip, V fallback) {
    return in ? KeyTraits<T>::ToKey(__ldcg(p + index(DeviceWarp<K>::Lane())), flip) : fallback;
  }
};

__global__ void InitQueueKernel(BrickQueue q, std::int64_t bricks, std::int64_t stride) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < static_cast<std::int64_t>(q.capacity);
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    q.slots[i] = i < bricks ? Entry(i, FirstRunBrick(i, bricks, stride)) : 0ull;
    if (i < bricks) {
      q.state[i] = kQueued;
      q.ran[i] = 0;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *q.c = QueueCounters{};
    q.c->tail = static_cast<unsigned long long>(bricks);
    q.c->pending = static_cast<int>(bricks);
  }
}

__device__ void Push(const BrickQueue& q, std::uint32_t brick) {
  atomicAdd(&q.c->pending, 1);
  const unsigned long long number = atomicAdd(&q.c->tail, 1ull);
  volatile unsigned long long* slot = q.slots + number % q.capacity;
  while (*slot != 0) __nanosleep(32);
  *slot = Entry(number, brick);
}

// Lane 0: takes the next entry (its brick), or returns -1 when the queue is done or the launch's
// entries (up to `limit`) are taken. A number at or past `limit` is given up at once; the host
// hands those numbers out again in the next launch (ResumeKernel).
__device__ std::int64_t Take(const BrickQueue& q, unsigned long long limit) {
  volatile QueueCounters* c = q.c;
  // Idle warps wait here rather than on numbers far past the pushes, backing off: thousands of
  // them polling the counters' line would slow the atomics of the warps at work on it.
  for (unsigned sleep = 64; c->head >= c->tail; sleep = min(2 * sleep, 2048u)) {
    if (c->pending == 0 || c->head >= limit) return -1;
    __nanosleep(sleep);
  }
  const unsigned long long number = atomicAdd(&q.c->head, 1ull);
  if (number >= limit) return -1;
  volatile unsigned long long* slot = q.slots + number % q.capacity;
  for (;;) {
    const unsigned long long v = *slot;
    if ((v >> 32) == number + 1) {
      *slot = 0;
      return static_cast<std::uint32_t>(v);
    }
    if (c->pending == 0) return -1;  // nothing will be pushed any more
    __nanosleep(64);
  }
}

// Before a launch that continues one stopped by its budget: every number below the old limit was
// served, those from it on were given up.
__global__ void ResumeKernel(QueueCounters* c, unsigned long long limit) { c->head = limit; }

template <typename T, bool kVolume, bool kFace>
__global__ void __launch_bounds__(kThreads)
    QueueKernel(BrickArgs<T> a, BrickQueue q, unsigned long long limit) {
  using K = typename KeyTraits<T>::K;
  __shared__ K tiles[kWarps][2][kTileKeys];
  const int lane = threadIdx.x & 31;
  K* s = tiles[threadIdx.x / 32][0];
  K* g = tiles[threadIdx.x / 32][1];
  unsigned long long runs = 0, iterations = 0;  // this warp's
  for (;;) {
    std::int64_t taken = 0;
    if (lane == 0) {
      taken = Take(q, limit);
      if (taken >= 0) {
        q.state[taken] = kRunning;  // only this warp holds it now
        __threadfence();
      }
    }
    taken = __shfl_sync(~0u, taken, 0);
    if (taken < 0) {
      if (lane == 0) {
        atomicAdd(&q.c->runs, runs);
        atomicAdd(&q.c->iterations, iterations);
      }
      return;
    }
    const auto brick = static_cast<std::uint32_t>(taken);
    bool first = __shfl_sync(
        ~0u, lane == 0 ? *static_cast<volatile std::uint32_t*>(q.ran + brick) == 0 : 0, 0);
    for (;;) {
      int passes = 0;
      const std::uint32_t marks =
          ProcessTile<L2Warp<K>, T, kVolume, kFace>(a, brick, first, passes, s, g);
      ++runs;
      iterations += static_cast<unsigned long long>(passes);
      first = false;
      __threadfence();  // this run's stores before any mark
      __syncwarp();
      int again = 0;
      if (lane == 0) {
        ForEachMarkedBrick(a, static_cast<BrickIndex>(brick), marks, [&](std::int64_t nb) {
          // Read through L2: a stale QUEUED or DIRTY would lose the mark.
          std::uint32_t old = *static_cast<volatile std::uint32_t*>(q.state + nb);
          for (;;) {
            if (old == kQueued || old == kDirty) break;
            const std::uint32_t want = old == kIdle ? kQueued : kDirty;
            const std::uint32_t seen = atomicCAS(&q.state[nb], old, want);
            if (seen == old) {
              if (old == kIdle) Push(q, static_cast<std::uint32_t>(nb));
              break;
            }
            old = seen;
          }
        });
        q.ran[brick] = 1;
        // Done unless a neighbour dirtied it meanwhile: then it runs again, here.
        again = atomicCAS(&q.state[brick], kRunning, kIdle) == kDirty;
        if (again) {
          q.state[brick] = kRunning;
          __threadfence();
        }
      }
      again = __shfl_sync(~0u, again, 0);
      if (!again) break;
    }
    if (lane == 0) {
      __threadfence();
      atomicSub(&q.c->pending, 1);
    }
  }
}

int Blocks(std::int64_t n, int threads) {
  return static_cast<int>(std::min<std::int64_t>((n + threads - 1) / threads, 4096));
}

}  // namespace

absl::Status RunQueue(const ReconstructionPlan::Impl& p, const void* mask, void* r,
                      std::uint8_t* workspace, cudaStream_t stream, const CancelToken& cancel,
                      ReconstructionStats* stats) {
  BrickQueue q;
  q.slots = reinterpret_cast<unsigned long long*>(workspace + p.queue_offset);
  q.state = reinterpret_cast<std::uint32_t*>(workspace + p.lists_offset[0]);
  q.ran = reinterpret_cast<std::uint32_t*>(workspace + p.stamps_offset);
  q.c = reinterpret_cast<QueueCounters*>(workspace + p.counters_offset);
  q.capacity = 2ull * static_cast<unsigned long long>(p.bricks);
  static_assert(sizeof(QueueCounters) <= kCountersBytes);
  InitQueueKernel<<<Blocks(static_cast<std::int64_t>(q.capacity), 256), 256, 0, stream>>>(
      q, p.bricks, p.first_stride);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "reconstruction InitQueueKernel");
  return VisitAnyPixelType(p.type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const BrickArgs<T> a = ArgsOf(p, static_cast<const T*>(mask), static_cast<T*>(r));
    auto kernel = VisitBrickKind(p, [](auto volume, auto face) {
      return &QueueKernel<T, decltype(volume)::value, decltype(face)::value>;
    });
    int per_sm = 0;
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0),
        "reconstruction occupancy");
    const int grid = static_cast<int>(std::min<std::int64_t>(
        std::max(1, per_sm) * std::int64_t{CurrentDeviceLimits().multiprocessors},
        (p.bricks + kWarps - 1) / kWarps));
    // A launch's budget: a few runs a brick (the CT's hmax takes about 6 in all), then the host
    // looks at the cancel token.
    const unsigned long long budget = 8ull * static_cast<unsigned long long>(p.bricks);
    const std::int64_t cap = ReconstructionPlan::WorstCaseRounds(p.extent);
    int launches = 0;
    QueueCounters counters{};
    for (unsigned long long limit = budget;; limit += budget) {
      if (launches > 0) {
        ResumeKernel<<<1, 1, 0, stream>>>(q.c, limit - budget);
        CUIMG_CUDA_CHECK_LAUNCH(stream, "reconstruction ResumeKernel");
      }
      kernel<<<grid, kThreads, 0, stream>>>(a, q, limit);
      CUIMG_CUDA_CHECK_LAUNCH(stream, "reconstruction QueueKernel");
      ++launches;
      CUIMG_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(&counters, q.c, sizeof(counters), cudaMemcpyDeviceToHost, stream),
          "reconstruction queue");
      CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "reconstruction queue");
      if (counters.pending == 0) break;
      CUIMG_RETURN_IF_ERROR(cancel.Check());
      if (launches > cap) {
        return absl::InternalError(
            absl::StrCat("reconstruction: ", launches, " launches exceed the bound ", cap));
      }
    }
    if (stats != nullptr) {
      stats->two_levels = false;
      stats->rounds = launches;
      stats->launched_rounds = launches;
      stats->bricks = static_cast<std::int64_t>(counters.runs);
      stats->iterations = static_cast<std::int64_t>(counters.iterations);
      stats->per_round.clear();
    }
    return absl::OkStatus();
  });
}

}  // namespace cuimg::seg
