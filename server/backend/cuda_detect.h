// The device part of the CUDA backend's DetectPedestrians: a frame detected alone on its call's
// stream, or handed to the device's DetectBatcher to share HOG launches with frames that reach
// the device with it (cuda_backend.cc picks one by --detect_batch_max_size).
#ifndef CUIMG_SERVER_BACKEND_CUDA_DETECT_H_
#define CUIMG_SERVER_BACKEND_CUDA_DETECT_H_

#include <vector>

#include "absl/status/status.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/kernels/hog_detect.h"
#include "server/backend/cuda_device.h"
#include "server/backend/detect_batcher.h"

namespace cuimg::cuda_backend {

// Runs `plan` (one frame, made for `in` and `model`) on `in` on c's stream and sets `*hits` to
// its hits in HitOrder; marks the call's four stage times. The call's device must be current.
absl::Status DetectAlone(DeviceCall& c, const DetectPlan& plan, const InputImage& in,
                         const HogModel& model, std::vector<WindowHit>* hits);

// Copies `in` to the device, then runs it through `hog` (the call's device's batcher) with
// `model` and `spec`; `plan` is the frame's plan alone (its workspace prices the frame in a
// batch). `*item` holds the outcome (its hits, its batch's frames and kernel time) once this
// returns OK; an error is the frame's own (its copy, the batch's failure for it, or `cancel`
// stopping while it waited). Marks the call's four stage times.
absl::Status DetectBatched(DeviceCall& c, DetectBatcher& hog, const DetectPlan& plan,
                           const InputImage& in, const HogModel& model, const DetectSpec& spec,
                           const CancelToken& cancel, DetectItem* item);

}  // namespace cuimg::cuda_backend

#endif  // CUIMG_SERVER_BACKEND_CUDA_DETECT_H_
