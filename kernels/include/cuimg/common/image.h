// Host-side images: an owning Image and the non-owning views kernels and references take.
#ifndef CUIMG_COMMON_IMAGE_H_
#define CUIMG_COMMON_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuimg/common/pixel_type.h"

namespace cuimg {

// Size of an image or volume in pixels. depth is 1 for a 2D image.
struct Extent {
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::int64_t depth = 1;

  std::int64_t Pixels() const { return width * height * depth; }
  std::int64_t SlicePixels() const { return width * height; }
  friend bool operator==(const Extent& a, const Extent& b) {
    return a.width == b.width && a.height == b.height && a.depth == b.depth;
  }
  friend bool operator!=(const Extent& a, const Extent& b) { return !(a == b); }
};

// A non-owning view of densely packed pixels (host or device memory: the view does not know).
// Layout: x fastest, then channels interleaved, then rows, then slices.
struct ImageView {
  PixelType type = PixelType::kU8;
  Extent extent;
  int channels = 1;
  void* data = nullptr;

  std::size_t Bytes() const {
    return static_cast<std::size_t>(extent.Pixels()) * channels * PixelSize(type);
  }
  template <typename T>
  T* As() const {
    return static_cast<T*>(data);
  }
};

// An owning host image.
class Image {
 public:
  Image() = default;
  Image(PixelType type, Extent extent, int channels = 1)
      : type_(type),
        extent_(extent),
        channels_(channels),
        bytes_(static_cast<std::size_t>(extent.Pixels()) * channels * PixelSize(type)) {}

  PixelType type() const { return type_; }
  const Extent& extent() const { return extent_; }
  int channels() const { return channels_; }
  std::size_t size_bytes() const { return bytes_.size(); }
  std::uint8_t* bytes() { return bytes_.data(); }
  const std::uint8_t* bytes() const { return bytes_.data(); }
  std::vector<std::uint8_t>& storage() { return bytes_; }
  const std::vector<std::uint8_t>& storage() const { return bytes_; }

  template <typename T>
  T* As() {
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <typename T>
  const T* As() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }
  ImageView view() { return ImageView{type_, extent_, channels_, bytes_.data()}; }
  ImageView view() const {
    return ImageView{type_, extent_, channels_, const_cast<std::uint8_t*>(bytes_.data())};
  }

 private:
  PixelType type_ = PixelType::kU8;
  Extent extent_;
  int channels_ = 1;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace cuimg

#endif  // CUIMG_COMMON_IMAGE_H_
