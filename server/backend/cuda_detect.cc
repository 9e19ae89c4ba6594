#include "server/backend/cuda_detect.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"

namespace cuimg::cuda_backend {

absl::Status DetectAlone(DeviceCall& c, const DetectPlan& plan, const InputImage& in,
                         const HogModel& model, std::vector<WindowHit>* hits) {
  const std::size_t weight_bytes = model.weights.size() * sizeof(float);
  CUIMG_ASSIGN_OR_RETURN(void* d_weights, c.Acquire(weight_bytes));
  CUIMG_ASSIGN_OR_RETURN(void* d_ws, c.Acquire(plan.WorkspaceBytes()));
  CUIMG_ASSIGN_OR_RETURN(void* d_hits, c.Acquire(plan.HitsBytes()));
  CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
  CUIMG_ASSIGN_OR_RETURN(const void* d_in, c.Input(in));
  CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_weights, model.weights.data(), weight_bytes,
                                             cudaMemcpyHostToDevice, c.stream),
                             "H2D weights");
  CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
  CUIMG_RETURN_IF_ERROR(
      plan.Run({d_in}, static_cast<const float*>(d_weights), d_ws, d_hits, c.stream));
  CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
  // The count and the first hits come back in one copy (a frame rarely has more: 61 raw hits
  // on a 1080p vtest frame); the rest, if any, in a second one once the count is known. 512
  // (8 KB) and not 4096: the 64 KB copy into pageable memory took 37 us of the call (run 205).
  constexpr std::size_t kFirstHits = 512;
  const std::size_t first =
      std::min<std::size_t>(kFirstHits, static_cast<std::size_t>(plan.geometry().windows));
  std::vector<std::uint8_t> host(DetectPlan::HitsPrefixBytes(first));
  CUIMG_RETURN_IF_ERROR(CopyToHost(host.data(), d_hits, host.size(), c.stream));
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(c.stream), "hit count");
  // Run() zeroes the count first, so it never exceeds the windows; clamp all the same.
  const std::uint32_t count = static_cast<std::uint32_t>(
      std::min<std::int64_t>(DetectPlan::HitCount(host.data()), plan.geometry().windows));
  if (count > first) {
    const std::size_t head = host.size();
    host.resize(DetectPlan::HitsPrefixBytes(count));
    CUIMG_RETURN_IF_ERROR(CopyToHost(host.data() + head,
                                     static_cast<const std::uint8_t*>(d_hits) + head,
                                     host.size() - head, c.stream));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(c.stream), "hits");
  }
  *hits = DetectPlan::DecodeHits(host.data(), count);
  return c.timer.Mark(3, c.stream);
}

absl::Status DetectBatched(DeviceCall& c, DetectBatcher& hog, const DetectPlan& plan,
                           const InputImage& in, const HogModel& model, const DetectSpec& spec,
                           const CancelToken& cancel, DetectItem* item) {
  // Announced before the input's copy, so that a batch forming meanwhile may wait for it.
  BatchArrivals::Ticket ticket = hog.Expect();
  CUIMG_RETURN_IF_ERROR(c.timer.Mark(0, c.stream));
  CUIMG_ASSIGN_OR_RETURN(item->d_in, c.Input(in));
  CUIMG_RETURN_IF_ERROR(c.timer.Mark(1, c.stream));
  // The batch may run on another caller's stream: the input must be there first.
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(c.stream), "before the HOG batch");
  item->extent = in.extent;
  item->channels = in.channels;
  item->model = &model;
  item->spec = spec;
  item->workspace_bytes = plan.WorkspaceBytes();
  item->stream = c.stream;
  CUIMG_RETURN_IF_ERROR(hog.Submit(item, &ticket, cancel));
  CUIMG_RETURN_IF_ERROR(item->hits.status());
  // Marks 2 and 3 on this stream, idle: the kernel time is the batch's (cuda_backend.cc).
  CUIMG_RETURN_IF_ERROR(c.timer.Mark(2, c.stream));
  return c.timer.Mark(3, c.stream);
}

}  // namespace cuimg::cuda_backend
