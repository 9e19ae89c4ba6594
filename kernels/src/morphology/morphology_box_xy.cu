// Box (rectangle) min/max over x and y in one launch. A block stages its output tile plus the
// window halo in shared memory as packed 32-bit words (two 16-bit lanes for u8, u16 and i16, one
// f32) and runs the doubling scheme along x, then along y: after the step of size k every lane
// holds the min/max over 2k consecutive pixels, so a window of L pixels is op(P[i], P[i + L - p])
// with p the largest power of two <= L. That is floor(log2 L) + 1 SIMD min/max per word and axis,
// every thread busy (van Herk/Gil-Werman's 3 ops per pixel come with serial scans that leave the
// SM waiting on shared-memory latency). u8 uses 16-bit lanes because Hopper has native 16x2
// min/max (VIMNMX) but emulates the 8x4 forms.
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

constexpr int kWarps = kBoxXYThreads / 32;

// Pixels of T in the lanes of a 32-bit word (pixel t in bits [t * kBits, (t + 1) * kBits)) and
// the lane-wise min/max of two words.
template <typename T>
struct Packed;

template <>
struct Packed<std::uint8_t> {
  static constexpr int kPerWord = 2;  // zero-extended into 16-bit lanes
  template <bool kDilate>
  static __device__ __forceinline__ unsigned Op(unsigned a, unsigned b) {
    return kDilate ? __vmaxu2(a, b) : __vminu2(a, b);
  }
};
template <>
struct Packed<std::uint16_t> {
  static constexpr int kPerWord = 2;
  template <bool kDilate>
  static __device__ __forceinline__ unsigned Op(unsigned a, unsigned b) {
    return kDilate ? __vmaxu2(a, b) : __vminu2(a, b);
  }
};
template <>
struct Packed<std::int16_t> {
  static constexpr int kPerWord = 2;
  template <bool kDilate>
  static __device__ __forceinline__ unsigned Op(unsigned a, unsigned b) {
    return kDilate ? __vmaxs2(a, b) : __vmins2(a, b);
  }
};
template <>
struct Packed<float> {
  static constexpr int kPerWord = 1;
  template <bool kDilate>
  static __device__ __forceinline__ unsigned Op(unsigned a, unsigned b) {
    return __float_as_uint(Combine<float, kDilate>(__uint_as_float(a), __uint_as_float(b)));
  }
};

// The pixel in the low lane of w (a lane's upper bits are 0 for u8, which stays in 0..255).
template <typename T>
__device__ __forceinline__ T FromBits(unsigned w) {
  if constexpr (std::is_same_v<T, float>) {
    return __uint_as_float(w);
  } else {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(w));
  }
}

// Stores word w's kPerWord pixels at dst, which is aligned to their size: one store instead of
// one per pixel (u8 lanes are narrowed to two bytes).
template <typename T>
__device__ __forceinline__ void StorePixels(T* dst, unsigned w) {
  if constexpr (sizeof(T) == 1) {
    *reinterpret_cast<unsigned short*>(dst) = static_cast<unsigned short>(__byte_perm(w, 0, 0x20));
  } else {
    *reinterpret_cast<unsigned*>(dst) = w;
  }
}

// The word whose pixels start `k` pixels after word j's first pixel, read from one staged row of
// `words` words (reads past the row's end are clamped: they only feed pixels never used).
template <typename T>
__device__ __forceinline__ unsigned ShiftedWord(const unsigned* row, int j, int k, int words) {
  constexpr int kLaneBytes = 4 / Packed<T>::kPerWord;
  const int byte_offset = k * kLaneBytes;
  const int i0 = min(j + (byte_offset >> 2), words - 1);
  const int rem = byte_offset & 3;
  if (rem == 0) return row[i0];
  return __funnelshift_r(row[i0], row[min(i0 + 1, words - 1)], 8 * rem);
}

__device__ __forceinline__ void Swap(unsigned*& a, unsigned*& b) {
  unsigned* t = a;
  a = b;
  b = t;
}

template <typename T>
struct BoxXYParams {
  const T* in;
  T* out;
  int width;
  int height;
  int lx, ly;            // window, pixels
  int start_x, start_y;  // window offset from the output (= -anchor)
  int tile_w, tile_h;    // output tile, pixels (tile_w a multiple of 32 words)
  int region_words;      // staged words per row (the tile's words, the halo, one spare)
  int region_rows;       // tile_h + ly - 1
  T border;              // the value of every pixel outside the image
};

template <typename T, bool kDilate>
__global__ void __launch_bounds__(kBoxXYThreads)
    BoxXYKernel(const __grid_constant__ BoxXYParams<T> p) {
  using Pk = Packed<T>;
  constexpr int kP = Pk::kPerWord;
  constexpr int kBits = 32 / kP;
  extern __shared__ __align__(16) unsigned words[];
  const int rw = p.region_words;
  const int rh = p.region_rows;
  unsigned* src = words;
  unsigned* dst = words + rh * rw;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const std::size_t plane = static_cast<std::size_t>(p.width) * p.height;
  const T* in = p.in + blockIdx.z * plane;
  T* out = p.out + blockIdx.z * plane;
  const int x0 = blockIdx.x * p.tile_w;
  const int y0 = blockIdx.y * p.tile_h;
  const int rx0 = x0 + p.start_x;
  const int ry0 = y0 + p.start_y;

  // Stage: warps on rows, lanes on words (consecutive pixels: coalesced).
  for (int r = warp; r < rh; r += kWarps) {
    const int gy = ry0 + r;
    const bool row_in = gy >= 0 && gy < p.height;
    const T* row = in + static_cast<std::size_t>(row_in ? gy : 0) * p.width;
    for (int j = lane; j < rw; j += 32) {
      unsigned w = 0;
#pragma unroll
      for (int t = 0; t < kP; ++t) {
        const int gx = rx0 + j * kP + t;
        const T v = row_in && gx >= 0 && gx < p.width ? row[gx] : p.border;
        w |= ElementBits(v) << (t * kBits);
      }
      src[r * rw + j] = w;
    }
  }
  __syncthreads();

  // x: doubling steps, then each output word from two lookups.
  int k = 1;
  for (; 2 * k <= p.lx; k *= 2) {
    for (int r = warp; r < rh; r += kWarps) {
      const unsigned* s = src + r * rw;
      for (int j = lane; j < rw; j += 32) {
        dst[r * rw + j] = Pk::template Op<kDilate>(s[j], ShiftedWord<T>(s, j, k, rw));
      }
    }
    __syncthreads();
    Swap(src, dst);
  }
  const int out_words = p.tile_w / kP;
  if (p.lx > 1) {
    for (int r = warp; r < rh; r += kWarps) {
      const unsigned* s = src + r * rw;
      for (int j = lane; j < out_words; j += 32) {
        dst[r * rw + j] = Pk::template Op<kDilate>(s[j], ShiftedWord<T>(s, j, p.lx - k, rw));
      }
    }
    __syncthreads();
    Swap(src, dst);
  }

  // y: the same down the columns of words (no shifts: rows are whole words apart).
  k = 1;
  for (; 2 * k <= p.ly; k *= 2) {
    for (int r = warp; r + k < rh; r += kWarps) {
      for (int j = lane; j < out_words; j += 32) {
        dst[r * rw + j] = Pk::template Op<kDilate>(src[r * rw + j], src[(r + k) * rw + j]);
      }
    }
    __syncthreads();
    Swap(src, dst);
  }
  const int last = p.ly - k;  // 0 when ly == 1: op(v, v) = v
  // A word's pixels in one store where every row start is aligned to their size (the output may
  // be mapped host memory, where each store is its own PCIe write).
  const bool word_rows =
      reinterpret_cast<std::uintptr_t>(out) % (kP * sizeof(T)) == 0 && p.width % kP == 0;
  for (int r = warp; r < p.tile_h; r += kWarps) {
    const int gy = y0 + r;
    if (gy >= p.height) break;
    T* row = out + static_cast<std::size_t>(gy) * p.width;
    for (int j = lane; j < out_words; j += 32) {
      const unsigned w = Pk::template Op<kDilate>(src[r * rw + j], src[(r + last) * rw + j]);
      const int gx0 = x0 + j * kP;
      if (word_rows && gx0 + kP <= p.width) {
        StorePixels(row + gx0, w);
        continue;
      }
#pragma unroll
      for (int t = 0; t < kP; ++t) {
        const int gx = gx0 + t;
        if (gx < p.width) row[gx] = FromBits<T>(w >> (t * kBits));
      }
    }
  }
}

}  // namespace

template <typename T>
absl::Status LaunchBoxXY(const T* in, T* out, const Extent& e, const BoxPass& pass, bool dilate,
                         T border, cudaStream_t stream) {
  BoxXYParams<T> p{};
  p.in = in;
  p.out = out;
  p.width = static_cast<int>(e.width);
  p.height = static_cast<int>(e.height);
  p.lx = pass.length;
  p.ly = pass.length_y;
  p.start_x = pass.start;
  p.start_y = pass.start_y;
  p.tile_w = pass.tile_w;
  p.tile_h = pass.tile_h;
  p.region_words = pass.region_words;
  p.region_rows = pass.region_rows;
  p.border = border;
  const std::int64_t gx = (e.width + pass.tile_w - 1) / pass.tile_w;
  const std::int64_t gy = (e.height + pass.tile_h - 1) / pass.tile_h;
  if (!FitsGrid(gx, gy, e.depth)) {
    return absl::InvalidArgumentError("extent: too large for the box kernel's grid");
  }
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                  static_cast<unsigned>(e.depth));
  auto kernel = dilate ? BoxXYKernel<T, true> : BoxXYKernel<T, false>;
  CUIMG_RETURN_IF_ERROR(EnsureKernelSharedMemory(reinterpret_cast<const void*>(kernel),
                                                 pass.smem_bytes, "BoxXYKernel"));
  kernel<<<grid, kBoxXYThreads, pass.smem_bytes, stream>>>(p);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "BoxXYKernel");
  return absl::OkStatus();
}

template absl::Status LaunchBoxXY<std::uint8_t>(const std::uint8_t*, std::uint8_t*, const Extent&,
                                                const BoxPass&, bool, std::uint8_t, cudaStream_t);
template absl::Status LaunchBoxXY<std::uint16_t>(const std::uint16_t*, std::uint16_t*,
                                                 const Extent&, const BoxPass&, bool, std::uint16_t,
                                                 cudaStream_t);
template absl::Status LaunchBoxXY<std::int16_t>(const std::int16_t*, std::int16_t*, const Extent&,
                                                const BoxPass&, bool, std::int16_t, cudaStream_t);
template absl::Status LaunchBoxXY<float>(const float*, float*, const Extent&, const BoxPass&, bool,
                                         float, cudaStream_t);

}  // namespace cuimg::internal
