#include "client/io/tiff_file.h"

#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/io/atomic_output.h"

namespace cuimg {
namespace {

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using TiffPtr = std::unique_ptr<TIFF, TiffCloser>;

// WriteTiff into `path` as it is (the caller picks a temporary name).
absl::Status WriteTiffTo(const std::string& path, const ImageView& image) {
  if (image.channels != 1)
    return absl::InvalidArgumentError(absl::StrCat(path, ": TIFF output needs 1 channel"));
  TiffPtr owner(TIFFOpen(path.c_str(), "w"));
  if (!owner) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create"));
  TIFF* tif = owner.get();
  const int bits = static_cast<int>(PixelSize(image.type)) * 8;
  const int format = image.type == PixelType::kF32   ? SAMPLEFORMAT_IEEEFP
                     : image.type == PixelType::kI16 ? SAMPLEFORMAT_INT
                                                     : SAMPLEFORMAT_UINT;
  const std::size_t row = static_cast<std::size_t>(image.extent.width) * PixelSize(image.type);
  for (std::int64_t z = 0; z < image.extent.depth; ++z) {
    TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(image.extent.width));
    TIFFSetField(tif, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(image.extent.height));
    TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, bits);
    TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, format);
    TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(tif, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tif, TIFFTAG_COMPRESSION, COMPRESSION_NONE);
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(tif, 0));
    if (image.extent.depth > 1) {
      TIFFSetField(tif, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
      TIFFSetField(tif, TIFFTAG_PAGENUMBER, static_cast<std::uint16_t>(z),
                   static_cast<std::uint16_t>(image.extent.depth));
    }
    auto* base = static_cast<std::uint8_t*>(image.data) +
                 static_cast<std::size_t>(z) * row * image.extent.height;
    for (std::int64_t y = 0; y < image.extent.height; ++y) {
      if (TIFFWriteScanline(tif, base + y * row, static_cast<std::uint32_t>(y), 0) < 0) {
        return absl::DataLossError(absl::StrCat(path, ": write failed"));
      }
    }
    if (image.extent.depth > 1 && !TIFFWriteDirectory(tif)) {
      return absl::DataLossError(absl::StrCat(path, ": write failed"));
    }
  }
  // TIFFClose writes what is buffered but cannot report a failure.
  if (!TIFFFlush(tif)) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteTiff(const std::string& path, const ImageView& image) {
  return WriteAtomically(path, OutputKind::kFile,
                         [&](const std::string& temp) { return WriteTiffTo(temp, image); });
}

namespace {

// libtiff reads from memory through these callbacks (TIFFClientOpen).
struct MemoryFile {
  absl::Span<const std::uint8_t> bytes;
  toff_t pos = 0;
};

tsize_t MemoryRead(thandle_t h, tdata_t out, tsize_t n) {
  auto* f = static_cast<MemoryFile*>(h);
  if (n < 0 || f->pos >= f->bytes.size()) return 0;
  const std::size_t count =
      std::min<std::size_t>(static_cast<std::size_t>(n), f->bytes.size() - f->pos);
  std::memcpy(out, f->bytes.data() + f->pos, count);
  f->pos += count;
  return static_cast<tsize_t>(count);
}
tsize_t MemoryWrite(thandle_t, tdata_t, tsize_t) { return -1; }
toff_t MemorySeek(thandle_t h, toff_t offset, int whence) {
  auto* f = static_cast<MemoryFile*>(h);
  const toff_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? f->pos : f->bytes.size();
  f->pos = base + offset;
  return f->pos;
}
int MemoryClose(thandle_t) { return 0; }
toff_t MemorySize(thandle_t h) { return static_cast<MemoryFile*>(h)->bytes.size(); }
int MemoryMap(thandle_t, tdata_t*, toff_t*) { return 0; }
void MemoryUnmap(thandle_t, tdata_t, toff_t) {}

// Malformed files make libtiff print warnings and errors to stderr; the status says enough.
void QuietHandler(const char*, const char*, va_list) {}

absl::StatusOr<Image> ReadPages(TIFF* tif, const std::string& path, std::int64_t max_pixels) {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::uint16_t bits = 0;
  std::uint16_t samples = 1;
  std::uint16_t format = SAMPLEFORMAT_UINT;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &samples);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  PixelType type;
  if (samples != 1) return absl::InvalidArgumentError(absl::StrCat(path, ": only 1-channel TIFF"));
  if (bits == 8 && format == SAMPLEFORMAT_UINT)
    type = PixelType::kU8;
  else if (bits == 16 && format == SAMPLEFORMAT_UINT)
    type = PixelType::kU16;
  else if (bits == 16 && format == SAMPLEFORMAT_INT)
    type = PixelType::kI16;
  else if (bits == 32 && format == SAMPLEFORMAT_IEEEFP)
    type = PixelType::kF32;
  else if (bits == 32 && format == SAMPLEFORMAT_UINT)
    type = PixelType::kU32;  // label images
  else
    return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported TIFF sample format"));
  const std::int64_t depth = TIFFNumberOfDirectories(tif);
  if (width == 0 || height == 0 || depth == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": empty TIFF"));
  }
  // w * h fits in 64 bits unsigned; w * h * d > max  <=>  w * h > floor(max / d) (no overflow).
  if (std::uint64_t{width} * height >
      static_cast<std::uint64_t>(std::max<std::int64_t>(max_pixels, 0)) /
          static_cast<std::uint64_t>(depth)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", width, "x", height, "x", depth,
                                                   " pixels exceed the limit of ", max_pixels));
  }
  Image image(type, Extent{width, height, depth}, 1);
  const std::size_t row = static_cast<std::size_t>(width) * PixelSize(type);
  if (static_cast<std::size_t>(TIFFScanlineSize(tif)) != row) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported TIFF layout"));
  }
  for (std::int64_t z = 0; z < depth; ++z) {
    if (!TIFFSetDirectory(tif, static_cast<tdir_t>(z))) {
      return absl::DataLossError(absl::StrCat(path, ": page ", z, " unreadable"));
    }
    std::uint32_t w = 0;
    std::uint32_t h = 0;
    TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
    if (w != width || h != height) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": pages differ in size"));
    }
    // libtiff writes a whole scanline of this page's layout into the row.
    if (static_cast<std::size_t>(TIFFScanlineSize(tif)) != row) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": pages differ in layout"));
    }
    for (std::uint32_t y = 0; y < height; ++y) {
      std::uint8_t* dst = image.bytes() + (static_cast<std::size_t>(z) * height + y) * row;
      if (TIFFReadScanline(tif, dst, y, 0) < 0) {
        return absl::DataLossError(absl::StrCat(path, ": read failed"));
      }
    }
  }
  return image;
}

}  // namespace

absl::StatusOr<Image> ReadTiff(const std::string& path, std::int64_t max_pixels) {
  TIFFSetWarningHandler(QuietHandler);
  TIFFSetErrorHandler(QuietHandler);
  TiffPtr tif(TIFFOpen(path.c_str(), "r"));
  if (!tif) return absl::NotFoundError(absl::StrCat(path, ": cannot open as TIFF"));
  return ReadPages(tif.get(), path, max_pixels);
}

absl::StatusOr<Image> ReadTiffBytes(absl::Span<const std::uint8_t> bytes, const std::string& name,
                                    std::int64_t max_pixels) {
  TIFFSetWarningHandler(QuietHandler);
  TIFFSetErrorHandler(QuietHandler);
  MemoryFile file{bytes, 0};
  TiffPtr tif(TIFFClientOpen(name.c_str(), "rm", &file, MemoryRead, MemoryWrite, MemorySeek,
                             MemoryClose, MemorySize, MemoryMap, MemoryUnmap));
  if (!tif) return absl::InvalidArgumentError(absl::StrCat(name, ": not a TIFF"));
  return ReadPages(tif.get(), name, max_pixels);
}

}  // namespace cuimg
