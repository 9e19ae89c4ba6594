#include "cuimg/codec/frame_encode.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frame_internal.h"

namespace cuimg {

int LosslessDecompositions(int width, int height) {
  int levels = 5;
  while (levels > 0 && (1 << levels) > std::min(width, height)) --levels;
  return levels;
}

FrameDescription LosslessFrameDescription(const ImageView& image) {
  FrameDescription d;
  d.rows = static_cast<int>(image.extent.height);
  d.columns = static_cast<int>(image.extent.width);
  d.bits_allocated = d.bits_stored = image.type == PixelType::kU8 ? 8 : 16;
  d.is_signed = image.type == PixelType::kI16;
  return d;
}

absl::StatusOr<std::vector<std::uint8_t>> EncodeLosslessFrame(FrameSyntax syntax,
                                                              const ImageView& image) {
  if (syntax != FrameSyntax::kHtj2kLossless && syntax != FrameSyntax::kJ2kLossless) {
    return absl::InvalidArgumentError(absl::StrCat(FrameSyntaxName(syntax),
                                                   " frames are not encoded (HTJ2K or JPEG 2000 "
                                                   "lossless are)"));
  }
  if (image.type == PixelType::kF32 || image.channels != 1 || image.extent.depth != 1 ||
      image.extent.width < 1 || image.extent.height < 1 || image.extent.width > 65535 ||
      image.extent.height > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", image.extent.width, "x", image.extent.height, "x", image.extent.depth,
                     " ", PixelTypeName(image.type), " image of ", image.channels,
                     " channels: frames are encoded from 2D one-channel u8, u16 or i16 images"));
  }
  return syntax == FrameSyntax::kHtj2kLossless ? EncodeHtj2kLossless(image)
                                               : EncodeJ2kLossless(image);
}

}  // namespace cuimg
