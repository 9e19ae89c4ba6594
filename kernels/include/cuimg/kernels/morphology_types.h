// The vocabulary of morphology shared by the CPU reference and the CUDA kernels.
#ifndef CUIMG_KERNELS_MORPHOLOGY_TYPES_H_
#define CUIMG_KERNELS_MORPHOLOGY_TYPES_H_

#include <limits>
#include <type_traits>
#include <vector>

#include "cuimg/common/pixel_type.h"
#include "cuimg/kernels/structuring_element.h"

namespace cuimg {

enum class MorphOp { kErode, kDilate, kOpen, kClose, kGradient, kTopHat, kBlackHat };

// kNeutral: outside pixels never win (+max for erosion, lowest for dilation; NaN for f32, the
// identity of fminf/fmaxf, so a window whose pixels inside the image are all NaN, or that has
// none, gives NaN).
// kConstant: outside pixels have `border_value` (saturated to the pixel type).
enum class BorderMode { kNeutral, kConstant };

// One step of a chain. Semantics as OpenCV's morphologyEx with `iterations`.
struct MorphologyStep {
  MorphOp op = MorphOp::kErode;
  StructuringElement element;
  int iterations = 1;
  BorderMode border = BorderMode::kNeutral;
  double border_value = 0.0;
};

// The primitive passes (erosion or dilation) that one step expands to, in order; compound steps
// also combine them with a difference. Used by both implementations and to estimate work.
int PrimitivePassCount(const MorphologyStep& step);

// The value of every pixel outside the image for one erosion (`dilate` false) or dilation pass of
// `step`, as both implementations use it. For f32 the neutral border is NaN rather than +-inf:
// under minNum/maxNum NaN loses to every number as +-inf does, but also to +-inf itself, so the
// border cannot turn a window of NaN pixels into an infinity.
template <typename T>
T MorphologyOutsideValue(const MorphologyStep& step, bool dilate) {
  if (step.border == BorderMode::kConstant) return SaturateCast<T>(step.border_value);
  if constexpr (std::is_floating_point_v<T>) {
    return std::numeric_limits<T>::quiet_NaN();
  } else {
    return dilate ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
}

}  // namespace cuimg

#endif  // CUIMG_KERNELS_MORPHOLOGY_TYPES_H_
