// What the labelling's CPU reference and CUDA kernels compute alike, compiled for both: which
// pixels are foreground, which neighbours connect, and the exact, order-free encodings of a
// region's statistics (ordered keys for min/max, integer and fixed-point sums), so that atomics
// in any order on the GPU and a raster walk on the CPU give the same bits.
#ifndef CUIMG_KERNELS_SRC_SEGMENTATION_SEGMENTATION_MATH_H_
#define CUIMG_KERNELS_SRC_SEGMENTATION_SEGMENTATION_MATH_H_

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuimg/kernels/segmentation_types.h"

#if defined(__CUDACC__)
#define CUIMG_SEG_HD __host__ __device__ __forceinline__
#else
#define CUIMG_SEG_HD inline
#endif
// Unrolls a loop in device code (the host compiler does not know the pragma); KEEP_LOOP keeps
// one, where unrolling would copy a large body (the instruction cache then misses).
#if defined(__CUDA_ARCH__)
#define CUIMG_SEG_UNROLL _Pragma("unroll")
#define CUIMG_SEG_KEEP_LOOP _Pragma("unroll 1")
#else
#define CUIMG_SEG_UNROLL
#define CUIMG_SEG_KEEP_LOOP
#endif

namespace cuimg::seg {

// ---- Foreground -------------------------------------------------------------------------------

// The foreground of one pixel type: lo <= v <= hi in T when `range`, else v != 0 and not NaN.
// MakeForeground (segmentation_host.h) turns a double range into T's bounds exactly.
template <typename T>
struct Foreground {
  bool range = false;
  T lo{};
  T hi{};
  CUIMG_SEG_HD bool operator()(T v) const {
    if (range) return lo <= v && v <= hi;  // NaN compares false
    return v != T{0} && v == v;
  }
};

// ---- Neighbourhoods ---------------------------------------------------------------------------

struct Offset {
  int dx, dy, dz;
};

// The neighbours that come before a pixel in raster order (half of the neighbourhood; the other
// half are the neighbours that have this pixel before them): 2, 4, 3, 9 or 13 for a resolved
// connectivity of 4, 8, 6, 18, 26. The pixel right before along x, y, z comes first, then the
// diagonals of the previous row, then those of the previous slice (faces before edges before
// corners). A function rather than tables, so that device code unrolled over `i` folds it.
CUIMG_SEG_HD constexpr int BackwardCount(Connectivity c) {
  return c == Connectivity::k8    ? 4
         : c == Connectivity::k6  ? 3
         : c == Connectivity::k18 ? 9
         : c == Connectivity::k26 ? 13
                                  : 2;
}
CUIMG_SEG_HD constexpr Offset BackwardOffset(Connectivity c, int i) {
  const bool volume = c == Connectivity::k6 || c == Connectivity::k18 || c == Connectivity::k26;
  if (i == 0) return Offset{-1, 0, 0};
  if (i == 1) return Offset{0, -1, 0};
  if (volume) {
    // 6: faces; 18: + the 6 edges before; 26: + the 4 corners before.
    constexpr Offset kVolume[] = {{0, 0, -1},  {-1, -1, 0}, {1, -1, 0}, {-1, 0, -1},
                                  {1, 0, -1},  {0, -1, -1}, {0, 1, -1}, {-1, -1, -1},
                                  {1, -1, -1}, {-1, 1, -1}, {1, 1, -1}};
    return kVolume[i - 2];
  }
  return i == 2 ? Offset{-1, -1, 0} : Offset{1, -1, 0};
}

// ---- Ordered keys (min / max) -----------------------------------------------------------------

// A 32-bit key whose unsigned order is the values' order (f32: -0 below +0; NaN never asked).
CUIMG_SEG_HD std::uint32_t OrderedKey(std::uint8_t v) { return v; }
CUIMG_SEG_HD std::uint32_t OrderedKey(std::uint16_t v) { return v; }
CUIMG_SEG_HD std::uint32_t OrderedKey(std::uint32_t v) { return v; }
CUIMG_SEG_HD std::uint32_t OrderedKey(std::int16_t v) {
  return static_cast<std::uint32_t>(static_cast<std::int32_t>(v) + 32768);
}
CUIMG_SEG_HD std::uint32_t FloatBits(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
CUIMG_SEG_HD std::uint32_t OrderedKey(float v) {
  const std::uint32_t bits = FloatBits(v);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// ---- Exact f32 sums ---------------------------------------------------------------------------

// A finite f32 value is m * 2^(q - 149) with m < 2^24 and 0 <= q <= 253. Limb i of a sum holds
// multiples of 2^(32 i - 149); a value adds its low 32 bits (m << q % 32) to limb q / 32 and the
// rest to the next limb, each less than 2^32 in magnitude, so 2^31 values never overflow an
// int64 limb. Nine limbs reach every finite f32; the host resolves the carries once.
inline constexpr int kSumLimbs = 9;

struct LimbPair {
  int limb;
  std::int64_t low;
  std::int64_t high;
};

// `v` finite.
CUIMG_SEG_HD LimbPair SplitFinite(float v) {
  const std::uint32_t bits = FloatBits(v);
  const std::uint32_t biased = (bits >> 23) & 0xff;
  const std::uint64_t m = (bits & 0x7fffff) | (biased != 0 ? 0x800000u : 0u);
  const int q = biased != 0 ? static_cast<int>(biased) - 1 : 0;
  const std::uint64_t shifted = m << (q & 31);
  std::int64_t low = static_cast<std::int64_t>(shifted & 0xffffffffu);
  std::int64_t high = static_cast<std::int64_t>(shifted >> 32);
  if (bits & 0x80000000u) {
    low = -low;
    high = -high;
  }
  return LimbPair{q >> 5, low, high};
}

// Bits of a sum's non-finite part.
inline constexpr std::uint32_t kSumNaN = 1;
inline constexpr std::uint32_t kSumPosInf = 2;
inline constexpr std::uint32_t kSumNegInf = 4;

// 0 for a finite value, else its bit above.
CUIMG_SEG_HD std::uint32_t NonFiniteBit(float v) {
  const std::uint32_t bits = FloatBits(v);
  if ((bits & 0x7f800000u) != 0x7f800000u) return 0;
  if (bits & 0x7fffffu) return kSumNaN;
  return (bits & 0x80000000u) ? kSumNegInf : kSumPosInf;
}

}  // namespace cuimg::seg

#endif  // CUIMG_KERNELS_SRC_SEGMENTATION_SEGMENTATION_MATH_H_
