// CPU reference for grey-level morphological reconstruction, the primitive of the segmentation
// steps (fill_holes, reconstruct_*, open_rec/close_rec, hmax/hmin). The test oracle of the CUDA
// reconstruction (which must match it bit for bit) and the server's CPU backend.
#ifndef CUIMG_REFERENCE_RECONSTRUCTION_REFERENCE_H_
#define CUIMG_REFERENCE_RECONSTRUCTION_REFERENCE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/segmentation_types.h"

namespace cuimg {

// Reconstruction of `marker` under `mask` (kDilation) or over it (kErosion), pixels connected by
// `connectivity` (kDefault: 4 in 2D, 6 in 3D): by dilation, output(p) is the largest v such that
// p is joined to some q with min(marker(q), mask(q)) >= v by a path whose mask values are all
// >= v; by erosion, the dual. This is skimage.morphology.reconstruction(marker, mask, method)
// whenever marker <= mask (dilation) or marker >= mask (erosion); other markers are clamped
// first (min(marker, mask), max(marker, mask)). f32: a NaN mask pixel gives NaN and blocks
// propagation; a NaN marker pixel seeds nothing (as the lowest value for dilation, the highest
// for erosion).
//
// Preconditions: `output` may be `marker` itself (in place) but must not overlap `mask`.
// INVALID_ARGUMENT when the views are not one channel of one type and extent (SHAPE_MISMATCH),
// the connectivity does not suit the extent, or the image has more than
// kMaxReconstructionPixels pixels.
// Single-threaded: raster and anti-raster sweeps, then a priority queue of the pixels that can
// still propagate, drained best value first (each pixel is final once popped), so the work is
// O(N log N) for N pixels whatever the geodesic paths, and the queue holds at most two 8-byte
// entries a pixel (ReconstructionReferenceQueueBytes; typically far fewer). Looks at `cancel`
// every 2^16 pixel visits and returns its status once it stops (the output is then unspecified).
absl::Status ReconstructionReferenceInto(const ImageView& marker, const ImageView& mask,
                                         const ImageView& output, ReconstructionMethod method,
                                         Connectivity connectivity,
                                         const CancelToken& cancel = NeverCancelled());

// The largest image the reference reconstructs: queue entries hold a 32-bit pixel index.
inline constexpr std::int64_t kMaxReconstructionPixels = std::int64_t{1} << 32;

// Host bytes the reconstruction's queue may take at most on `extent` (two 8-byte entries a
// pixel, twice that while its vector grows): for admission, beside the images.
std::int64_t ReconstructionReferenceQueueBytes(const Extent& extent);

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_RECONSTRUCTION_REFERENCE_H_
