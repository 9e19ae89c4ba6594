// CPU reference for morphology: the definition, written plainly. It is the test oracle for the
// CUDA kernels (which must match it bit for bit) and backs the server's CPU backend.
#ifndef CUIMG_REFERENCE_MORPHOLOGY_REFERENCE_H_
#define CUIMG_REFERENCE_MORPHOLOGY_REFERENCE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/morphology_types.h"

namespace cuimg {

// Runs `steps` in order on `input` (one channel, any pixel type; U32 for the segmentation steps
// only, CheckStepPixelType; 2D or 3D) and returns an image of the same type and extent. Erosion:
// out(p) = min over members m of in(p + m - anchor), with outside pixels as the step's border says;
// dilation uses max. For f32 the min/max are IEEE minNum/maxNum (std::fmin/fmax), so NaN never wins
// against a number. The segmentation steps are as MorphOp describes them; `marker` (one channel of
// the input's type and extent, not overlapping `output`) is the seed of reconstruct_dilate /
// reconstruct_erode, whose mask is the chain's current image, and is required when a step uses it
// (UsesMarker). Uses up to `threads` threads (0 = hardware concurrency). INVALID_ARGUMENT if input
// has more than one channel, is U32 and a step does not take it (CheckStepPixelType) or steps is
// empty, or the marker is missing or does not match (CheckMarker). Looks at `cancel` between steps
// and iterations and every few tens of microseconds of work within a pass, and returns its status
// once it stops. The same into `output`, a view of the input's type and extent that must not
// overlap `input`: the result is written there, and host memory beyond the two views is only what a
// chain needs between passes (none for one pass of one step; one image for several passes or steps;
// up to three for a gradient of several iterations). On an error `output` holds no result.
absl::Status MorphologyReferenceInto(const ImageView& input, const ImageView& output,
                                     const std::vector<MorphologyStep>& steps, int threads = 0,
                                     const CancelToken& cancel = NeverCancelled(),
                                     const ImageView* marker = nullptr);

// OK unless a step of `steps` uses the marker (UsesMarker) and `marker` is null
// (INVALID_ARGUMENT, FIELD_REQUIRED, field "marker") or not one channel of the input's type and
// extent (INVALID_ARGUMENT, SHAPE_MISMATCH, field "marker"). A marker no step uses is ignored.
absl::Status CheckMarker(const ImageView& input, const std::vector<MorphologyStep>& steps,
                         const ImageView* marker);

// Scratch images MorphologyReferenceInto allocates for `steps` (each of the input's bytes).
int MorphologyReferenceScratchImages(const std::vector<MorphologyStep>& steps);

absl::StatusOr<Image> MorphologyReference(const Image& input,
                                          const std::vector<MorphologyStep>& steps, int threads = 0,
                                          const CancelToken& cancel = NeverCancelled(),
                                          const Image* marker = nullptr);

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_MORPHOLOGY_REFERENCE_H_
