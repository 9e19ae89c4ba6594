// HOG launches over the frames of DetectPedestrians calls that reach one device together (issue
// 50): a frame whose input is on the device waits while batches run in every lane (up to
// --detect_batch_lanes at once), and the next batch runs the waiting frames of one shape,
// channel count, model and spec in one DetectPlan (up to --detect_batch_max_size frames,
// kernels/include/cuimg/kernels/hog_detect.h: one launch pair for all of them, each frame's hits
// bit for bit those of the frame alone); frames of other kinds in the same batch run in plans of
// their own. A frame that finds a lane free runs at once and alone unless other frames announced
// themselves (Expect) and are still on their way, for which it waits up to --batch_max_delay_us:
// batching costs latency only under load.
#ifndef CUIMG_SERVER_BACKEND_DETECT_BATCHER_H_
#define CUIMG_SERVER_BACKEND_DETECT_BATCHER_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/device_buffer_cache.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/hog_types.h"
#include "server/backend/leader_batch.h"

namespace cuimg {

// One frame waiting for its launch.
struct DetectItem {
  // The frame in the device's memory, complete (its stream idle), and what it is.
  const void* d_in = nullptr;
  Extent extent;
  int channels = 1;
  const HogModel* model = nullptr;  // must outlive Submit
  DetectSpec spec;
  // WorkspaceBytes() of the frame's plan alone: what the frame adds to a batch's workspace.
  std::size_t workspace_bytes = 0;
  // The caller's stream, idle while it waits: any item's may carry its batch.
  cudaStream_t stream = nullptr;
  // The outcome: the frame's hits in HitOrder, as a plan of the frame alone gives them.
  absl::StatusOr<std::vector<WindowHit>> hits;
  // The launches and copies of the plan that ran the frame (host time, µs), its frames, whether
  // this item reports that plan (one item of each does, so that plans count once), and how long
  // the frame waited between Submit and its plan's start (µs).
  double kernel_us = 0;
  int frames = 0;
  bool first = false;
  double waited_us = 0;
  std::chrono::steady_clock::time_point submitted;  // set by Submit
};

// Runs one group of frames that SameDetectPlan accepts together (1..max_batch of them, their
// workspace within the batcher's bound) and returns each frame's hits, in the group's order.
using DetectGroupRunner = std::function<absl::StatusOr<std::vector<std::vector<WindowHit>>>(
    absl::Span<DetectItem* const>)>;

// True when one DetectPlan can run both frames: the same extent, channels, model (by address)
// and every field of the spec.
bool SameDetectPlan(const DetectItem& a, const DetectItem& b);

class DetectBatcher {
 public:
  struct Options {
    int max_batch = 4;  // clamped to [1, kMaxDetectFrames]
    // Longest a batch waits for frames announced (Expect) and not yet submitted; 0: never.
    std::chrono::microseconds max_delay{0};
    // A group's frames' workspace_bytes together stay within this (a frame alone always runs):
    // a batch's memory is bounded whatever the frames' size.
    std::size_t max_workspace_bytes = std::size_t{1} << 30;
    // Batches whose launches may run at once (on their first frames' streams), >= 1: one batch's
    // host work (its plan, the hits' copy and decoding) overlaps another's kernels. Each has its
    // own workspace, within max_workspace_bytes.
    int lanes = 1;
  };

  // `run`: how a group runs (CudaDetectGroupRunner on a device; a fake in tests).
  DetectBatcher(Options options, DetectGroupRunner run);

  // The frames of one batch, grouped: SameDetectPlan's classes in order of their first frame,
  // each in arrival order, cut into groups of at most max_batch frames whose workspace_bytes sum
  // to at most max_workspace_bytes (a frame larger than that alone).
  static std::vector<std::vector<DetectItem*>> Group(absl::Span<DetectItem* const> items,
                                                     int max_batch,
                                                     std::size_t max_workspace_bytes);

  // Announces a frame on its way (before its input copy), for a batch forming to wait for; the
  // ticket goes to Submit (or, dropped, stops counting).
  BatchArrivals::Ticket Expect() { return arrivals_.Expect(); }

  // Returns once `item`'s frame has run, its outcome in the item: OK then (the frame's own
  // failure is in item->hits). If `cancel` stops while the frame still waits for a batch, the
  // frame leaves unrun and Submit returns cancel's status. A group that fails as a whole is run
  // again frame by frame, so that one frame's failure is only its own. Thread-safe; the device
  // must be current on the calling thread.
  absl::Status Submit(DetectItem* item, BatchArrivals::Ticket* ticket, const CancelToken& cancel);

  // Frames queued and not yet taken by a batch (tests).
  std::size_t waiting() const { return batcher_.waiting(); }

 private:
  void Run(absl::Span<DetectItem* const> items);
  void RunGroup(absl::Span<DetectItem* const> group);

  Options options_;
  DetectGroupRunner run_;
  BatchArrivals arrivals_;
  LeaderBatch<DetectItem> batcher_;
};

// The runner of a device: one DetectPlan over the group's frames on the first frame's stream,
// its weights, workspace and hits from `cache` (which must outlive the runner); the count and
// the first hits in one copy, the rest once the count is known.
DetectGroupRunner CudaDetectGroupRunner(DeviceBufferCache* cache);

}  // namespace cuimg

#endif  // CUIMG_SERVER_BACKEND_DETECT_BATCHER_H_
