// Procedural images for the segmentation steps' tests and benchmarks: the adversarial cases of
// reconstruction (a spiral and mazes whose geodesic paths are as long as the image), blob masks
// with holes, and a CT-like volume. Reproducible by seed; values are 0 and the type's maximum
// (1.0 for f32) unless said otherwise.
#ifndef CUIMG_REFERENCE_SEGMENTATION_IMAGES_H_
#define CUIMG_REFERENCE_SEGMENTATION_IMAGES_H_

#include <cstdint>

#include "cuimg/common/image.h"

namespace cuimg {

// A 2D square spiral corridor one pixel wide between walls one pixel wide, entered at (1, 1)
// and winding inwards (every slice of a volume alike): its one path covers about half the
// pixels. Foreground is the corridor. With `ramp`, corridor pixels instead hold values falling
// evenly along the path from the type's maximum (1.0 for f32) at the entrance towards 1 (0 for
// f32, never reached), so a grey reconstruction from the entrance must follow the whole path.
Image SpiralImage(PixelType type, const Extent& extent, bool ramp = false);

// A perfect maze (a random spanning tree of the cells at odd coordinates, carved by a depth-first
// walk) in 2D, or in 3D for a volume: corridors one voxel wide, walls one voxel thick, so paths
// wind through the whole image and no two corridors touch even diagonally except at a junction.
Image MazeImage(PixelType type, const Extent& extent, std::uint64_t seed);

// Discs (balls in a volume) of radius 4..`max_radius` at random, some with one to three holes
// (background discs inside them): a mask whose holes fill_holes closes.
Image BlobImage(PixelType type, const Extent& extent, std::uint64_t seed, int max_radius = 24);

// An i16 CT-like volume (Hounsfield units): air -1000 around an elliptic body of soft tissue
// (40 HU) with lungs (-850), a spine and ribs (bone, 400..1200), smooth variations and noise of a
// few units, so it has many shallow local maxima for hmax to flatten.
Image CtLikeVolume(const Extent& extent, std::uint64_t seed);

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_SEGMENTATION_IMAGES_H_
