// The vocabulary of the Gaussian-derivative gradient, shared by the CPU reference and the CUDA
// kernels: the request's parameters and the taps they define.
#ifndef CUIMG_KERNELS_GRADIENT_TYPES_H_
#define CUIMG_KERNELS_GRADIENT_TYPES_H_

#include <vector>

#include "absl/status/statusor.h"

namespace cuimg {

inline constexpr int kDefaultGradientKernelLength = 7;
inline constexpr int kMaxGradientKernelLength = 31;
inline constexpr double kMaxGradientSigma = 64.0;

// gx = (derivative taps along x) then (smoothing taps along y); gy = smoothing along x then
// derivative along y. Borders reflect without repeating the edge pixel (OpenCV's
// BORDER_REFLECT_101, repeatedly for images narrower than the kernel radius).
struct GradientSpec {
  // Taps per 1D kernel: odd, in [3, 31].
  int kernel_length = kDefaultGradientKernelLength;
  // Gaussian sigma in pixels, in (0, 64]; 0 means DefaultGradientSigma(kernel_length).
  double sigma = 0.0;
  // Also compute sqrt(gx^2 + gy^2).
  bool magnitude = false;
  // Also compute atan2(gy, gx), radians in [-pi, pi].
  bool angle = false;
};

// The taps of a spec, index j for offset k = j - radius (radius = (kernel_length - 1) / 2), used
// as correlation: out(x) = sum_k taps[k + radius] * in(x + k).
//   smoothing[k]  = exp(-k^2 / (2 sigma^2)), normalized to sum 1 (symmetric);
//   derivative[k] = k * exp(-k^2 / (2 sigma^2)) / sum_j j^2 exp(-j^2 / (2 sigma^2)) (odd), so that
//                   sum_k k * derivative[k] = 1: a ramp of slope 1 gives +1 (gx > 0 where intensity
//                   grows with x).
// The derivative is evaluated relative to the k = +-1 terms, so it stays finite as sigma -> 0
// (it tends to the central difference [-1/2, 0, 1/2]).
struct GradientTaps {
  double sigma = 0.0;  // the resolved sigma
  int radius = 0;
  std::vector<double> smoothing;
  std::vector<double> derivative;
};

// OpenCV's getGaussianKernel rule: 0.3 * ((kernel_length - 1) / 2 - 1) + 0.8; 1.4 for length 7.
double DefaultGradientSigma(int kernel_length);

// INVALID_ARGUMENT naming the field when kernel_length is not odd in [3, 31] or sigma is not 0 and
// not finite in (0, 64].
absl::Status ValidateGradientSpec(const GradientSpec& spec);

// The taps of a valid spec (float64); the errors of ValidateGradientSpec otherwise.
absl::StatusOr<GradientTaps> ComputeGradientTaps(const GradientSpec& spec);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_GRADIENT_TYPES_H_
