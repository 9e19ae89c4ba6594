// The blocks kernel's INTER_LINEAR_EXACT sample of a 3-channel input from 32-bit words (issue 50),
// compiled for the GPU and for the host like hog_strip.h. A sample reads two neighbouring pixels
// (6 bytes) in each of two rows: byte by byte that is 12 loads, and the loads, not the
// arithmetic, made sampling the largest part of the kernel (checkpoint c1, H200, 1080p, 8 frames:
// 280 -> 154 us without it, timing only). Here each row's 6 bytes come from the aligned words
// that hold them (2 or 3 loads), funnel-shifted into place, and the horizontal pass runs on two
// channels at once in 16-bit lanes. The value is ExactColumn(ExactRow(..)) exactly: the 8.8
// fixed-point passes are integer sums that never carry out of a lane (c0 + c1 = 256, a byte
// times 256 is at most 65280).
#ifndef CUIMG_KERNELS_SRC_HOG_WORDS_H_
#define CUIMG_KERNELS_SRC_HOG_WORDS_H_

#include <cstdint>
#include <cstring>

#include "hog_math.h"

namespace cuimg::hog {

// A column's horizontal tap for the word path: pixel i0's 3 bytes start `shift` bits into the
// aligned word at byte `offset` of a row; pixel i1 = i0 + 1 follows when c1 != 0 (else its bytes
// are not needed: c1 = 0 whenever i1 == i0). load1 / load2: the bytes reach the second / third
// word. cg = c1 | c0 << 16 (WordRowGreen).
struct WordTap {
  int offset;
  int shift;
  std::uint32_t c0;
  std::uint32_t c1;
  std::uint32_t cg;
  bool load1;
  bool load2;
};

CUIMG_HOG_HD WordTap MakeWordTap(const ExactTap& tap) {
  const int first = tap.i0 * 3;
  const int bytes = tap.c1 != 0 ? 6 : 3;
  const int in_word = first & 3;
  return WordTap{first & ~3,          8 * in_word,        tap.c0, tap.c1, tap.c1 | tap.c0 << 16,
                 in_word + bytes > 4, in_word + bytes > 8};
}

// The word at `at` (4-byte aligned), little endian as the device.
CUIMG_HOG_HD std::uint32_t LoadWord(const std::uint8_t* at) {
#if defined(__CUDA_ARCH__)
  return __ldg(reinterpret_cast<const unsigned int*>(at));
#else
  std::uint32_t w;
  std::memcpy(&w, at, sizeof(w));
  return w;
#endif
}

// (hi:lo) >> shift, shift in [0, 32).
CUIMG_HOG_HD std::uint32_t FunnelRight(std::uint32_t lo, std::uint32_t hi, int shift) {
#if defined(__CUDA_ARCH__)
  return __funnelshift_r(lo, hi, static_cast<unsigned>(shift));
#else
  return static_cast<std::uint32_t>(((static_cast<std::uint64_t>(hi) << 32) | lo) >> shift);
#endif
}

// The bytes of (y:x) picked by the nibbles of `select`, 0..3 from x and 4..7 from y (PRMT).
CUIMG_HOG_HD std::uint32_t BytePerm(std::uint32_t x, std::uint32_t y, std::uint32_t select) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, select);
#else
  const std::uint64_t bytes = (static_cast<std::uint64_t>(y) << 32) | x;
  std::uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned pick = (select >> (4 * i)) & 7u;
    out |= static_cast<std::uint32_t>((bytes >> (8 * pick)) & 0xffu) << (8 * i);
  }
  return out;
#endif
}

// One row's horizontal pass: row points at the row's byte `tap.offset` (4-byte aligned, and the
// words the tap loads lie in the input). Returns B and R as 16-bit lanes (c0 * B0 + c1 * B1 in
// bits 0..15, R in 16..31) and sets *green = c0 * G0 + c1 * G1: ExactRow of each channel. Words
// the tap does not need are not read (the last row's last bytes end the input).
CUIMG_HOG_HD std::uint32_t WordRow(const std::uint8_t* row, const WordTap& tap,
                                   std::uint32_t* green) {
  const std::uint32_t w0 = LoadWord(row);
  const std::uint32_t w1 = tap.load1 ? LoadWord(row + 4) : 0u;
  const std::uint32_t w2 = tap.load2 ? LoadWord(row + 8) : 0u;
  const std::uint32_t x0 = FunnelRight(w0, w1, tap.shift);  // B0 G0 R0 B1
  const std::uint32_t x1 = FunnelRight(w1, w2, tap.shift);  // G1 R1 . .
  constexpr std::uint32_t kLanes = 0x00ff00ffu;             // bytes 0 and 2
  const std::uint32_t b1r1 = BytePerm(x0, x1, 0x0503u) & kLanes;
  // G0 in bits 0..7, G1 in 16..23: times c1 + c0 * 2^16, bits 16..31 hold c0 G0 + c1 G1 (the low
  // product is below 2^16 and the high one falls off the 32 bits).
  const std::uint32_t g = BytePerm(x0, x1, 0x0401u) & kLanes;
  *green = (g * tap.cg) >> 16;
  return tap.c0 * (x0 & kLanes) + tap.c1 * b1r1;
}

// The vertical pass of one channel: ExactColumn's value without the narrowing (it is <= 255).
CUIMG_HOG_HD std::uint32_t WordColumn(std::uint32_t h0, std::uint32_t h1, std::uint32_t c0,
                                      std::uint32_t c1) {
  return (h0 * c0 + h1 * c1 + 32768u) >> 16;
}

}  // namespace cuimg::hog

#endif  // CUIMG_KERNELS_SRC_HOG_WORDS_H_
