// Holding a stream so that event-timed work measures GPU time only: while a spin kernel keeps the
// stream busy, the host enqueues the start event, the work and the stop event, so the host's
// submission cost (launch calls, attribute calls) falls outside the events. Every anchor in
// benchmarks/anchors/ is timed the same way.
#ifndef CUIMG_BENCHMARKS_STREAM_HOLD_H_
#define CUIMG_BENCHMARKS_STREAM_HOLD_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"

namespace cuimg::bench {

// Enqueues one single-thread kernel on `stream` that spins for `microseconds` of GPU time.
absl::Status HoldStream(cudaStream_t stream, double microseconds);

// Enqueues one empty kernel (one thread, no work): timed like any workload, it is the floor every
// single-launch figure includes (event records and the launch itself).
absl::Status LaunchEmptyKernel(cudaStream_t stream);

}  // namespace cuimg::bench

#endif  // CUIMG_BENCHMARKS_STREAM_HOLD_H_
