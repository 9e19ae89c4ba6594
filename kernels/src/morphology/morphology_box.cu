// van Herk/Gil-Werman min/max along one axis: 3 min/max per pixel whatever the window length L.
// One thread per line streams a strip of S windows: the window starting at q is H[q] op G, H[q]
// the min/max from q to the end of q's L-long segment (a backward scan) and G the running
// min/max of the next segment read so far. H is a per-thread array of L slots in shared memory
// (an odd number of words apart between threads: no bank conflicts), G a register. A block first
// stages its lines' S + L positions with coalesced word loads (along x: rows of words; along y
// and z: rows of consecutive lines), each thread streams its line from the staging and writes
// outputs back over positions it has read, and the block stores them as words.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "common/kernel_attributes.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "device_ops.cuh"
#include "morphology_kernels.h"

namespace cuimg::internal {
namespace {

// H slots are 4-byte values (one bank each).
template <typename T>
using Wide = std::conditional_t<std::is_floating_point_v<T>, float, int>;

constexpr int kChunk = 16;  // reads issued before any write: their latency is paid once per chunk

// The engine of one line: calls write(o, min/max of read(o) .. read(o + L - 1)) for o in
// [0, outputs), reading in increasing order after a first backward pass over [0, L). `h` is this
// thread's L slots. Loops read a whole chunk before they write, since the compiler may not move
// reads past writes that could alias them.
template <typename W, bool kDilate, typename Read, typename Write>
__device__ __forceinline__ void StreamWindows(W* h, int L, int outputs, Read read, Write write) {
  const W identity = CombineIdentity<W, kDilate>();
  // H over slots 0 .. L - 1 from their values get(i): a backward running min/max, in chunks of
  // 16, then of 4, then one partial chunk (slots below 0 skipped): short lines and remainders
  // do not pay for 16-wide predicated code.
  auto scan_back = [&](auto get) {
    W acc = identity;
    auto chunk = [&](int i, auto size, int n) {  // slots i, i - 1, ... i - n + 1
      constexpr int kSize = decltype(size)::value;
      W v[kSize];
#pragma unroll
      for (int k = 0; k < kSize; ++k) v[k] = k < n ? get(i - k) : identity;
#pragma unroll
      for (int k = 0; k < kSize; ++k) {
        acc = Combine<W, kDilate>(acc, v[k]);
        if (k < n) h[i - k] = acc;
      }
    };
    int i = L - 1;
    for (; i >= kChunk - 1; i -= kChunk) chunk(i, std::integral_constant<int, kChunk>{}, kChunk);
    for (; i >= 3; i -= 4) chunk(i, std::integral_constant<int, 4>{}, 4);
    if (i >= 0) chunk(i, std::integral_constant<int, 4>{}, i + 1);
  };
  scan_back([&](int i) { return static_cast<W>(read(i)); });
  for (int base = 0;; base += L) {
    W g = identity;
    const int count = min(L, outputs - base);
    auto chunk = [&](int i, auto size, int n) {  // slots i .. i + n - 1
      constexpr int kSize = decltype(size)::value;
      W v[kSize], hv[kSize];
#pragma unroll
      for (int k = 0; k < kSize; ++k) {
        v[k] = k < n ? static_cast<W>(read(base + L + i + k)) : identity;
        hv[k] = k < n ? h[i + k] : identity;
      }
#pragma unroll
      for (int k = 0; k < kSize; ++k) {
        if (k < n) {
          write(base + i + k, Combine<W, kDilate>(hv[k], g));
          h[i + k] = v[k];  // the next segment's values, for its backward scan
        }
        g = Combine<W, kDilate>(g, v[k]);
      }
    };
    int i = 0;
    for (; i + kChunk <= count; i += kChunk)
      chunk(i, std::integral_constant<int, kChunk>{}, kChunk);
    for (; i + 4 <= count; i += 4) chunk(i, std::integral_constant<int, 4>{}, 4);
    if (i < count) chunk(i, std::integral_constant<int, 4>{}, count - i);
    if (base + L >= outputs) break;
    scan_back([&](int j) { return h[j]; });
  }
}

template <typename T>
struct BoxParams {
  const T* in;
  T* out;
  int n;                      // positions along the axis
  std::int64_t pos_stride;    // elements between positions (y, z)
  std::int64_t line_count;    // x: rows in the image; y: columns per slice; z: pixels per slice
  std::int64_t slice_stride;  // y: elements between slices (blockIdx.z)
  int length;
  int start;
  int outputs;           // per line per block, a multiple of 4
  int pitch_words;       // x: staged words per row (odd)
  std::size_t h_offset;  // bytes from the start of dynamic shared memory to H
  bool word_aligned;     // rows (x) or positions (y, z) start on 4-byte boundaries
  T border;
};

template <typename T>
inline constexpr int kPerWord = sizeof(T) < 4 ? 4 / sizeof(T) : 1;

// The word of elements e[x .. x + kPerWord), those outside [0, n) the border: one 4-byte load
// when all are inside and aligned.
template <typename T>
__device__ __forceinline__ unsigned LoadWord(const T* e, int x, int n, bool aligned, T border) {
  if (aligned && x >= 0 && x + kPerWord<T> <= n) return *reinterpret_cast<const unsigned*>(e + x);
  unsigned w = 0;
#pragma unroll
  for (int t = 0; t < kPerWord<T>; ++t) {
    w |= ElementBits(x + t >= 0 && x + t < n ? e[x + t] : border) << (t * 32 / kPerWord<T>);
  }
  return w;
}

// Stores the staged word at `staged` as e[x .. x + kPerWord), x >= 0, skipping elements at or
// past n: one 4-byte store when all are inside and aligned.
template <typename T>
__device__ __forceinline__ void StoreWord(T* e, int x, int n, bool aligned,
                                          const unsigned* staged) {
  if (aligned && x + kPerWord<T> <= n) {
    *reinterpret_cast<unsigned*>(e + x) = *staged;
  } else {
    const T* elems = reinterpret_cast<const T*>(staged);
    for (int t = 0; t < kPerWord<T> && x + t < n; ++t) e[x + t] = elems[t];
  }
}

// Along y or z: a block's lines are kLines (0: blockDim.x) consecutive elements of a slice's row
// (y) or of the plane (z). It stages the span of positions as rows of words (thread t loads word
// t % words of every kPerWord-th position: coalesced), each thread streams its column from the
// staging and writes outputs back over positions it has read, then the block stores them as
// words the same way.
template <typename T, bool kDilate, int kLines>
__global__ void __launch_bounds__(kBoxLinesMaxThreads)
    BoxColumnsKernel(const __grid_constant__ BoxParams<T> p) {
  using W = Wide<T>;
  constexpr int kP = kPerWord<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned* staged = reinterpret_cast<unsigned*>(smem);
  const int lines = kLines > 0 ? kLines : blockDim.x;
  const int words = lines / kP;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.y) * lines;
  const std::int64_t offset = blockIdx.z * p.slice_stride + first;
  const int valid = static_cast<int>(min(static_cast<std::int64_t>(lines), p.line_count - first));
  const int out0 = blockIdx.x * p.outputs;
  const int q0 = out0 + p.start;
  const int span = p.outputs + p.length;  // one spare: the last segment's final read is unused
  const int j = threadIdx.x % words;      // this thread's word; its positions step by kP

  constexpr int kBatch = 8;  // loads in flight per thread
  for (int q = threadIdx.x / words; q < span; q += kP * kBatch) {
    unsigned w[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int pos = q0 + q + b * kP;
      const bool in = q + b * kP < span && pos >= 0 && pos < p.n;
      w[b] = LoadWord(p.in + offset + pos * p.pos_stride, j * kP, in ? valid : 0, p.word_aligned,
                      p.border);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (q + b * kP < span) staged[(q + b * kP) * words + j] = w[b];
    }
  }
  __syncthreads();

  T* mine = reinterpret_cast<T*>(staged) + threadIdx.x;
  StreamWindows<W, kDilate>(
      reinterpret_cast<W*>(smem + p.h_offset) + threadIdx.x * (p.length | 1), p.length, p.outputs,
      [&](int q) { return mine[q * lines]; },
      // Output o goes to position o, read before (as position q <= o) or never read again.
      [&](int o, W v) { mine[o * lines] = static_cast<T>(v); });
  __syncthreads();

  for (int o = threadIdx.x / words; o < p.outputs; o += kP) {
    const int pos = out0 + o;
    if (pos >= p.n) break;
    StoreWord(p.out + offset + pos * p.pos_stride, j * kP, valid, p.word_aligned,
              staged + o * words + j);
  }
}

// Along x: a block stages `blockDim.x` rows' span as words (warps on rows, lanes on words), each
// thread streams its row from the staging and writes outputs back over elements it has read,
// then the block stores them as words.
template <typename T, bool kDilate>
__global__ void __launch_bounds__(kBoxLinesMaxThreads)
    BoxRowsKernel(const __grid_constant__ BoxParams<T> p) {
  using W = Wide<T>;
  constexpr int kP = kPerWord<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  unsigned* staged = reinterpret_cast<unsigned*>(smem);
  const int lines = blockDim.x;
  const int lanes = min(lines, 32);  // huge windows run blocks of fewer than 32 lines
  const int warps = lines / lanes;
  const int warp = threadIdx.x / lanes;
  const int lane = threadIdx.x % lanes;
  const std::int64_t row0 = static_cast<std::int64_t>(blockIdx.y) * lines;
  const int rows = static_cast<int>(min(static_cast<std::int64_t>(lines), p.line_count - row0));
  const int out0 = blockIdx.x * p.outputs;  // a multiple of 4
  const int q0 = out0 + p.start;
  const int a0 = q0 >= 0 ? q0 / kP * kP : -((-q0 + kP - 1) / kP) * kP;  // q0 rounded down to words
  const int shift = q0 - a0;
  const int in_words = (shift + p.outputs + p.length + kP - 1) / kP;

  // Rows in flight per thread. Rows past the image are staged as zeros (never stored); every
  // staged row is below `lines`, a multiple of warps * kBatch (or of kBatch for one warp).
  constexpr int kBatch = 8;
  for (int j = lane; j < in_words; j += lanes) {
    const int x = a0 + j * kP;
    for (int r = warp; r < rows; r += warps * kBatch) {
      unsigned w[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const T* row = p.in + (row0 + r + b * warps) * p.n;
        w[b] = r + b * warps < rows ? LoadWord(row, x, p.n, p.word_aligned, p.border) : 0u;
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) staged[(r + b * warps) * p.pitch_words + j] = w[b];
    }
  }
  __syncthreads();

  T* mine = reinterpret_cast<T*>(staged + threadIdx.x * p.pitch_words);
  StreamWindows<W, kDilate>(
      reinterpret_cast<W*>(smem + p.h_offset) + threadIdx.x * (p.length | 1), p.length, p.outputs,
      [&](int q) { return mine[shift + q]; },
      // Output o goes to element o, read before (as element shift + q <= o) or never read again.
      [&](int o, W v) { mine[o] = static_cast<T>(v); });
  __syncthreads();

  // Stores: consecutive threads on consecutive words of a row, then of the next rows.
  const int out_words = p.outputs / kP;
  int r = threadIdx.x / out_words;
  int j = threadIdx.x % out_words;
  const int dr = lines / out_words;
  const int dj = lines % out_words;
  for (; r < rows; r += dr) {
    StoreWord(p.out + (row0 + r) * p.n, out0 + j * kP, p.n, p.word_aligned,
              staged + r * p.pitch_words + j);
    j += dj;
    if (j >= out_words) {
      j -= out_words;
      ++r;
    }
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
  unsigned slices = 1;
  switch (pass.axis) {
    case 0:  // rows of every slice
      p.n = static_cast<int>(e.width);
      p.line_count = e.height * e.depth;
      break;
    case 1:  // columns of each slice
      p.n = static_cast<int>(e.height);
      p.pos_stride = e.width;
      p.line_count = e.width;
      p.slice_stride = e.width * e.height;
      slices = static_cast<unsigned>(e.depth);
      break;
    default:  // z lines
      p.n = static_cast<int>(e.depth);
      p.pos_stride = e.width * e.height;
      p.line_count = e.width * e.height;
      break;
  }
  p.length = pass.length;
  p.start = pass.start;
  p.outputs = pass.outputs;
  p.pitch_words = pass.pitch;
  p.h_offset = pass.h_offset;
  p.word_aligned = (e.width * sizeof(T)) % 4 == 0 &&
                   reinterpret_cast<std::uintptr_t>(in) % 4 == 0 &&
                   reinterpret_cast<std::uintptr_t>(out) % 4 == 0;
  p.border = border;
  const std::int64_t gx = (p.n + p.outputs - 1) / p.outputs;
  const std::int64_t gy = (p.line_count + pass.lines - 1) / pass.lines;
  if (!FitsGrid(gx, gy, slices)) {
    return absl::InvalidArgumentError("extent: too large for a box pass grid");
  }
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy), slices);
  // Columns at the full 128 lines per block address the staging with constant offsets.
  auto columns = [&](auto dilate_tag) {
    constexpr bool kDilate = decltype(dilate_tag)::value;
    return pass.lines == kBoxLinesMaxThreads ? BoxColumnsKernel<T, kDilate, kBoxLinesMaxThreads>
                                             : BoxColumnsKernel<T, kDilate, 0>;
  };
  auto kernel = pass.axis == 0 ? (dilate ? BoxRowsKernel<T, true> : BoxRowsKernel<T, false>)
                               : (dilate ? columns(std::true_type{}) : columns(std::false_type{}));
  const char* name = pass.axis == 0 ? "BoxRowsKernel" : "BoxColumnsKernel";
  CUIMG_RETURN_IF_ERROR(
      EnsureKernelSharedMemory(reinterpret_cast<const void*>(kernel), pass.smem_bytes, name));
  kernel<<<grid, pass.lines, pass.smem_bytes, stream>>>(p);
  CUIMG_CUDA_CHECK_LAUNCH(stream, name);
  return absl::OkStatus();
}

template absl::Status LaunchBoxPass<std::uint8_t>(const std::uint8_t*, std::uint8_t*, const Extent&,
                                                  const BoxPass&, bool, std::uint8_t, cudaStream_t);
template absl::Status LaunchBoxPass<std::uint16_t>(const std::uint16_t*, std::uint16_t*,
                                                   const Extent&, const BoxPass&, bool,
                                                   std::uint16_t, cudaStream_t);
template absl::Status LaunchBoxPass<std::int16_t>(const std::int16_t*, std::int16_t*, const Extent&,
                                                  const BoxPass&, bool, std::int16_t, cudaStream_t);
template absl::Status LaunchBoxPass<float>(const float*, float*, const Extent&, const BoxPass&,
                                           bool, float, cudaStream_t);

}  // namespace cuimg::internal
