#include "cuimg/reference/morphology_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <thread>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/reference/label_reference.h"
#include "cuimg/reference/parallel_for.h"
#include "cuimg/reference/reconstruction_reference.h"
#include "segmentation_steps.h"

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
    const std::int64_t d = std::int64_t{a} - std::int64_t{b};
    return static_cast<T>(std::clamp<std::int64_t>(d, std::numeric_limits<T>::lowest(),
                                                   std::numeric_limits<T>::max()));
  }
}

// Runs steps from `in` into `out` (n pixels each, not overlapping), with scratch buffers of n
// pixels made only as a chain needs them: none for one pass, one for a chain of passes or for
// several steps, two for a gradient of several iterations. Each pass reads one buffer and writes
// another; min, max and differences are exact, so where the values live does not change them.
template <typename T>
class Runner {
 public:
  // `count_only`: walk the chain and allocate its buffers, but compute nothing. `marker`: the
  // seed of the reconstruct steps (n pixels; may be null when no step uses it).
  Runner(const Extent& e, int threads, const CancelToken& cancel, bool count_only = false,
         const T* marker = nullptr)
      : e_(e),
        n_(e.Pixels()),
        threads_(threads),
        cancel_(cancel),
        count_only_(count_only),
        marker_(marker) {}

  // The steps in order, each reading the previous one's result; the last writes `out`.
  void Steps(const T* in, T* out, const std::vector<MorphologyStep>& steps) {
    const int count = static_cast<int>(steps.size());
    const T* src = in;
    for (int k = 0; k < count && !cancel_.Stopped(); ++k) {
      // Results alternate between `out` and a carry buffer so that the last lands in `out`.
      T* dst = (count - 1 - k) % 2 == 0 ? out : Scratch(0);
      Step(src, dst, steps[k], {src, dst});
      src = dst;
    }
  }

  int scratch_images() const { return static_cast<int>(scratch_.size()); }
  // The first error of a step that can fail (the labelling's, on its own limits).
  const absl::Status& status() const { return status_; }

 private:
  // Buffers that a spare must not be: the ones a chain reads or writes.
  using Busy = std::initializer_list<const T*>;

  void Step(const T* src, T* dst, const MorphologyStep& step, Busy busy) {
    const int n = step.iterations;
    switch (step.op) {
      case MorphOp::kErode:
        Passes(src, dst, step, {{false, n}}, busy);
        return;
      case MorphOp::kDilate:
        Passes(src, dst, step, {{true, n}}, busy);
        return;
      case MorphOp::kOpen:
        Passes(src, dst, step, {{false, n}, {true, n}}, busy);
        return;
      case MorphOp::kClose:
        Passes(src, dst, step, {{true, n}, {false, n}}, busy);
        return;
      case MorphOp::kGradient: {
        Passes(src, dst, step, {{true, n}}, busy);
        T* eroded = Spare(busy);
        Passes(src, eroded, step, {{false, n}}, {src, dst, eroded});
        Difference(dst, eroded, dst);
        return;
      }
      case MorphOp::kTopHat:
        Passes(src, dst, step, {{false, n}, {true, n}}, busy);
        Difference(src, dst, dst);
        return;
      case MorphOp::kBlackHat:
        Passes(src, dst, step, {{true, n}, {false, n}}, busy);
        Difference(dst, src, dst);
        return;
      case MorphOp::kFillHoles:
        if (!count_only_) internal::FillHolesMarkerInto(src, dst, e_);
        Reconstruct(src, dst, /*dilate=*/false, step);
        return;
      case MorphOp::kReconstructDilate:
      case MorphOp::kReconstructErode:
        if (!count_only_) std::copy(marker_, marker_ + n_, dst);
        Reconstruct(src, dst, step.op == MorphOp::kReconstructDilate, step);
        return;
      case MorphOp::kOpenRec:
        Passes(src, dst, step, {{false, n}}, busy);
        Reconstruct(src, dst, /*dilate=*/true, step);
        return;
      case MorphOp::kCloseRec:
        Passes(src, dst, step, {{true, n}}, busy);
        Reconstruct(src, dst, /*dilate=*/false, step);
        return;
      case MorphOp::kHMax:
      case MorphOp::kHMin: {
        const bool dilate = step.op == MorphOp::kHMax;
        if (!count_only_) internal::HeightMarkerInto(src, dst, n_, step.h, dilate);
        Reconstruct(src, dst, dilate, step);
        return;
      }
      case MorphOp::kThreshold:
        if (!count_only_) internal::ThresholdInto(src, dst, n_, step.lo, step.hi);
        return;
      case MorphOp::kRemoveSmall:
      case MorphOp::kKeepLargest:
        if (count_only_ || cancel_.Stopped()) return;
        Keep(step.op == MorphOp::kRemoveSmall
                 ? RemoveSmallReference(View(src), View(dst), step.connectivity, step.min_voxels,
                                        cancel_)
                 : KeepLargestReference(View(src), View(dst), step.connectivity, cancel_));
        return;
    }
  }

  // Reconstruction of the marker in `dst` under (dilate) or over `mask`, in place.
  void Reconstruct(const T* mask, T* dst, bool dilate, const MorphologyStep& step) {
    if (count_only_ || cancel_.Stopped()) return;
    internal::ReconstructInPlace(View(mask), View(dst), dilate, step.connectivity, cancel_);
  }

  ImageView View(const T* p) const {
    return ImageView{PixelTypeOf<T>::value, e_, 1, const_cast<T*>(p)};
  }
  void Keep(const absl::Status& s) {
    if (status_.ok()) status_ = s;
  }

  // Runs of passes ({dilate, count}) from `src` to `dst`, through a spare buffer when there are
  // several: pass i writes `dst` when an even number of passes follow it.
  void Passes(const T* src, T* dst, const MorphologyStep& step,
              std::initializer_list<std::pair<bool, int>> runs, Busy busy) {
    int total = 0;
    for (const auto& run : runs) total += run.second;
    if (total == 0) {
      if (!count_only_) std::copy(src, src + n_, dst);
      return;
    }
    T* spare = total > 1 ? Spare(busy) : nullptr;
    int i = 0;
    for (const auto& [dilate, count] : runs) {
      for (int k = 0; k < count && !cancel_.Stopped(); ++k, ++i) {
        T* to = (total - 1 - i) % 2 == 0 ? dst : spare;
        if (!count_only_) {
          ErodeDilate(src, to, e_, step.element, dilate, MorphologyOutsideValue<T>(step, dilate),
                      threads_, cancel_);
        }
        src = to;
      }
    }
  }

  // A scratch buffer that is none of `busy`.
  T* Spare(Busy busy) {
    for (int i = 0;; ++i) {
      T* s = Scratch(i);
      if (std::find(busy.begin(), busy.end(), s) == busy.end()) return s;
    }
  }

  T* Scratch(int i) {
    while (static_cast<int>(scratch_.size()) <= i) scratch_.emplace_back(n_);
    return scratch_[i].data();
  }

  // out = a - b, element by element (out may be a or b).
  void Difference(const T* a, const T* b, T* out) {
    if (count_only_) return;
    for (std::int64_t i = 0; i < n_; ++i) out[i] = SaturatingSub(a[i], b[i]);
  }

  Extent e_;
  std::int64_t n_;
  int threads_;
  const CancelToken& cancel_;
  const bool count_only_;
  const T* marker_;
  absl::Status status_;
  // Uninitialized: every pixel is written before it is read.
  std::vector<std::vector<T, DefaultInitAllocator<T>>> scratch_;
};

}  // namespace

absl::Status CheckMarker(const ImageView& input, const std::vector<MorphologyStep>& steps,
                         const ImageView* marker) {
  const auto user = std::find_if(steps.begin(), steps.end(), UsesMarker);
  if (user == steps.end()) return absl::OkStatus();
  if (marker == nullptr) {
    return InvalidFieldError(ErrorReason::kFieldRequired, "marker",
                             absl::StrCat(MorphOpName(user->op), " needs a marker image"));
  }
  if (marker->type != input.type || marker->extent != input.extent || marker->channels != 1) {
    return InvalidFieldError(
        ErrorReason::kShapeMismatch, "marker",
        absl::StrCat("the marker must be one channel of the input's type and extent (",
                     PixelTypeName(input.type), " ", input.extent.width, "x", input.extent.height,
                     "x", input.extent.depth, "), got ", marker->channels, " channel(s) of ",
                     PixelTypeName(marker->type), " ", marker->extent.width, "x",
                     marker->extent.height, "x", marker->extent.depth));
  }
  return absl::OkStatus();
}

absl::Status MorphologyReferenceInto(const ImageView& input, const ImageView& output,
                                     const std::vector<MorphologyStep>& steps, int threads,
                                     const CancelToken& cancel, const ImageView* marker) {
  if (input.channels != 1) {
    return absl::InvalidArgumentError("morphology needs a single-channel image");
  }
  if (steps.empty()) return absl::InvalidArgumentError("morphology needs at least one step");
  CUIMG_RETURN_IF_ERROR(CheckMarker(input, steps, marker));
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const MorphologyStep& step = steps[i];
    CUIMG_RETURN_IF_ERROR(CheckStepPixelType(step, input.type, i));
    if (IsGlobalStep(step) && input.extent.Pixels() > kMaxReconstructionPixels) {
      return InvalidFieldError(ErrorReason::kLimitExceeded, "",
                               absl::StrCat(MorphOpName(step.op),
                                            " takes images of at most 2^32 "
                                            "pixels"));
    }
  }
  // U32 reaches only the segmentation steps (CheckStepPixelType).
  return VisitAnyPixelType(input.type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    Runner<T> runner(input.extent, threads, cancel, /*count_only=*/false,
                     marker != nullptr ? static_cast<const T*>(marker->data) : nullptr);
    runner.Steps(static_cast<const T*>(input.data), static_cast<T*>(output.data), steps);
    // A token never un-stops: if any pass skipped work, this reports why.
    CUIMG_RETURN_IF_ERROR(cancel.Check());
    return runner.status();
  });
}

int MorphologyReferenceScratchImages(const std::vector<MorphologyStep>& steps) {
  // The same walk on one pixel allocates as many buffers.
  const Extent one{1, 1, 1};
  std::uint8_t in = 0;
  std::uint8_t out = 0;
  Runner<std::uint8_t> runner(one, 1, NeverCancelled(), /*count_only=*/true);
  runner.Steps(&in, &out, steps);
  return runner.scratch_images();
}

absl::StatusOr<Image> MorphologyReference(const Image& input,
                                          const std::vector<MorphologyStep>& steps, int threads,
                                          const CancelToken& cancel, const Image* marker) {
  Image out(input.type(), input.extent(), 1, Image::kUninitialized);
  const ImageView marker_view = marker != nullptr ? marker->view() : ImageView{};
  CUIMG_RETURN_IF_ERROR(MorphologyReferenceInto(input.view(), out.view(), steps, threads, cancel,
                                                marker != nullptr ? &marker_view : nullptr));
  return out;
}

}  // namespace cuimg
