// JPEG through TurboJPEG (libjpeg-turbo), which reports errors by return value, not longjmp.
#include <turbojpeg.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec_internal.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

struct TjDeleter {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

// A warning is refused like an error: libjpeg goes on past corrupt or missing data (a truncated
// file's missing rows come out grey), and such pixels must never pass for the image. Accurate DCT
// (OpenCV's and libjpeg's default); a progressive file can repeat scans without end (a CPU bomb).
constexpr int kDecodeFlags = TJFLAG_ACCURATEDCT | TJFLAG_LIMITSCANS | TJFLAG_STOPONWARNING;

// A four-component JPEG (CMYK, or YCCK which libjpeg turns into CMYK) as BGR, as OpenCV's imread
// gives it: each colour is K - (255 - C) * K / 256 (integer division), C and K being the samples
// as stored. That is the conversion for Adobe's convention, which stores ink inverted (255 = no
// ink) and which Photoshop and nearly every CMYK JPEG follow; a file of uninverted ink comes out
// as it does in OpenCV.
absl::Status DecodeCmyk(void* tj, absl::Span<const std::uint8_t> bytes, Image& image) {
  const std::int64_t pixels = image.extent().Pixels();
  const int width = static_cast<int>(image.extent().width);
  const int height = static_cast<int>(image.extent().height);
  std::vector<std::uint8_t> cmyk(static_cast<std::size_t>(pixels) * 4);
  if (tjDecompress2(tj, bytes.data(), static_cast<unsigned long>(bytes.size()), cmyk.data(), width,
                    width * 4, height, TJPF_CMYK, kDecodeFlags) != 0) {
    return InvalidFieldError(ErrorReason::kCorruptEncodedData, "",
                             absl::StrCat("corrupt JPEG: ", tjGetErrorStr2(tj)));
  }
  std::uint8_t* bgr = image.bytes();
  for (std::int64_t i = 0; i < pixels; ++i) {
    const int k = cmyk[4 * i + 3];
    for (int c = 0; c < 3; ++c) {
      // C, M, Y give R, G, B: stored as B, G, R.
      bgr[3 * i + 2 - c] = static_cast<std::uint8_t>(k - (((255 - cmyk[4 * i + c]) * k) >> 8));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ImageView> ProbeJpeg(absl::Span<const std::uint8_t> bytes) {
  TjHandle tj(tjInitDecompress());
  if (!tj) return absl::ResourceExhaustedError("tjInitDecompress failed");
  int width = 0;
  int height = 0;
  int subsampling = 0;
  int colorspace = 0;
  if (tjDecompressHeader3(tj.get(), bytes.data(), static_cast<unsigned long>(bytes.size()), &width,
                          &height, &subsampling, &colorspace) != 0) {
    return InvalidFieldError(ErrorReason::kCorruptEncodedData, "",
                             absl::StrCat("corrupt JPEG: ", tjGetErrorStr2(tj.get())));
  }
  // A header cut short can read as 0x0 without an error.
  if (width < 1 || height < 1) {
    return InvalidFieldError(ErrorReason::kCorruptEncodedData, "",
                             absl::StrCat("corrupt JPEG: the header says ", width, "x", height));
  }
  return ImageView{PixelType::kU8, Extent{width, height, 1}, colorspace == TJCS_GRAY ? 1 : 3,
                   nullptr};
}

absl::StatusOr<Image> DecodeJpeg(absl::Span<const std::uint8_t> bytes, const DecodeLimits& limits,
                                 DecodeThreads* threads) {
  TjHandle tj(tjInitDecompress());
  if (!tj) return absl::ResourceExhaustedError("tjInitDecompress failed");
  int width = 0;
  int height = 0;
  int subsampling = 0;
  int colorspace = 0;
  if (tjDecompressHeader3(tj.get(), bytes.data(), static_cast<unsigned long>(bytes.size()), &width,
                          &height, &subsampling, &colorspace) != 0) {
    return InvalidFieldError(ErrorReason::kCorruptEncodedData, "",
                             absl::StrCat("corrupt JPEG: ", tjGetErrorStr2(tj.get())));
  }
  if (width < 1 || height < 1) {
    return InvalidFieldError(ErrorReason::kCorruptEncodedData, "",
                             absl::StrCat("corrupt JPEG: the header says ", width, "x", height));
  }
  if (width > limits.max_side || height > limits.max_side ||
      static_cast<std::int64_t>(width) * height > limits.max_pixels) {
    return MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kLimitExceeded, "",
                     absl::StrCat("JPEG image ", width, "x", height, " exceeds the limits (",
                                  limits.max_pixels, " pixels, ", limits.max_side, " per side)"));
  }
  const bool gray = colorspace == TJCS_GRAY;
  const int channels = gray ? 1 : 3;
  Image image(PixelType::kU8, Extent{width, height, 1}, channels);
  // libjpeg converts neither CMYK nor YCCK to BGR itself ("Unsupported color conversion").
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
    if (absl::Status s = DecodeCmyk(tj.get(), bytes, image); !s.ok()) return s;
    return image;
  }
  if (threads != nullptr && DecodeJpegInStrips(bytes, *threads, image)) return image;
  if (tjDecompress2(tj.get(), bytes.data(), static_cast<unsigned long>(bytes.size()), image.bytes(),
                    width, width * channels, height, gray ? TJPF_GRAY : TJPF_BGR,
                    kDecodeFlags) != 0) {
    return InvalidFieldError(ErrorReason::kCorruptEncodedData, "",
                             absl::StrCat("corrupt JPEG: ", tjGetErrorStr2(tj.get())));
  }
  return image;
}

absl::StatusOr<std::vector<std::uint8_t>> EncodeJpeg(const ImageView& image, int quality) {
  if (image.type != PixelType::kU8 || image.extent.depth != 1 ||
      (image.channels != 1 && image.channels != 3)) {
    return absl::InvalidArgumentError("JPEG needs a 2D U8 image with 1 or 3 channels");
  }
  if (quality < 1 || quality > 100)
    return absl::InvalidArgumentError("JPEG quality: not in [1, 100]");
  TjHandle tj(tjInitCompress());
  if (!tj) return absl::ResourceExhaustedError("tjInitCompress failed");
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const bool gray = image.channels == 1;
  const int width = static_cast<int>(image.extent.width);
  const int height = static_cast<int>(image.extent.height);
  if (tjCompress2(tj.get(), static_cast<const unsigned char*>(image.data), width,
                  width * image.channels, height, gray ? TJPF_GRAY : TJPF_BGR, &buffer, &size,
                  gray ? TJSAMP_GRAY : TJSAMP_420, quality, TJFLAG_ACCURATEDCT) != 0) {
    tjFree(buffer);
    return absl::InternalError(absl::StrCat("JPEG encoding failed: ", tjGetErrorStr2(tj.get())));
  }
  std::vector<std::uint8_t> out(buffer, buffer + size);
  tjFree(buffer);
  return out;
}

}  // namespace cuimg
