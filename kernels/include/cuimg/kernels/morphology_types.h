// The vocabulary of morphology shared by the CPU reference and the CUDA kernels.
#ifndef CUIMG_KERNELS_MORPHOLOGY_TYPES_H_
#define CUIMG_KERNELS_MORPHOLOGY_TYPES_H_

#include <vector>

#include "cuimg/kernels/structuring_element.h"

namespace cuimg {

enum class MorphOp { kErode, kDilate, kOpen, kClose, kGradient, kTopHat, kBlackHat };

// kNeutral: outside pixels never win (+max for erosion, lowest for dilation; +-inf for f32).
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

}  // namespace cuimg

#endif  // CUIMG_KERNELS_MORPHOLOGY_TYPES_H_
