// van Herk/Gil-Werman min/max along one axis: 3 min/max per pixel whatever the window length L.
// A block stages `lines` lines x (outputs + L - 1) positions in shared memory (coalesced loads),
// cuts the positions into segments of L, and computes per segment the suffix maxima H and, in
// place, the prefix maxima G (one thread per line and segment, lanes on lines so the scans are
// bank-conflict free). The window starting at q is then H[q] op G[q + L - 1], written with
// coalesced stores.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "cell_loop.cuh"
#include "common/kernel_attributes.h"
#include "device_ops.cuh"
#include "morphology_kernels.h"

namespace cuimg::internal {
namespace {

// Shared memory holds 4-byte values so that scans over lines hit distinct banks.
template <typename T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, float, int>;

template <typename T>
struct BoxParams {
  const T* in;
  T* out;
  std::int64_t n;            // positions along the axis
  std::int64_t pos_stride;   // elements between positions
  std::int64_t line_count;   // lines in the image
  std::int64_t line_inner;   // lines whose bases are consecutive elements (1 for the x axis)
  std::int64_t line_outer;   // base step between groups of line_inner lines
  int length;
  int start;
  int lines;                 // per block, a power of two <= 32
  int log2_lines;
  int outputs;               // per line per block
  int pitch;                 // shared-memory stride between lines (odd)
  T border;
};

template <typename T, bool kDilate>
__global__ void __launch_bounds__(256) BoxTileKernel(const __grid_constant__ BoxParams<T> p) {
  using W = Wide<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ std::int64_t line_base[32];
  W* a = reinterpret_cast<W*>(smem);                        // input span, then prefix maxima G
  W* h = a + static_cast<std::int64_t>(p.lines) * p.pitch;  // suffix maxima H
  const int span = p.outputs + p.length - 1;
  const std::int64_t line0 = static_cast<std::int64_t>(blockIdx.y) * p.lines;
  const std::int64_t out0 = static_cast<std::int64_t>(blockIdx.x) * p.outputs;
  const std::int64_t q0 = out0 + p.start;  // first window start of this tile
  const bool along_x = p.line_inner == 1;

  if (threadIdx.x < p.lines) {
    const std::int64_t line = line0 + threadIdx.x;
    line_base[threadIdx.x] =
        along_x ? line * p.line_outer
                : (line % p.line_inner) + (line / p.line_inner) * p.line_outer;
  }
  __syncthreads();

  // Load, batched, lanes on the contiguous direction (positions along x, else lines).
  auto load = [&](int l, int q) {
    const std::int64_t pos = q0 + q;
    T v = p.border;
    if (line0 + l < p.line_count && pos >= 0 && pos < p.n) v = p.in[line_base[l] + pos * p.pos_stride];
    return static_cast<W>(v);
  };
  if (along_x) {
    ForEachCell<4>(p.lines, span, load, [&](int l, int q, W v) { a[l * p.pitch + q] = v; });
  } else {
    ForEachCell<4>(
        span, p.lines, [&](int q, int l) { return load(l, q); },
        [&](int q, int l, W v) { a[l * p.pitch + q] = v; });
  }
  __syncthreads();

  // Scans: one thread per (line, segment), lanes on lines.
  const int segments = (span + p.length - 1) / p.length;
  for (int i = threadIdx.x; i < p.lines * segments; i += blockDim.x) {
    const int l = i & (p.lines - 1);
    const int s = i >> p.log2_lines;
    W* row = a + l * p.pitch;
    W* hrow = h + l * p.pitch;
    const int begin = s * p.length;
    const int end = min(begin + p.length, span);  // positions beyond the span are never used
    W acc = row[end - 1];
    hrow[end - 1] = acc;
    for (int q = end - 2; q >= begin; --q) {
      acc = Combine<W, kDilate>(acc, row[q]);
      hrow[q] = acc;
    }
    acc = row[begin];
    for (int q = begin + 1; q < end; ++q) {
      acc = Combine<W, kDilate>(acc, row[q]);
      row[q] = acc;
    }
  }
  __syncthreads();

  // Combine and store, lanes on the contiguous direction again. At a segment start
  // G[o + L - 1] is the whole segment's max, which H[o] already is.
  auto value = [&](int l, int o) {
    return Combine<W, kDilate>(h[l * p.pitch + o], a[l * p.pitch + o + p.length - 1]);
  };
  auto store = [&](int l, int o, W v) {
    const std::int64_t pos = out0 + o;
    if (line0 + l < p.line_count && pos < p.n) {
      p.out[line_base[l] + pos * p.pos_stride] = static_cast<T>(v);
    }
  };
  if (along_x) {
    ForEachCell<4>(p.lines, p.outputs, value, store);
  } else {
    ForEachCell<4>(
        p.outputs, p.lines, [&](int o, int l) { return value(l, o); },
        [&](int o, int l, W v) { store(l, o, v); });
  }
}

}  // namespace

template <typename T>
absl::Status LaunchBoxPass(const T* in, T* out, const Extent& e, const BoxPass& pass, bool dilate,
                           T border, cudaStream_t stream) {
  if (pass.xy) return LaunchBoxXY(in, out, e, pass, dilate, border, stream);
  BoxParams<T> p{};
  p.in = in;
  p.out = out;
  switch (pass.axis) {
    case 0:  // rows
      p.n = e.width;
      p.pos_stride = 1;
      p.line_count = e.height * e.depth;
      p.line_inner = 1;
      p.line_outer = e.width;
      break;
    case 1:  // columns of each slice
      p.n = e.height;
      p.pos_stride = e.width;
      p.line_count = e.width * e.depth;
      p.line_inner = e.width;
      p.line_outer = e.width * e.height;
      break;
    default:  // z lines
      p.n = e.depth;
      p.pos_stride = e.width * e.height;
      p.line_count = e.width * e.height;
      p.line_inner = e.width * e.height;
      p.line_outer = 0;
      break;
  }
  p.length = pass.length;
  p.start = pass.start;
  p.lines = pass.lines;
  p.log2_lines = 0;
  while ((1 << p.log2_lines) < p.lines) ++p.log2_lines;
  p.outputs = pass.outputs;
  p.pitch = (pass.outputs + 2 * pass.length) | 1;
  p.border = border;
  const std::int64_t gx = (p.n + p.outputs - 1) / p.outputs;
  const std::int64_t gy = (p.line_count + p.lines - 1) / p.lines;
  if (gx > 0x7fffffff || gy > 65535) {
    return absl::InvalidArgumentError("image too large for a box pass grid");
  }
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  auto kernel = dilate ? BoxTileKernel<T, true> : BoxTileKernel<T, false>;
  CUIMG_RETURN_IF_ERROR(EnsureKernelSharedMemory(reinterpret_cast<const void*>(kernel),
                                                 pass.smem_bytes, "BoxTileKernel"));
  kernel<<<grid, 256, pass.smem_bytes, stream>>>(p);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "BoxTileKernel");
  return absl::OkStatus();
}

template absl::Status LaunchBoxPass<std::uint8_t>(const std::uint8_t*, std::uint8_t*, const Extent&,
                                                  const BoxPass&, bool, std::uint8_t, cudaStream_t);
template absl::Status LaunchBoxPass<std::uint16_t>(const std::uint16_t*, std::uint16_t*,
                                                   const Extent&, const BoxPass&, bool,
                                                   std::uint16_t, cudaStream_t);
template absl::Status LaunchBoxPass<std::int16_t>(const std::int16_t*, std::int16_t*, const Extent&,
                                                  const BoxPass&, bool, std::int16_t, cudaStream_t);
template absl::Status LaunchBoxPass<float>(const float*, float*, const Extent&, const BoxPass&, bool,
                                           float, cudaStream_t);

}  // namespace cuimg::internal
