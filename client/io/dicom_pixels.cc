#include "client/io/dicom_pixels.h"

#include <gdcmImageReader.h>
#include <gdcmTrace.h>

#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace cuimg {

absl::StatusOr<DicomPixels> DecodeDicomPixels(const std::string& file, int columns, int rows,
                                              int frames) {
  static std::once_flag quiet;
  std::call_once(quiet, [] {
    gdcm::Trace::SetDebug(false);
    gdcm::Trace::SetWarning(false);
    gdcm::Trace::SetError(false);
  });
  gdcm::ImageReader reader;
  reader.SetFileName(file.c_str());
  if (!reader.Read()) {
    return absl::DataLossError(absl::StrCat(file, ": GDCM cannot read its pixel data"));
  }
  const gdcm::Image& image = reader.GetImage();
  const gdcm::PixelFormat& format = image.GetPixelFormat();
  const std::string syntax = image.GetTransferSyntax().GetString() != nullptr
                                 ? image.GetTransferSyntax().GetString()
                                 : "unknown transfer syntax";
  const int bytes = format.GetBitsAllocated() / 8;
  if (format.GetSamplesPerPixel() != 1 || (bytes != 1 && bytes != 2) ||
      format.GetBitsAllocated() % 8 != 0) {
    return absl::UnimplementedError(absl::StrCat(
        file, ": ", format.GetSamplesPerPixel(), " samples of ", format.GetBitsAllocated(),
        " bits allocated (cuimg reads grayscale 8- or 16-bit pixels)"));
  }
  const unsigned got_frames = image.GetNumberOfDimensions() > 2 ? image.GetDimension(2) : 1;
  if (static_cast<int>(image.GetDimension(0)) != columns ||
      static_cast<int>(image.GetDimension(1)) != rows || static_cast<int>(got_frames) != frames) {
    return absl::InvalidArgumentError(absl::StrCat(
        file, ": GDCM sees ", image.GetDimension(0), "x", image.GetDimension(1), "x", got_frames,
        " pixels, the header ", columns, "x", rows, "x", frames));
  }
  const std::size_t count = std::size_t(columns) * rows * frames;
  if (image.GetBufferLength() != count * bytes) {
    return absl::DataLossError(absl::StrCat(file, ": pixel buffer of ", image.GetBufferLength(),
                                            " bytes for ", count, " values (", syntax, ")"));
  }
  std::vector<char> buffer(count * bytes);
  if (!image.GetBuffer(buffer.data())) {
    return absl::DataLossError(
        absl::StrCat(file, ": pixel data does not decode (", syntax, ")"));
  }
  DicomPixels out;
  out.columns = columns;
  out.rows = rows;
  out.frames = frames;
  out.stored.resize(count);
  if (bytes == 2) {
    std::memcpy(out.stored.data(), buffer.data(), count * 2);  // GDCM decodes to host order
  } else {
    for (std::size_t i = 0; i < count; ++i) out.stored[i] = static_cast<std::uint8_t>(buffer[i]);
  }
  return out;
}

}  // namespace cuimg
