#include "stream_hold.h"

#include "cuimg/common/cuda_status.h"

namespace cuimg::bench {
namespace {

__device__ __forceinline__ unsigned long long GlobalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void SpinKernel(unsigned long long ns) {
  const unsigned long long start = GlobalTimerNs();
  while (GlobalTimerNs() - start < ns) __nanosleep(500);
}

__global__ void EmptyKernel() {}

}  // namespace

absl::Status LaunchEmptyKernel(cudaStream_t stream) {
  EmptyKernel<<<1, 1, 0, stream>>>();
  CUIMG_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError(), "EmptyKernel");
  return absl::OkStatus();
}

absl::Status HoldStream(cudaStream_t stream, double microseconds) {
  SpinKernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(microseconds * 1e3));
  CUIMG_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError(), "SpinKernel");
  return absl::OkStatus();
}

}  // namespace cuimg::bench
