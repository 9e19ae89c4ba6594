// CPU references of connected-component labelling, region statistics and the mask steps built
// on it (remove_small, keep_largest, and binary reconstruction for hole filling): the
// definitions of label_types.h, written plainly (a raster union-find). They are the test oracle
// of the CUDA code (cuimg/kernels/label.h, mask_steps.h), which equals them bit for bit, and back
// the server's CPU backend.
//
// Common contract:
// - Images are one channel, any pixel type (U32 included), 2D or 3D, 1..kMaxLabelPixels pixels;
//   input, output and marker views of the input's extent, densely packed, x fastest.
// - The mask steps' `output` has the input's type; it may be the input itself (the steps work in
//   place) but must not otherwise overlap it.
// - INVALID_ARGUMENT (the field named, as the validators of label_types.h name it) for a spec
//   that does not suit the image, more than one channel, or a view of another extent or type.
// - `cancel` is looked at between phases and every 2^16 pixels within one; once it stops, the
//   function returns its status and the outputs are unspecified.
#ifndef CUIMG_REFERENCE_LABEL_REFERENCE_H_
#define CUIMG_REFERENCE_LABEL_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/label_types.h"
#include "cuimg/kernels/segmentation_types.h"

namespace cuimg {

// Labels the foreground of `input` (LabelSpec) into `labels`, a U32 view of the input's extent
// (0 = background, 1..N as scipy.ndimage.label numbers them, components of fewer than
// spec.min_voxels voxels dropped before numbering), and returns the N regions' statistics, label
// k at index k - 1. `intensity`, when given, is one channel of any type and the input's extent;
// it adds min, max, sum and mean.
absl::StatusOr<std::vector<RegionStats>> LabelReferenceInto(
    const ImageView& input, const LabelSpec& spec, const ImageView& labels,
    const ImageView* intensity = nullptr, const CancelToken& cancel = NeverCancelled());

// The same into a new U32 image.
absl::StatusOr<LabelResult> LabelReference(const ImageView& input, const LabelSpec& spec,
                                           const ImageView* intensity = nullptr,
                                           const CancelToken& cancel = NeverCancelled());

// remove_small: the components of the non-zero pixels (NaN is background) with fewer than
// `min_voxels` voxels become 0; every other pixel keeps its value. min_voxels >= 0.
absl::Status RemoveSmallReference(const ImageView& input, const ImageView& output,
                                  Connectivity connectivity, std::int64_t min_voxels,
                                  const CancelToken& cancel = NeverCancelled());

// keep_largest: every component of the non-zero pixels (NaN is background) but the one with the
// most voxels (ties: the lowest label, i.e. the one whose first voxel comes first) becomes 0;
// every other pixel keeps its value. An image without foreground is copied unchanged.
absl::Status KeepLargestReference(const ImageView& input, const ImageView& output,
                                  Connectivity connectivity,
                                  const CancelToken& cancel = NeverCancelled());

// Binary reconstruction (SeededFillSpec): `marker` is required with spec.seed_marker (one channel
// of any type and the input's extent) and ignored otherwise.
absl::Status FillUnseededComponentsReference(const ImageView& input, const ImageView* marker,
                                             const ImageView& output, const SeededFillSpec& spec,
                                             const CancelToken& cancel = NeverCancelled());

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_LABEL_REFERENCE_H_
