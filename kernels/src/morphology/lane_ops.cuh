// Lanes: the unit the morphology kernels compute on. Integer pixels are packed two per 32-bit word
// (16-bit lanes) so one native SIMD min/max (__vmaxu2, __vmins2: VIMNMX.16x2) handles two pixels;
// f32 is one pixel per word. Lane i of a word holds the pixel at offset i along the pack axis.
#ifndef CUIMG_KERNELS_SRC_LANE_OPS_CUH_
#define CUIMG_KERNELS_SRC_LANE_OPS_CUH_

#include <cstdint>

namespace cuimg {

template <typename T>
struct LaneOps;

// u8 rides in 16-bit lanes: Hopper has native 16x2 min/max (VIMNMX.U16x2), while 8x4 min/max
// is emulated with ~6 instructions, so two pixels per native instruction win.
template <>
struct LaneOps<std::uint8_t> {
  using Lane = std::uint32_t;
  static constexpr int kPack = 2;
  static constexpr int kBits = 16;
  __device__ static Lane Max(Lane a, Lane b) { return __vmaxu2(a, b); }
  __device__ static Lane Min(Lane a, Lane b) { return __vminu2(a, b); }
  __device__ static Lane Max3(Lane a, Lane b, Lane c) { return __vimax3_u16x2(a, b, c); }
  __device__ static Lane Min3(Lane a, Lane b, Lane c) { return __vimin3_u16x2(a, b, c); }
  __device__ static Lane Broadcast(std::uint8_t v) { return 0x00010001u * v; }
  __device__ static std::uint8_t Get(Lane w, int i) {
    return static_cast<std::uint8_t>(w >> (16 * i));
  }
  __device__ static std::uint32_t Bits(std::uint8_t v) { return v; }
};

template <>
struct LaneOps<std::uint16_t> {
  using Lane = std::uint32_t;
  static constexpr int kPack = 2;
  static constexpr int kBits = 16;
  __device__ static Lane Max(Lane a, Lane b) { return __vmaxu2(a, b); }
  __device__ static Lane Min(Lane a, Lane b) { return __vminu2(a, b); }
  __device__ static Lane Max3(Lane a, Lane b, Lane c) { return __vimax3_u16x2(a, b, c); }
  __device__ static Lane Min3(Lane a, Lane b, Lane c) { return __vimin3_u16x2(a, b, c); }
  __device__ static Lane Broadcast(std::uint16_t v) { return 0x00010001u * v; }
  __device__ static std::uint16_t Get(Lane w, int i) {
    return static_cast<std::uint16_t>(w >> (16 * i));
  }
  __device__ static std::uint32_t Bits(std::uint16_t v) { return v; }
};

template <>
struct LaneOps<std::int16_t> {
  using Lane = std::uint32_t;
  static constexpr int kPack = 2;
  static constexpr int kBits = 16;
  __device__ static Lane Max(Lane a, Lane b) { return __vmaxs2(a, b); }
  __device__ static Lane Min(Lane a, Lane b) { return __vmins2(a, b); }
  __device__ static Lane Max3(Lane a, Lane b, Lane c) { return __vimax3_s16x2(a, b, c); }
  __device__ static Lane Min3(Lane a, Lane b, Lane c) { return __vimin3_s16x2(a, b, c); }
  __device__ static Lane Broadcast(std::int16_t v) {
    return 0x00010001u * static_cast<std::uint16_t>(v);
  }
  __device__ static std::int16_t Get(Lane w, int i) {
    return static_cast<std::int16_t>(static_cast<std::uint16_t>(w >> (16 * i)));
  }
  __device__ static std::uint32_t Bits(std::int16_t v) { return static_cast<std::uint16_t>(v); }
};

// f32: one pixel per lane; fminf/fmaxf are IEEE minNum/maxNum (NaN never wins), as the reference.
template <>
struct LaneOps<float> {
  using Lane = float;
  static constexpr int kPack = 1;
  static constexpr int kBits = 32;
  __device__ static Lane Max(Lane a, Lane b) { return fmaxf(a, b); }
  __device__ static Lane Min(Lane a, Lane b) { return fminf(a, b); }
  __device__ static Lane Max3(Lane a, Lane b, Lane c) { return fmaxf(fmaxf(a, b), c); }
  __device__ static Lane Min3(Lane a, Lane b, Lane c) { return fminf(fminf(a, b), c); }
  __device__ static Lane Broadcast(float v) { return v; }
  __device__ static float Get(Lane w, int) { return w; }
};

template <typename T, bool kDilate>
__device__ __forceinline__ typename LaneOps<T>::Lane LaneCombine(typename LaneOps<T>::Lane a,
                                                                 typename LaneOps<T>::Lane b) {
  if constexpr (kDilate) {
    return LaneOps<T>::Max(a, b);
  } else {
    return LaneOps<T>::Min(a, b);
  }
}

// min/max of three lanes: one DPX instruction (VIMNMX3) for 16-bit lanes on Hopper.
template <typename T, bool kDilate>
__device__ __forceinline__ typename LaneOps<T>::Lane LaneCombine3(typename LaneOps<T>::Lane a,
                                                                  typename LaneOps<T>::Lane b,
                                                                  typename LaneOps<T>::Lane c) {
  if constexpr (kDilate) {
    return LaneOps<T>::Max3(a, b, c);
  } else {
    return LaneOps<T>::Min3(a, b, c);
  }
}

}  // namespace cuimg

#endif  // CUIMG_KERNELS_SRC_LANE_OPS_CUH_
