// Structuring elements for morphology: construction (OpenCV-compatible shapes) and the chord
// decomposition that kernels iterate over.
#ifndef CUIMG_KERNELS_STRUCTURING_ELEMENT_H_
#define CUIMG_KERNELS_STRUCTURING_ELEMENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace cuimg {

enum class ElementShape { kRect, kEllipse, kCross, kCustom };

// What a caller asks for. depth 0 means a 2D element (applied to each slice of a volume); shapes
// are then rasterized exactly as OpenCV's getStructuringElement. depth >= 1 makes a 3D element.
struct ElementSpec {
  ElementShape shape = ElementShape::kRect;
  int width = 1;
  int height = 1;
  int depth = 0;
  // -1 means the centre, size / 2.
  int anchor_x = -1;
  int anchor_y = -1;
  int anchor_z = -1;
  // kCustom only: width * height * max(depth, 1) bytes, x fastest; non-zero = member.
  std::vector<std::uint8_t> mask;
};

// A run of `length` consecutive member offsets along x, starting at (dx, dy, dz) relative to the
// anchor.
struct Chord {
  int dx = 0;
  int dy = 0;
  int dz = 0;
  int length = 0;
  friend bool operator==(const Chord& a, const Chord& b) {
    return a.dx == b.dx && a.dy == b.dy && a.dz == b.dz && a.length == b.length;
  }
};

// A validated, rasterized element: a 3D mask (depth 1 for 2D elements) with an anchor inside the
// bounding box. Immutable; cheap to copy for the sizes the server allows.
class StructuringElement {
 public:
  // The 1x1 element {origin}: the identity of erosion and dilation.
  StructuringElement() = default;
  // INVALID_ARGUMENT (naming the spec field) for sizes < 1, anchors outside the box, a custom
  // mask of the wrong length or with no member.
  static absl::StatusOr<StructuringElement> Create(const ElementSpec& spec);

  int width() const { return width_; }
  int height() const { return height_; }
  int depth() const { return depth_; }
  int anchor_x() const { return anchor_x_; }
  int anchor_y() const { return anchor_y_; }
  int anchor_z() const { return anchor_z_; }
  bool Contains(int x, int y, int z) const {
    return mask_[(static_cast<std::size_t>(z) * height_ + y) * width_ + x] != 0;
  }
  const std::vector<std::uint8_t>& mask() const { return mask_; }
  // Number of member offsets.
  std::int64_t MemberCount() const;
  // True when every offset of the bounding box is a member (separable).
  bool IsBox() const;
  // The members as maximal x-runs, ordered by z, then y, then x.
  std::vector<Chord> Chords() const;

 private:
  int width_ = 1;
  int height_ = 1;
  int depth_ = 1;
  int anchor_x_ = 0;
  int anchor_y_ = 0;
  int anchor_z_ = 0;
  std::vector<std::uint8_t> mask_{1};
};

}  // namespace cuimg

#endif  // CUIMG_KERNELS_STRUCTURING_ELEMENT_H_
