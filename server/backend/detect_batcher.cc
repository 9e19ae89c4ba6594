#include "server/backend/detect_batcher.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <utility>

#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/hog_detect.h"

namespace cuimg {

bool SameDetectPlan(const DetectItem& a, const DetectItem& b) {
  // The whole spec, grouping included, though the plan ignores grouping: a simple rule, and
  // calls of one client send one spec.
  const DetectSpec& s = a.spec;
  const DetectSpec& t = b.spec;
  return a.extent == b.extent && a.channels == b.channels && a.model == b.model &&
         s.hit_threshold == t.hit_threshold && s.win_stride == t.win_stride &&
         s.padding == t.padding && s.scale == t.scale && s.max_levels == t.max_levels &&
         s.gamma_correction == t.gamma_correction && s.grouping == t.grouping &&
         s.group_threshold == t.group_threshold && s.group_eps == t.group_eps;
}

DetectBatcher::DetectBatcher(Options options, DetectGroupRunner run)
    : options_(options),
      run_(std::move(run)),
      batcher_(LeaderBatch<DetectItem>::Options{std::clamp(options.max_batch, 1, kMaxDetectFrames),
                                                options.max_delay, &arrivals_, options.lanes},
               // Each batch leases its own workspace from the cache: lanes share nothing.
               [this](int, absl::Span<DetectItem* const> items) { Run(items); }) {
  options_.max_batch = std::clamp(options.max_batch, 1, kMaxDetectFrames);
}

std::vector<std::vector<DetectItem*>> DetectBatcher::Group(absl::Span<DetectItem* const> items,
                                                           int max_batch,
                                                           std::size_t max_workspace_bytes) {
  std::vector<std::vector<DetectItem*>> groups;
  std::vector<bool> taken(items.size(), false);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (taken[i]) continue;
    std::vector<DetectItem*> group;
    std::size_t bytes = 0;
    for (std::size_t j = i; j < items.size(); ++j) {
      if (taken[j] || !SameDetectPlan(*items[i], *items[j])) continue;
      taken[j] = true;
      const bool full = static_cast<int>(group.size()) >= max_batch ||
                        bytes + items[j]->workspace_bytes > max_workspace_bytes;
      if (!group.empty() && full) {
        groups.push_back(std::move(group));
        group.clear();
        bytes = 0;
      }
      group.push_back(items[j]);
      bytes += items[j]->workspace_bytes;
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

absl::Status DetectBatcher::Submit(DetectItem* item, BatchArrivals::Ticket* ticket,
                                   const CancelToken& cancel) {
  item->submitted = std::chrono::steady_clock::now();
  const BatchOutcome outcome =
      batcher_.Submit(item, ticket, [&cancel] { return cancel.Stopped(); });
  if (outcome.size == 0) return cancel.Check();  // left the queue unrun: the token stopped
  return absl::OkStatus();
}

void DetectBatcher::Run(absl::Span<DetectItem* const> items) {
  for (const std::vector<DetectItem*>& group :
       Group(items, options_.max_batch, options_.max_workspace_bytes)) {
    RunGroup(group);
  }
}

void DetectBatcher::RunGroup(absl::Span<DetectItem* const> group) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<std::vector<WindowHit>>> hits = run_(group);
  if (hits.ok() && hits->size() != group.size()) {
    hits = absl::InternalError("a detect group runner gave another count of frames");
  }
  // A whole group failed (a device out of memory for its workspace, a frame the plan refuses):
  // each frame alone, so that the failure stays with the frames it belongs to.
  if (!hits.ok() && group.size() > 1) {
    for (DetectItem* item : group) RunGroup(absl::MakeConstSpan(&item, 1));
    return;
  }
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  for (std::size_t k = 0; k < group.size(); ++k) {
    DetectItem& item = *group[k];
    item.kernel_us = us;
    item.frames = static_cast<int>(group.size());
    item.first = k == 0;
    item.waited_us =
        std::max(0.0, std::chrono::duration<double, std::micro>(start - item.submitted).count());
    if (hits.ok()) {
      item.hits = std::move((*hits)[k]);
    } else {
      item.hits = hits.status();
    }
  }
}

DetectGroupRunner CudaDetectGroupRunner(DeviceBufferCache* cache) {
  return [cache](absl::Span<DetectItem* const> group)
             -> absl::StatusOr<std::vector<std::vector<WindowHit>>> {
    const DetectItem& first = *group.front();
    const int frames = static_cast<int>(group.size());
    CUIMG_ASSIGN_OR_RETURN(DetectPlan plan, DetectPlan::Create(first.extent, first.channels,
                                                               *first.model, first.spec, frames));
    const std::size_t weight_bytes = first.model->weights.size() * sizeof(float);
    CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease weights, cache->Acquire(weight_bytes));
    CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease workspace,
                           cache->Acquire(plan.WorkspaceBytes()));
    CUIMG_ASSIGN_OR_RETURN(DeviceBufferCache::Lease d_hits, cache->Acquire(plan.HitsBytes()));
    // Every caller waits with its stream idle: the first carries the group.
    const cudaStream_t stream = first.stream;
    // The leases go back to the cache only once the stream is idle, whatever fails below
    // (declared after them: destroyed first).
    struct Sync {
      cudaStream_t stream;
      ~Sync() { (void)cudaStreamSynchronize(stream); }
    } sync{stream};
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(weights.data(), first.model->weights.data(),
                                               weight_bytes, cudaMemcpyHostToDevice, stream),
                               "H2D weights");
    std::vector<const void*> in;
    in.reserve(group.size());
    for (const DetectItem* item : group) in.push_back(item->d_in);
    CUIMG_RETURN_IF_ERROR(plan.Run(in, static_cast<const float*>(weights.data()), workspace.data(),
                                   d_hits.data(), stream));
    // The count and the first hits in one copy (a 1080p frame rarely has more than 512: 61 raw
    // hits on a vtest frame), the rest once the count is known, as for one frame
    // (cuda_backend.cc).
    const std::int64_t windows = plan.geometry().windows * frames;
    const std::size_t head =
        std::min<std::size_t>(std::size_t{512} * group.size(), static_cast<std::size_t>(windows));
    std::vector<std::uint8_t> host(DetectPlan::HitsPrefixBytes(head));
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(host.data(), d_hits.data(), host.size(), cudaMemcpyDeviceToHost, stream),
        "D2H hits");
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "hit count");
    // Run() zeroes the count first, so it never exceeds the windows; clamp all the same.
    const auto count = static_cast<std::uint32_t>(
        std::min<std::int64_t>(DetectPlan::HitCount(host.data()), windows));
    if (count > head) {
      const std::size_t had = host.size();
      host.resize(DetectPlan::HitsPrefixBytes(count));
      CUIMG_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(host.data() + had, static_cast<const std::uint8_t*>(d_hits.data()) + had,
                          host.size() - had, cudaMemcpyDeviceToHost, stream),
          "D2H hits");
      CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "hits");
    }
    return plan.DecodeFrameHits(host.data(), count);
  };
}

}  // namespace cuimg
