#include "cuimg/kernels/gradient_types.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {

double DefaultGradientSigma(int kernel_length) {
  return 0.3 * ((kernel_length - 1) * 0.5 - 1.0) + 0.8;
}

absl::Status ValidateGradientSpec(const GradientSpec& spec) {
  if (spec.kernel_length < 3 || spec.kernel_length > kMaxGradientKernelLength ||
      spec.kernel_length % 2 == 0) {
    return InvalidFieldError(
        ErrorReason::kValueOutOfRange, "kernel_length",
        absl::StrCat(spec.kernel_length, " is not odd in [3, ", kMaxGradientKernelLength, "]"));
  }
  if (spec.sigma != 0.0 &&
      !(std::isfinite(spec.sigma) && spec.sigma > 0.0 && spec.sigma <= kMaxGradientSigma)) {
    return InvalidFieldError(
        ErrorReason::kValueOutOfRange, "sigma",
        absl::StrCat(spec.sigma, " is not 0 and not in (0, ", kMaxGradientSigma, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<GradientTaps> ComputeGradientTaps(const GradientSpec& spec) {
  if (absl::Status s = ValidateGradientSpec(spec); !s.ok()) return s;
  GradientTaps taps;
  taps.sigma = spec.sigma == 0.0 ? DefaultGradientSigma(spec.kernel_length) : spec.sigma;
  taps.radius = (spec.kernel_length - 1) / 2;
  const int r = taps.radius;
  const double two_s2 = 2.0 * taps.sigma * taps.sigma;
  // Smoothing: exp(-k^2 / 2s^2) / sum; the k = 0 term is 1, so the sum never underflows.
  taps.smoothing.assign(spec.kernel_length, 0.0);
  double sum = 0.0;
  for (int k = -r; k <= r; ++k) {
    taps.smoothing[k + r] = std::exp(-static_cast<double>(k) * k / two_s2);
    sum += taps.smoothing[k + r];
  }
  for (double& t : taps.smoothing) t /= sum;
  // Derivative: k e(k) / sum_j j^2 e(j) with e(j) = exp(-(j^2 - 1) / 2s^2), the Gaussian divided
  // by its k = 1 value (a common factor of numerator and denominator that may underflow). The
  // k = 0 terms are zero (and e(0) may overflow), so they are skipped.
  double moment = 0.0;
  for (int j = -r; j <= r; ++j) {
    if (j == 0) continue;
    moment += static_cast<double>(j) * j * std::exp(-(static_cast<double>(j) * j - 1.0) / two_s2);
  }
  taps.derivative.assign(spec.kernel_length, 0.0);
  for (int k = -r; k <= r; ++k) {
    if (k == 0) continue;
    taps.derivative[k + r] = k * std::exp(-(static_cast<double>(k) * k - 1.0) / two_s2) / moment;
  }
  return taps;
}

}  // namespace cuimg
