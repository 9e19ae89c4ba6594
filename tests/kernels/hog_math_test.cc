// hog_math.h's host side: PickChannel (the blocks kernel's colour rule) makes MaxChannel's choice
// under both of OpenCV's tie rules and returns that channel's squared magnitude bit for bit, on
// every gradient triple of small integers (ties everywhere) and on random gamma-corrected ones;
// VoteOfMagnitude with that magnitude is VoteOf. hog_math_gpu_test covers the device's fast paths.
#include "detect/hog_math.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace cuimg {
namespace {

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// PickChannel against MaxChannel and VoteOf on one triple, under both rules.
void ExpectPickIsMaxChannel(const float (&dx)[3], const float (&dy)[3], int* failures) {
  for (bool simd : {true, false}) {
    float want_dx = 0;
    float want_dy = 0;
    hog::MaxChannel(dx, dy, simd, &want_dx, &want_dy);
    float got_dx = 0;
    float got_dy = 0;
    const float mag2 = hog::PickChannel(dx, dy, simd, &got_dx, &got_dy);
    const hog::Vote want = hog::VoteOf(want_dx, want_dy);
    const hog::Vote got = hog::VoteOfMagnitude(got_dx, got_dy, mag2);
    const bool same = SameBits(got_dx, want_dx) && SameBits(got_dy, want_dy) &&
                      SameBits(mag2, want_dx * want_dx + want_dy * want_dy) &&
                      got.bin0 == want.bin0 && got.bin1 == want.bin1 && SameBits(got.w0, want.w0) &&
                      SameBits(got.w1, want.w1);
    if (!same && ++*failures <= 5) {
      ADD_FAILURE() << "simd " << simd << " dx " << dx[0] << "," << dx[1] << "," << dx[2] << " dy "
                    << dy[0] << "," << dy[1] << "," << dy[2] << ": picked " << got_dx << ","
                    << got_dy << ", MaxChannel " << want_dx << "," << want_dy;
    }
  }
}

TEST(HogMath, PickChannelIsMaxChannelOnEveryTieOfSmallGradients) {
  int failures = 0;
  int triples = 0;
  float dx[3];
  float dy[3];
  // Components in -2..2: 5^6 triples, most with equal magnitudes somewhere (5^2 = 4^2 + 3^2 too).
  for (int code = 0; code < 15625; ++code) {
    int c = code;
    for (int k = 0; k < 3; ++k) {
      dx[k] = static_cast<float>(c % 5 - 2);
      c /= 5;
      dy[k] = static_cast<float>(c % 5 - 2);
      c /= 5;
    }
    ExpectPickIsMaxChannel(dx, dy, &failures);
    ++triples;
  }
  EXPECT_EQ(failures, 0) << "of " << triples;
}

TEST(HogMath, PickChannelIsMaxChannelOnGammaGradients) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  int failures = 0;
  for (int i = 0; i < 200000; ++i) {
    float dx[3];
    float dy[3];
    for (int k = 0; k < 3; ++k) {  // differences of gamma-corrected samples, as the kernel's
      dx[k] = hog::GammaLut(byte(rng), true) - hog::GammaLut(byte(rng), true);
      dy[k] = hog::GammaLut(byte(rng), true) - hog::GammaLut(byte(rng), true);
    }
    if (i % 4 == 0) {  // a tie between two channels
      dx[(i / 4) % 3] = dx[(i / 4 + 1) % 3];
      dy[(i / 4) % 3] = -dy[(i / 4 + 1) % 3];
    }
    ExpectPickIsMaxChannel(dx, dy, &failures);
  }
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace cuimg
