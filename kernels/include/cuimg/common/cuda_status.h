// cudaError_t -> absl::Status, at the call site, with the operation's name and location.
#ifndef CUIMG_COMMON_CUDA_STATUS_H_
#define CUIMG_COMMON_CUDA_STATUS_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"

namespace cuimg {

// True for errors that corrupt the CUDA context: every later call on the device fails until the
// process restarts, so the device must leave rotation.
bool IsStickyCudaError(cudaError_t error);

// OK for cudaSuccess. Otherwise a Status whose code says what the caller can do:
// RESOURCE_EXHAUSTED for out-of-memory, UNAVAILABLE for a missing/lost device or a sticky error,
// INTERNAL for the rest. Non-sticky errors are cleared so they do not leak into later calls.
absl::Status CudaStatus(cudaError_t error, const char* what, const char* file, int line);

}  // namespace cuimg

#define CUIMG_CUDA_RETURN_IF_ERROR(expr, what)                                   \
  do {                                                                           \
    const cudaError_t cuimg_cuda_error_ = (expr);                                \
    if (cuimg_cuda_error_ != cudaSuccess)                                        \
      return ::cuimg::CudaStatus(cuimg_cuda_error_, (what), __FILE__, __LINE__); \
  } while (0)

// After a <<<>>> launch: checks the launch, and with CUIMG_CUDA_DEBUG_SYNC also its execution.
#ifdef CUIMG_CUDA_DEBUG_SYNC
#define CUIMG_CUDA_CHECK_LAUNCH(stream, what)                        \
  do {                                                               \
    CUIMG_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError(), what);         \
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), what); \
  } while (0)
#else
#define CUIMG_CUDA_CHECK_LAUNCH(stream, what) \
  CUIMG_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError(), what)
#endif

#endif  // CUIMG_COMMON_CUDA_STATUS_H_
