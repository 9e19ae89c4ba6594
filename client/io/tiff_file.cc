#include "client/io/tiff_file.h"

#include <tiffio.h>

#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"

namespace cuimg {
namespace {

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using TiffPtr = std::unique_ptr<TIFF, TiffCloser>;

}  // namespace

absl::Status WriteTiff(const std::string& path, const ImageView& image) {
  if (image.channels != 1) return absl::InvalidArgumentError(absl::StrCat(path, ": TIFF output needs 1 channel"));
  TiffPtr tif(TIFFOpen(path.c_str(), "w"));
  if (!tif) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create"));
  const int bits = static_cast<int>(PixelSize(image.type)) * 8;
  const int format = image.type == PixelType::kF32   ? SAMPLEFORMAT_IEEEFP
                     : image.type == PixelType::kI16 ? SAMPLEFORMAT_INT
                                                     : SAMPLEFORMAT_UINT;
  const std::size_t row = static_cast<std::size_t>(image.extent.width) * PixelSize(image.type);
  for (std::int64_t z = 0; z < image.extent.depth; ++z) {
    TIFFSetField(tif.get(), TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(image.extent.width));
    TIFFSetField(tif.get(), TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(image.extent.height));
    TIFFSetField(tif.get(), TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif.get(), TIFFTAG_BITSPERSAMPLE, bits);
    TIFFSetField(tif.get(), TIFFTAG_SAMPLEFORMAT, format);
    TIFFSetField(tif.get(), TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif.get(), TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tif.get(), TIFFTAG_COMPRESSION, COMPRESSION_NONE);
    TIFFSetField(tif.get(), TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(tif.get(), 0));
    if (image.extent.depth > 1) {
      TIFFSetField(tif.get(), TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
      TIFFSetField(tif.get(), TIFFTAG_PAGENUMBER, static_cast<std::uint16_t>(z),
                   static_cast<std::uint16_t>(image.extent.depth));
    }
    auto* base = static_cast<std::uint8_t*>(image.data) +
                 static_cast<std::size_t>(z) * row * image.extent.height;
    for (std::int64_t y = 0; y < image.extent.height; ++y) {
      if (TIFFWriteScanline(tif.get(), base + y * row, static_cast<std::uint32_t>(y), 0) < 0) {
        return absl::DataLossError(absl::StrCat(path, ": write failed"));
      }
    }
    if (image.extent.depth > 1 && !TIFFWriteDirectory(tif.get())) {
      return absl::DataLossError(absl::StrCat(path, ": write failed"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Image> ReadTiff(const std::string& path) {
  TiffPtr tif(TIFFOpen(path.c_str(), "r"));
  if (!tif) return absl::NotFoundError(absl::StrCat(path, ": cannot open as TIFF"));
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint16_t bits = 0;
  std::uint16_t samples = 1;
  std::uint16_t format = SAMPLEFORMAT_UINT;
  TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &height);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLESPERPIXEL, &samples);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLEFORMAT, &format);
  PixelType type;
  if (samples != 1) return absl::InvalidArgumentError(absl::StrCat(path, ": only 1-channel TIFF"));
  if (bits == 8 && format == SAMPLEFORMAT_UINT) type = PixelType::kU8;
  else if (bits == 16 && format == SAMPLEFORMAT_UINT) type = PixelType::kU16;
  else if (bits == 16 && format == SAMPLEFORMAT_INT) type = PixelType::kI16;
  else if (bits == 32 && format == SAMPLEFORMAT_IEEEFP) type = PixelType::kF32;
  else return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported TIFF sample format"));
  const std::int64_t depth = TIFFNumberOfDirectories(tif.get());
  Image image(type, Extent{width, height, depth}, 1);
  const std::size_t row = static_cast<std::size_t>(width) * PixelSize(type);
  if (static_cast<std::size_t>(TIFFScanlineSize(tif.get())) != row) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported TIFF layout"));
  }
  for (std::int64_t z = 0; z < depth; ++z) {
    if (!TIFFSetDirectory(tif.get(), static_cast<tdir_t>(z))) {
      return absl::DataLossError(absl::StrCat(path, ": page ", z, " unreadable"));
    }
    std::uint32_t w = 0;
    std::uint32_t h = 0;
    TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &h);
    if (w != width || h != height) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": pages differ in size"));
    }
    for (std::uint32_t y = 0; y < height; ++y) {
      std::uint8_t* dst = image.bytes() + (static_cast<std::size_t>(z) * height + y) * row;
      if (TIFFReadScanline(tif.get(), dst, y, 0) < 0) {
        return absl::DataLossError(absl::StrCat(path, ": read failed"));
      }
    }
  }
  return image;
}

}  // namespace cuimg
