#include "cuimg/kernels/structuring_element.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

// OpenCV's getStructuringElement for one 2D slice (shape rules copied in behaviour, including
// its rounding, so masks match OpenCV bit for bit).
void Rasterize2D(ElementShape shape, int width, int height, int anchor_x, int anchor_y,
                 std::uint8_t* out) {
  if (width == 1 && height == 1) shape = ElementShape::kRect;
  const int r = height / 2;
  const int c = width / 2;
  const double inv_r2 = r ? 1.0 / (static_cast<double>(r) * r) : 0.0;
  for (int i = 0; i < height; ++i) {
    int j1 = 0;
    int j2 = 0;
    if (shape == ElementShape::kRect || (shape == ElementShape::kCross && i == anchor_y)) {
      j2 = width;
    } else if (shape == ElementShape::kCross) {
      j1 = anchor_x;
      j2 = j1 + 1;
    } else {
      const int dy = i - r;
      if (std::abs(dy) <= r) {
        // saturate_cast<int>(double) rounds half to even (cvRound).
        const int dx = static_cast<int>(std::nearbyint(c * std::sqrt((r * r - dy * dy) * inv_r2)));
        j1 = std::max(c - dx, 0);
        j2 = std::min(c + dx + 1, width);
      }
    }
    for (int j = 0; j < width; ++j) out[i * width + j] = (j >= j1 && j < j2) ? 1 : 0;
  }
}

// The 3D shapes: box, ellipsoid (x/a)^2 + (y/b)^2 + (z/c)^2 <= 1 about floor(size/2), cross.
void Rasterize3D(ElementShape shape, int width, int height, int depth, int ax, int ay, int az,
                 std::uint8_t* out) {
  const int a = width / 2;
  const int b = height / 2;
  const int c = depth / 2;
  // Exact in integers: (x/a)^2 + (y/b)^2 + (z/c)^2 <= 1 scaled by (abc)^2; a zero semi-axis
  // admits only offset 0 on that axis. Sizes <= 1023 keep (abc)^2 well inside int64.
  const std::int64_t a2 = std::int64_t{a} * a;
  const std::int64_t b2 = std::int64_t{b} * b;
  const std::int64_t c2 = std::int64_t{c} * c;
  auto in_ellipsoid = [&](int dx, int dy, int dz) {
    if ((a == 0 && dx != 0) || (b == 0 && dy != 0) || (c == 0 && dz != 0)) return false;
    const std::int64_t sa = a == 0 ? 1 : a2;
    const std::int64_t sb = b == 0 ? 1 : b2;
    const std::int64_t sc = c == 0 ? 1 : c2;
    return std::int64_t{dx} * dx * sb * sc + std::int64_t{dy} * dy * sa * sc +
               std::int64_t{dz} * dz * sa * sb <=
           sa * sb * sc;
  };
  for (int z = 0; z < depth; ++z) {
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        bool member = false;
        switch (shape) {
          case ElementShape::kRect:
            member = true;
            break;
          case ElementShape::kEllipse:
            member = in_ellipsoid(x - a, y - b, z - c);
            break;
          case ElementShape::kCross: {
            const int off = (x != ax) + (y != ay) + (z != az);
            member = off <= 1;
            break;
          }
          case ElementShape::kCustom:
            break;
        }
        out[(static_cast<std::size_t>(z) * height + y) * width + x] = member ? 1 : 0;
      }
    }
  }
}

absl::Status CheckAnchor(const char* field, int anchor, int size) {
  if (anchor < 0 || anchor >= size) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, field,
                             absl::StrCat(anchor, " is not in [0, ", size, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StructuringElement> StructuringElement::Create(const ElementSpec& spec) {
  if (spec.width < 1) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "width",
                             absl::StrCat(spec.width, " is not >= 1"));
  }
  if (spec.height < 1) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "height",
                             absl::StrCat(spec.height, " is not >= 1"));
  }
  if (spec.depth < 0) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, "depth",
                             absl::StrCat(spec.depth, " is not >= 0"));
  }
  StructuringElement se;
  se.width_ = spec.width;
  se.height_ = spec.height;
  se.depth_ = std::max(spec.depth, 1);
  se.anchor_x_ = spec.anchor_x < 0 ? spec.width / 2 : spec.anchor_x;
  se.anchor_y_ = spec.anchor_y < 0 ? spec.height / 2 : spec.anchor_y;
  se.anchor_z_ = spec.anchor_z < 0 ? se.depth_ / 2 : spec.anchor_z;
  if (absl::Status s = CheckAnchor("anchor_x", se.anchor_x_, se.width_); !s.ok()) return s;
  if (absl::Status s = CheckAnchor("anchor_y", se.anchor_y_, se.height_); !s.ok()) return s;
  if (absl::Status s = CheckAnchor("anchor_z", se.anchor_z_, se.depth_); !s.ok()) return s;

  const std::size_t count = static_cast<std::size_t>(se.width_) * se.height_ * se.depth_;
  if (spec.shape == ElementShape::kCustom) {
    if (spec.mask.size() != count) {
      return InvalidFieldError(
          ErrorReason::kDataSizeMismatch, "mask",
          absl::StrCat(spec.mask.size(), " bytes, expected width * height * depth = ", count));
    }
    se.mask_.resize(count);
    std::transform(spec.mask.begin(), spec.mask.end(), se.mask_.begin(),
                   [](std::uint8_t v) -> std::uint8_t { return v != 0; });
    if (std::none_of(se.mask_.begin(), se.mask_.end(), [](std::uint8_t v) { return v != 0; })) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange, "mask",
                               "has no non-zero byte (the element is empty)");
    }
  } else if (!spec.mask.empty()) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, "mask",
                             "only allowed with shape CUSTOM");
  } else {
    se.mask_.assign(count, 0);
    if (spec.depth == 0) {
      Rasterize2D(spec.shape, se.width_, se.height_, se.anchor_x_, se.anchor_y_, se.mask_.data());
    } else {
      Rasterize3D(spec.shape, se.width_, se.height_, se.depth_, se.anchor_x_, se.anchor_y_,
                  se.anchor_z_, se.mask_.data());
    }
  }
  return se;
}

std::int64_t StructuringElement::MemberCount() const {
  return std::count(mask_.begin(), mask_.end(), std::uint8_t{1});
}

bool StructuringElement::IsBox() const {
  return std::all_of(mask_.begin(), mask_.end(), [](std::uint8_t v) { return v != 0; });
}

std::vector<Chord> StructuringElement::Chords() const {
  std::vector<Chord> chords;
  for (int z = 0; z < depth_; ++z) {
    for (int y = 0; y < height_; ++y) {
      int x = 0;
      while (x < width_) {
        if (!Contains(x, y, z)) {
          ++x;
          continue;
        }
        int end = x;
        while (end < width_ && Contains(end, y, z)) ++end;
        chords.push_back(Chord{x - anchor_x_, y - anchor_y_, z - anchor_z_, end - x});
        x = end;
      }
    }
  }
  return chords;
}

}  // namespace cuimg
