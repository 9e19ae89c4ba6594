#include "cuimg/kernels/morphology_types.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {

absl::string_view MorphOpName(MorphOp op) {
  switch (op) {
    case MorphOp::kErode:
      return "erode";
    case MorphOp::kDilate:
      return "dilate";
    case MorphOp::kOpen:
      return "open";
    case MorphOp::kClose:
      return "close";
    case MorphOp::kGradient:
      return "gradient";
    case MorphOp::kTopHat:
      return "top_hat";
    case MorphOp::kBlackHat:
      return "black_hat";
    case MorphOp::kFillHoles:
      return "fill_holes";
    case MorphOp::kReconstructDilate:
      return "reconstruct_dilate";
    case MorphOp::kReconstructErode:
      return "reconstruct_erode";
    case MorphOp::kOpenRec:
      return "open_rec";
    case MorphOp::kCloseRec:
      return "close_rec";
    case MorphOp::kHMax:
      return "hmax";
    case MorphOp::kHMin:
      return "hmin";
    case MorphOp::kThreshold:
      return "threshold";
    case MorphOp::kRemoveSmall:
      return "remove_small";
    case MorphOp::kKeepLargest:
      return "keep_largest";
  }
  return "?";
}

int PrimitivePassCount(const MorphologyStep& step) {
  switch (step.op) {
    case MorphOp::kErode:
    case MorphOp::kDilate:
    case MorphOp::kOpenRec:
    case MorphOp::kCloseRec:
      return step.iterations;
    case MorphOp::kOpen:
    case MorphOp::kClose:
    case MorphOp::kGradient:
    case MorphOp::kTopHat:
    case MorphOp::kBlackHat:
      return 2 * step.iterations;
    case MorphOp::kFillHoles:
    case MorphOp::kReconstructDilate:
    case MorphOp::kReconstructErode:
    case MorphOp::kHMax:
    case MorphOp::kHMin:
    case MorphOp::kThreshold:
    case MorphOp::kRemoveSmall:
    case MorphOp::kKeepLargest:
      break;
  }
  return 0;
}

bool IsGlobalStep(const MorphologyStep& step) {
  switch (step.op) {
    case MorphOp::kErode:
    case MorphOp::kDilate:
    case MorphOp::kOpen:
    case MorphOp::kClose:
    case MorphOp::kGradient:
    case MorphOp::kTopHat:
    case MorphOp::kBlackHat:
    case MorphOp::kThreshold:
      return false;
    case MorphOp::kFillHoles:
    case MorphOp::kReconstructDilate:
    case MorphOp::kReconstructErode:
    case MorphOp::kOpenRec:
    case MorphOp::kCloseRec:
    case MorphOp::kHMax:
    case MorphOp::kHMin:
    case MorphOp::kRemoveSmall:
    case MorphOp::kKeepLargest:
      break;
  }
  return true;
}

bool UsesMarker(const MorphologyStep& step) {
  return step.op == MorphOp::kReconstructDilate || step.op == MorphOp::kReconstructErode;
}

bool AnyStepUsesMarker(const std::vector<MorphologyStep>& steps) {
  return std::any_of(steps.begin(), steps.end(), UsesMarker);
}

bool StepTakesU32(const MorphologyStep& step) {
  return IsGlobalStep(step) ? step.op != MorphOp::kOpenRec && step.op != MorphOp::kCloseRec
                            : step.op == MorphOp::kThreshold;
}

absl::Status CheckStepPixelType(const MorphologyStep& step, PixelType type, std::size_t index) {
  if (type != PixelType::kU32 || StepTakesU32(step)) return absl::OkStatus();
  return CheckFilterPixelType(type, "input",
                              absl::StrCat("steps[", index, "] (", MorphOpName(step.op), ")"));
}

absl::Status ValidateMorphologyStep(const MorphologyStep& step, const Extent& extent,
                                    absl::string_view field) {
  if (IsGlobalStep(step)) {
    const std::string connectivity = absl::StrCat(field, ".connectivity");
    CUIMG_RETURN_IF_ERROR(ValidateConnectivity(step.connectivity, extent, connectivity.c_str()));
    if (step.op != MorphOp::kOpenRec && step.op != MorphOp::kCloseRec && step.iterations != 1) {
      return InvalidFieldError(
          ErrorReason::kInvalidCombination, absl::StrCat(field, ".iterations"),
          absl::StrCat(MorphOpName(step.op), " runs once; iterations must be 1, got ",
                       step.iterations));
    }
  }
  if ((step.op == MorphOp::kHMax || step.op == MorphOp::kHMin) &&
      !(std::isfinite(step.h) && step.h >= 0)) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, absl::StrCat(field, ".h"),
                             absl::StrCat("must be finite and >= 0, got ", step.h));
  }
  if (step.op == MorphOp::kThreshold) {
    if (std::isnan(step.lo)) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange, absl::StrCat(field, ".lo"),
                               "must be a number, got NaN");
    }
    if (std::isnan(step.hi) || step.hi < step.lo) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange, absl::StrCat(field, ".hi"),
                               absl::StrCat("must be >= lo (", step.lo, "), got ", step.hi));
    }
  }
  if (step.op == MorphOp::kRemoveSmall && step.min_voxels < 0) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, absl::StrCat(field, ".min_voxels"),
                             absl::StrCat("must be >= 0, got ", step.min_voxels));
  }
  return absl::OkStatus();
}

}  // namespace cuimg
