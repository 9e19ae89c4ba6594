#include "cuimg/kernels/morphology_types.h"

namespace cuimg {

int PrimitivePassCount(const MorphologyStep& step) {
  switch (step.op) {
    case MorphOp::kErode:
    case MorphOp::kDilate:
      return step.iterations;
    case MorphOp::kOpen:
    case MorphOp::kClose:
    case MorphOp::kGradient:
    case MorphOp::kTopHat:
    case MorphOp::kBlackHat:
      break;
  }
  return 2 * step.iterations;
}

}  // namespace cuimg
