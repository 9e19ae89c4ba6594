#include "segmentation/region_stats.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace cuimg::seg {

double ExactLimbSum(const SumLimbs& limbs) {
  // Carry the signed limbs into base-2^32 digits; the last carry is the top digit (signed).
  // |limb| < 2^63 - 2^32 (SplitFinite) and every carry is below 2^32 in magnitude, so the
  // partial sums fit in int64.
  constexpr int kDigits = kSumLimbs + 2;
  std::uint32_t digit[kDigits] = {};
  std::int64_t carry = 0;
  for (int i = 0; i < kSumLimbs; ++i) {
    const std::int64_t t = carry + limbs[i];
    digit[i] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(t) & 0xffffffffu);
    carry = (t - static_cast<std::int64_t>(digit[i])) / (std::int64_t{1} << 32);  // exact
  }
  const bool negative = carry < 0;
  std::uint64_t top = static_cast<std::uint64_t>(negative ? -carry : carry);
  if (negative) {
    // Magnitude of -(carry * 2^(32 * kSumLimbs) + digits): negate the digits, borrowing.
    bool borrow = false;
    for (int i = 0; i < kSumLimbs; ++i) {
      const std::uint64_t d = static_cast<std::uint64_t>(digit[i]) + (borrow ? 1 : 0);
      if (d == 0) {
        digit[i] = 0;
        borrow = false;
      } else {
        digit[i] = static_cast<std::uint32_t>((std::uint64_t{1} << 32) - d);
        borrow = true;
      }
    }
    if (borrow) top -= 1;
  }
  digit[kSumLimbs] = static_cast<std::uint32_t>(top & 0xffffffffu);
  digit[kSumLimbs + 1] = static_cast<std::uint32_t>(top >> 32);
  auto bit = [&](int k) { return (digit[k >> 5] >> (k & 31)) & 1u; };
  int msb = -1;
  for (int k = kDigits * 32 - 1; k >= 0; --k) {
    if (bit(k)) {
      msb = k;
      break;
    }
  }
  if (msb < 0) return 0.0;
  std::uint64_t mantissa = 0;
  const int low = msb - 52 > 0 ? msb - 52 : 0;
  for (int k = msb; k >= low; --k) mantissa = (mantissa << 1) | bit(k);
  int exponent = low;  // the value is mantissa * 2^(exponent - 149), before rounding
  if (low > 0) {
    const bool round = bit(low - 1);
    bool sticky = false;
    for (int k = low - 2; k >= 0 && !sticky; --k) sticky = bit(k);
    if (round && (sticky || (mantissa & 1))) {
      ++mantissa;
      if (mantissa == (std::uint64_t{1} << 53)) {
        mantissa >>= 1;
        ++exponent;
      }
    }
  }
  const double magnitude = std::ldexp(static_cast<double>(mantissa), exponent - 149);
  return negative ? -magnitude : magnitude;
}

double KeyValue(PixelType type, std::uint32_t key) {
  switch (type) {
    case PixelType::kU8:
    case PixelType::kU16:
    case PixelType::kU32:
      return static_cast<double>(key);
    case PixelType::kI16:
      return static_cast<double>(static_cast<std::int32_t>(key) - 32768);
    case PixelType::kF32:
      break;
  }
  const std::uint32_t bits = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return static_cast<double>(v);
}

RegionStats FinishRegion(const RegionAccumulator& acc, std::optional<PixelType> intensity,
                         const SumLimbs* limbs) {
  RegionStats r;
  r.voxels = static_cast<std::int64_t>(acc.voxels);
  const double n = static_cast<double>(acc.voxels);
  for (int a = 0; a < 3; ++a) {
    r.bbox_begin[a] = acc.begin[a];
    r.bbox_end[a] = acc.end[a];
    r.centroid[a] = static_cast<double>(acc.coordinate_sum[a]) / n;
  }
  if (!intensity.has_value()) return r;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (acc.max_key == 0 && *intensity == PixelType::kF32) {
    r.min = r.max = nan;  // NaN alone
  } else {
    r.min = KeyValue(*intensity, ~acc.min_key_complement);
    r.max = KeyValue(*intensity, acc.max_key);
  }
  if (*intensity != PixelType::kF32) {
    r.sum = static_cast<double>(acc.integer_sum);
  } else if ((acc.non_finite & kSumNaN) ||
             (acc.non_finite & (kSumPosInf | kSumNegInf)) == (kSumPosInf | kSumNegInf)) {
    r.sum = nan;
  } else if (acc.non_finite & kSumPosInf) {
    r.sum = std::numeric_limits<double>::infinity();
  } else if (acc.non_finite & kSumNegInf) {
    r.sum = -std::numeric_limits<double>::infinity();
  } else {
    r.sum = ExactLimbSum(*limbs);
  }
  r.mean = r.sum / n;
  return r;
}

}  // namespace cuimg::seg
