// Host-side images: an owning Image and the non-owning views kernels and references take.
#ifndef CUIMG_COMMON_IMAGE_H_
#define CUIMG_COMMON_IMAGE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
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

// std::allocator whose value-less construct leaves the element uninitialized, so that a vector
// sized without a value is not zero-filled (see Image's kUninitialized).
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// An owning host image.
class Image {
 public:
  // Selects the constructor that leaves the pixels unset, for a caller that writes every byte
  // before reading any: a large zero-filled image costs its page faults up front, on one thread
  // (a 157 MB volume took 80 ms), where writing it in place spreads them over the writers.
  enum Uninitialized { kUninitialized };

  Image() = default;
  // Zero-filled.
  Image(PixelType type, Extent extent, int channels = 1)
      : Image(type, extent, channels, kUninitialized) {
    if (!bytes_.empty()) std::memset(bytes_.data(), 0, bytes_.size());
  }
  Image(PixelType type, Extent extent, int channels, Uninitialized)
      : type_(type),
        extent_(extent),
        channels_(channels),
        bytes_(static_cast<std::size_t>(extent.Pixels()) * channels * PixelSize(type)) {}
  using Storage = std::vector<std::uint8_t, DefaultInitAllocator<std::uint8_t>>;
  // Adopts pixels already received (an upload's buffer); `bytes` must hold exactly
  // extent.Pixels() * channels * PixelSize(type) bytes.
  Image(PixelType type, Extent extent, int channels, Storage bytes)
      : type_(type), extent_(extent), channels_(channels), bytes_(std::move(bytes)) {}

  PixelType type() const { return type_; }
  const Extent& extent() const { return extent_; }
  int channels() const { return channels_; }
  std::size_t size_bytes() const { return bytes_.size(); }
  std::uint8_t* bytes() { return bytes_.data(); }
  const std::uint8_t* bytes() const { return bytes_.data(); }
  Storage& storage() { return bytes_; }
  const Storage& storage() const { return bytes_; }

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
  Storage bytes_;
};

}  // namespace cuimg

#endif  // CUIMG_COMMON_IMAGE_H_
