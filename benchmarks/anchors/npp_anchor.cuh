// What the NPP anchors share (npp_morphology.cu, npp_gradient_pyramid.cu): errors that abort the
// current workload with a message, the NPP stream context filled by hand (CUDA 13 NPP has only the
// _Ctx entry points and nppGetStreamContext is deprecated since CUDA 12.9), the owner of a device
// allocation, and the timing: an event pair around the NPP calls only, enqueued while a spin
// kernel holds the stream, so it measures GPU time and not host submission (as cuimg's
// benchmarks/stream_hold.h does). Header-only: each anchor stays one nvcc command on the GPU
// machine (scripts/gpu_run.sh).
#ifndef CUIMG_BENCHMARKS_ANCHORS_NPP_ANCHOR_CUH_
#define CUIMG_BENCHMARKS_ANCHORS_NPP_ANCHOR_CUH_

#include <cuda_runtime.h>
#include <npp.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace npp_anchor {

[[noreturn]] inline void Fail(const std::string& what, const char* expr, const char* file,
                              int line) {
  throw std::runtime_error(what + ": " + expr + " (" + file + ":" + std::to_string(line) + ")");
}

}  // namespace npp_anchor

#define CUDA_CHECK(expr)                                                                        \
  do {                                                                                          \
    const cudaError_t e_ = (expr);                                                              \
    if (e_ != cudaSuccess) npp_anchor::Fail(cudaGetErrorString(e_), #expr, __FILE__, __LINE__); \
  } while (0)

// Negative NppStatus values are errors, positive ones warnings (reported, not fatal).
#define NPP_CHECK(expr)                                                                        \
  do {                                                                                         \
    const NppStatus s_ = (expr);                                                               \
    if (s_ < 0) {                                                                              \
      npp_anchor::Fail("NPP error " + std::to_string(static_cast<int>(s_)), #expr, __FILE__,   \
                       __LINE__);                                                              \
    }                                                                                          \
    if (s_ > 0) std::fprintf(stderr, "NPP warning %d from %s\n", static_cast<int>(s_), #expr); \
  } while (0)

namespace npp_anchor {

inline NppStreamContext MakeNppContext(cudaStream_t stream) {
  NppStreamContext ctx{};
  ctx.hStream = stream;
  CUDA_CHECK(cudaGetDevice(&ctx.nCudaDeviceId));
  const int d = ctx.nCudaDeviceId;
  CUDA_CHECK(cudaDeviceGetAttribute(&ctx.nMultiProcessorCount, cudaDevAttrMultiProcessorCount, d));
  CUDA_CHECK(cudaDeviceGetAttribute(&ctx.nMaxThreadsPerMultiProcessor,
                                    cudaDevAttrMaxThreadsPerMultiProcessor, d));
  CUDA_CHECK(cudaDeviceGetAttribute(&ctx.nMaxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock, d));
  int smem = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, d));
  ctx.nSharedMemPerBlock = static_cast<size_t>(smem);
  CUDA_CHECK(cudaDeviceGetAttribute(&ctx.nCudaDevAttrComputeCapabilityMajor,
                                    cudaDevAttrComputeCapabilityMajor, d));
  CUDA_CHECK(cudaDeviceGetAttribute(&ctx.nCudaDevAttrComputeCapabilityMinor,
                                    cudaDevAttrComputeCapabilityMinor, d));
  CUDA_CHECK(cudaStreamGetFlags(stream, &ctx.nStreamFlags));
  return ctx;
}

// Owner of one device allocation of `bytes` (at least 1) bytes, as T* (void: untyped).
template <typename T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(bytes, 1)));
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename U>
  U* as() const {
    return static_cast<U*>(static_cast<void*>(p));
  }
};

// Spins on the stream for `ns` of GPU time while the host enqueues the timed call.
__global__ void SpinKernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

inline void HoldStream(cudaStream_t stream, double us = 2000) {
  SpinKernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(us * 1e3));
  CUDA_CHECK(cudaPeekAtLastError());
}

// Runs fn(i) `warmup` times, then `runs` times each inside its own event pair on `stream` held
// by HoldStream; returns the median in microseconds.
template <class Fn>
double MedianUs(cudaStream_t stream, int warmup, int runs, Fn&& fn) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) fn(i);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> us;
  for (int i = 0; i < runs; ++i) {
    HoldStream(stream);
    CUDA_CHECK(cudaEventRecord(start, stream));
    fn(warmup + i);
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    us.push_back(ms * 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(us.begin(), us.end());
  const size_t n = us.size();
  return n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
}

}  // namespace npp_anchor

#endif  // CUIMG_BENCHMARKS_ANCHORS_NPP_ANCHOR_CUH_
