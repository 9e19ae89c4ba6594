#include "cuimg/reference/morphology_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <utility>

#include "cuimg/common/cancel_token.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/reference/parallel_for.h"

namespace cuimg {
namespace {

template <typename T>
T MinOf(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmin(a, b);
  } else {
    return b < a ? b : a;
  }
}
template <typename T>
T MaxOf(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmax(a, b);
  } else {
    return a < b ? b : a;
  }
}

// The value min/max starts from: it never wins against any pixel. NaN is the identity of
// fmin/fmax, so a window of only NaN pixels stays NaN.
template <typename T>
T Identity(bool dilate) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::quiet_NaN();
  } else {
    return dilate ? PixelLowest<T>() : PixelMax<T>();
  }
}

template <typename T>
T OutsideValue(const MorphologyStep& step, bool dilate) {
  if (step.border == BorderMode::kConstant) return SaturateCast<T>(step.border_value);
  return dilate ? PixelLowest<T>() : PixelMax<T>();
}

// Member reads between two looks at the cancel token: tens of microseconds of work, so a
// stopped request ends within milliseconds even when one row of a large element takes seconds.
constexpr std::int64_t kReadsPerCancelCheck = std::int64_t{1} << 16;

// One erosion or dilation pass: the definition, member by member. Once `cancel` stops, the
// remaining pixels are left unwritten (the caller discards the result).
template <typename T>
void ErodeDilate(const T* in, T* out, const Extent& e, const StructuringElement& se, bool dilate,
                 T outside, int threads, const CancelToken& cancel) {
  const auto members = se.Chords();
  std::int64_t reads_per_pixel = 1;
  for (const Chord& c : members) reads_per_pixel += c.length;
  const std::int64_t pixels_per_check =
      std::max<std::int64_t>(1, kReadsPerCancelCheck / reads_per_pixel);
  ParallelFor(e.depth * e.height, threads, [&](std::int64_t row) {
    const std::int64_t z = row / e.height;
    const std::int64_t y = row % e.height;
    T* out_row = out + row * e.width;
    for (std::int64_t x = 0; x < e.width; ++x) {
      if (x % pixels_per_check == 0 && cancel.Stopped()) return;
      T acc = Identity<T>(dilate);
      for (const Chord& c : members) {
        const std::int64_t zz = z + c.dz;
        const std::int64_t yy = y + c.dy;
        const bool row_inside = zz >= 0 && zz < e.depth && yy >= 0 && yy < e.height;
        for (int i = 0; i < c.length; ++i) {
          const std::int64_t xx = x + c.dx + i;
          const T v = (row_inside && xx >= 0 && xx < e.width)
                          ? in[(zz * e.height + yy) * e.width + xx]
                          : outside;
          acc = dilate ? MaxOf(acc, v) : MinOf(acc, v);
        }
      }
      out_row[x] = acc;
    }
  });
}

template <typename T>
T SaturatingSub(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a - b;
  } else {
    const std::int32_t d = std::int32_t{a} - std::int32_t{b};
    return static_cast<T>(std::clamp<std::int32_t>(d, std::numeric_limits<T>::lowest(),
                                                   std::numeric_limits<T>::max()));
  }
}

template <typename T>
class Runner {
 public:
  Runner(const Extent& e, int threads, const CancelToken& cancel)
      : e_(e), n_(e.Pixels()), threads_(threads), cancel_(cancel) {}

  std::vector<T> Iterate(const std::vector<T>& src, const MorphologyStep& step, bool dilate) {
    std::vector<T> cur = src;
    std::vector<T> next(n_);
    for (int i = 0; i < step.iterations && !cancel_.Stopped(); ++i) {
      ErodeDilate(cur.data(), next.data(), e_, step.element, dilate,
                  OutsideValue<T>(step, dilate), threads_, cancel_);
      std::swap(cur, next);
    }
    return cur;
  }

  std::vector<T> Step(const std::vector<T>& src, const MorphologyStep& step) {
    switch (step.op) {
      case MorphOp::kErode:
        return Iterate(src, step, false);
      case MorphOp::kDilate:
        return Iterate(src, step, true);
      case MorphOp::kOpen:
        return Iterate(Iterate(src, step, false), step, true);
      case MorphOp::kClose:
        return Iterate(Iterate(src, step, true), step, false);
      case MorphOp::kGradient:
        return Difference(Iterate(src, step, true), Iterate(src, step, false));
      case MorphOp::kTopHat:
        return Difference(src, Iterate(Iterate(src, step, false), step, true));
      case MorphOp::kBlackHat:
        break;
    }
    return Difference(Iterate(Iterate(src, step, true), step, false), src);
  }

 private:
  std::vector<T> Difference(const std::vector<T>& a, const std::vector<T>& b) {
    std::vector<T> out(n_);
    for (std::int64_t i = 0; i < n_; ++i) out[i] = SaturatingSub(a[i], b[i]);
    return out;
  }

  Extent e_;
  std::int64_t n_;
  int threads_;
  const CancelToken& cancel_;
};

}  // namespace

absl::StatusOr<Image> MorphologyReference(const Image& input,
                                          const std::vector<MorphologyStep>& steps, int threads,
                                          const CancelToken& cancel) {
  if (input.channels() != 1) {
    return absl::InvalidArgumentError("morphology needs a single-channel image");
  }
  if (steps.empty()) return absl::InvalidArgumentError("morphology needs at least one step");
  return VisitPixelType(input.type(), [&](auto tag) -> absl::StatusOr<Image> {
    using T = decltype(tag);
    const Extent& e = input.extent();
    std::vector<T> cur(input.As<T>(), input.As<T>() + e.Pixels());
    Runner<T> runner(e, threads, cancel);
    for (const MorphologyStep& step : steps) {
      if (cancel.Stopped()) break;
      cur = runner.Step(cur, step);
    }
    // A token never un-stops: if any pass skipped work, this reports why.
    CUIMG_RETURN_IF_ERROR(cancel.Check());
    Image out(input.type(), e, 1);
    std::copy(cur.begin(), cur.end(), out.As<T>());
    return out;
  });
}

}  // namespace cuimg
