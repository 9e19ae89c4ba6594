#include "cuimg/reference/gradient_reference.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "cuimg/common/status_macros.h"
#include "cuimg/reference/parallel_for.h"

namespace cuimg {
namespace {

// One slice: the row pass into float64 planes (smoothed along x, differentiated along x), then the
// column pass from them. Rows are skipped once `cancel` stops (the caller discards the result).
template <typename T>
void GradientSlice(const T* in, const Extent& e, const GradientTaps& taps, float* gx, float* gy,
                   float* magnitude, float* angle, int threads, const CancelToken& cancel) {
  const std::int64_t w = e.width;
  const std::int64_t h = e.height;
  const int r = taps.radius;
  std::vector<double> smooth_x(static_cast<std::size_t>(w * h));
  std::vector<double> deriv_x(static_cast<std::size_t>(w * h));
  ParallelFor(h, threads, [&](std::int64_t y) {
    if (cancel.Stopped()) return;
    const T* row = in + y * w;
    for (std::int64_t x = 0; x < w; ++x) {
      auto at = [&](int k) { return static_cast<double>(row[Reflect101(x + k, w)]); };
      double s = taps.smoothing[r] * at(0);
      double d = 0.0;
      for (int k = 1; k <= r; ++k) {
        const double before = at(-k);
        const double after = at(k);
        s += taps.smoothing[r + k] * after + taps.smoothing[r - k] * before;
        // Paired differences (the derivative taps are odd): exactly 0 where the row is flat.
        d += taps.derivative[r + k] * (after - before);
      }
      smooth_x[y * w + x] = s;
      deriv_x[y * w + x] = d;
    }
  });
  ParallelFor(h, threads, [&](std::int64_t y) {
    if (cancel.Stopped()) return;
    for (std::int64_t x = 0; x < w; ++x) {
      auto at = [&](int k) { return Reflect101(y + k, h) * w + x; };
      double vx = taps.smoothing[r] * deriv_x[at(0)];
      double vy = 0.0;
      for (int k = 1; k <= r; ++k) {
        vx += taps.smoothing[r + k] * deriv_x[at(k)] + taps.smoothing[r - k] * deriv_x[at(-k)];
        vy += taps.derivative[r + k] * (smooth_x[at(k)] - smooth_x[at(-k)]);
      }
      const std::int64_t o = y * w + x;
      gx[o] = static_cast<float>(vx);
      gy[o] = static_cast<float>(vy);
      if (magnitude != nullptr) magnitude[o] = static_cast<float>(std::sqrt(vx * vx + vy * vy));
      if (angle != nullptr) angle[o] = static_cast<float>(std::atan2(vy, vx));
    }
  });
}

}  // namespace

std::int64_t Reflect101(std::int64_t p, std::int64_t n) {
  if (n == 1) return 0;
  while (p < 0 || p >= n) p = p < 0 ? -p : 2 * (n - 1) - p;
  return p;
}

absl::StatusOr<GradientImages> GradientReference(const Image& input, const GradientSpec& spec,
                                                 int threads, const CancelToken& cancel) {
  absl::StatusOr<GradientTaps> taps = ComputeGradientTaps(spec);
  if (!taps.ok()) return taps.status();
  if (absl::Status s = CheckFilterPixelType(input.type(), "input", "the gradient"); !s.ok()) {
    return s;
  }
  if (input.channels() != 1) {
    return absl::InvalidArgumentError("input: the gradient takes one channel");
  }
  const Extent& e = input.extent();
  if (e.width < 1 || e.height < 1 || e.depth < 1) {
    return absl::InvalidArgumentError("input: every dimension must be >= 1");
  }
  GradientImages out;
  out.gx = Image(PixelType::kF32, e);
  out.gy = Image(PixelType::kF32, e);
  if (spec.magnitude) out.magnitude = Image(PixelType::kF32, e);
  if (spec.angle) out.angle = Image(PixelType::kF32, e);
  const std::int64_t slice = e.SlicePixels();
  VisitPixelType(input.type(), [&](auto tag) {
    using T = decltype(tag);
    for (std::int64_t z = 0; z < e.depth && !cancel.Stopped(); ++z) {
      GradientSlice<T>(input.As<T>() + z * slice, e, *taps, out.gx.As<float>() + z * slice,
                       out.gy.As<float>() + z * slice,
                       spec.magnitude ? out.magnitude.As<float>() + z * slice : nullptr,
                       spec.angle ? out.angle.As<float>() + z * slice : nullptr, threads, cancel);
    }
    return 0;
  });
  // A token never un-stops: if any row was skipped, this reports why.
  CUIMG_RETURN_IF_ERROR(cancel.Check());
  return out;
}

}  // namespace cuimg
