// The vocabulary of morphology shared by the CPU reference and the CUDA kernels.
#ifndef CUIMG_KERNELS_MORPHOLOGY_TYPES_H_
#define CUIMG_KERNELS_MORPHOLOGY_TYPES_H_

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/image.h"
#include "cuimg/common/pixel_type.h"
#include "cuimg/kernels/segmentation_types.h"
#include "cuimg/kernels/structuring_element.h"

namespace cuimg {

// The first seven are OpenCV's morphologyEx operations. The rest are the segmentation steps
// (issue 48); all but kThreshold are global (IsGlobalStep). With f = the chain's current image:
// - kFillHoles: reconstruction by erosion of f from its border (the marker is f on the image's
//   border and the type's maximum inside): equals scipy.ndimage.binary_fill_holes on 0/max masks.
// - kReconstructDilate / kReconstructErode: reconstruction of the request's marker image under /
//   over f (the mask), as skimage.morphology.reconstruction(marker, f, method). The marker is
//   clamped first, min(marker, f) for dilation and max(marker, f) for erosion, so any marker is
//   accepted (for marker <= f the clamp changes nothing).
// - kOpenRec / kCloseRec: erode (dilate) f with the element `iterations` times, then reconstruct
//   by dilation under (erosion over) f.
// - kHMax / kHMin: reconstruction by dilation of f - h under f (saturated at the type's lowest),
//   and its dual (f + h over f), as ITK's HMaxima/HMinimaImageFilter.
// - kThreshold: pixels in [lo, hi] become the type's maximum (1.0 for f32), the others 0.
// - kRemoveSmall / kKeepLargest: on masks (non-zero is foreground), connected components of fewer
//   than `min_voxels` voxels, or all but the largest (ties: the lowest label), become 0; kept
//   pixels keep their values.
// Reconstruction, hole filling and the mask steps connect pixels by the step's `connectivity`.
// f32 NaN: a NaN pixel of the mask (f) stays NaN and nothing propagates through it; a NaN marker
// pixel seeds nothing (it counts as the lowest value for dilation, the highest for erosion).
enum class MorphOp {
  kErode,
  kDilate,
  kOpen,
  kClose,
  kGradient,
  kTopHat,
  kBlackHat,
  kFillHoles,
  kReconstructDilate,
  kReconstructErode,
  kOpenRec,
  kCloseRec,
  kHMax,
  kHMin,
  kThreshold,
  kRemoveSmall,
  kKeepLargest,
};

// The step's name as the CLI and the Python client spell it: "erode", ..., "black_hat",
// "fill_holes", "reconstruct_dilate", "reconstruct_erode", "open_rec", "close_rec", "hmax",
// "hmin", "threshold", "remove_small", "keep_largest".
absl::string_view MorphOpName(MorphOp op);

// kNeutral: outside pixels never win (+max for erosion, lowest for dilation; NaN for f32, the
// identity of fminf/fmaxf, so a window whose pixels inside the image are all NaN, or that has
// none, gives NaN).
// kConstant: outside pixels have `border_value` (saturated to the pixel type).
enum class BorderMode { kNeutral, kConstant };

// One step of a chain. Semantics as OpenCV's morphologyEx with `iterations` for the first seven
// ops; the segmentation steps are described at MorphOp. Fields a step does not use are ignored.
struct MorphologyStep {
  MorphOp op = MorphOp::kErode;
  // The element of erode ... black_hat, open_rec and close_rec.
  StructuringElement element;
  int iterations = 1;
  // The border of the element's passes (erode ... black_hat, open_rec, close_rec).
  BorderMode border = BorderMode::kNeutral;
  double border_value = 0.0;
  // Global steps: how pixels connect.
  Connectivity connectivity = Connectivity::kDefault;
  // kHMax / kHMin: the height, finite and >= 0. Integer types: the marker is
  // SaturateCast(f -/+ h); f32: f -/+ float(h) in float arithmetic.
  double h = 0.0;
  // kThreshold: the inclusive range [lo, hi], lo <= hi (infinities allowed, NaN not).
  double lo = 0.0;
  double hi = 0.0;
  // kRemoveSmall: components of fewer voxels become 0 (>= 0; 0 removes nothing).
  std::int64_t min_voxels = 0;
};

// The primitive passes (erosion or dilation) that one step expands to, in order; compound steps
// also combine them with a difference. Used by both implementations and to estimate work. The
// segmentation steps count only their element's passes (open_rec, close_rec: `iterations`;
// the others none): their global part is estimated on its own.
int PrimitivePassCount(const MorphologyStep& step);

// True for the steps whose result at a pixel may depend on any pixel of the image
// (reconstruction, hole filling, h-extrema, open_rec/close_rec, remove_small, keep_largest):
// a streamed volume must be whole before they run. Erode ... black_hat and threshold are local.
bool IsGlobalStep(const MorphologyStep& step);

// True for kReconstructDilate and kReconstructErode: the steps that read the request's marker.
bool UsesMarker(const MorphologyStep& step);
bool AnyStepUsesMarker(const std::vector<MorphologyStep>& steps);

// INVALID_ARGUMENT naming `field` + ".connectivity", ".h", ".lo", ".hi", ".min_voxels" or
// ".iterations" ("steps[2].h") unless the step's segmentation parameters are in range for an
// image of `extent`, for the parameters its op uses: the connectivity suits the image's
// dimensionality (ValidateConnectivity); h is finite and >= 0; lo <= hi and neither is NaN;
// min_voxels >= 0; the global steps other than open_rec and close_rec run once (iterations 1).
// Elements and iteration ranges are the caller's (StructuringElement::Create, the server's
// limits).
absl::Status ValidateMorphologyStep(const MorphologyStep& step, const Extent& extent,
                                    absl::string_view field);

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
// True for the steps that take U32 images (the label type): fill_holes, reconstruct_dilate /
// reconstruct_erode, hmax / hmin, threshold, remove_small, keep_largest. The element steps
// (erode ... black_hat, open_rec, close_rec) take the filter types only.
bool StepTakesU32(const MorphologyStep& step);
// OK unless `type` is U32 and step `index` does not take it: INVALID_ARGUMENT
// (UNSUPPORTED_PIXEL_TYPE) naming the field "input".
absl::Status CheckStepPixelType(const MorphologyStep& step, PixelType type, std::size_t index);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_MORPHOLOGY_TYPES_H_
