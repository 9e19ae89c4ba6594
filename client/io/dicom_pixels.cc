#include "client/io/dicom_pixels.h"

#include <gdcmImageReader.h>
#include <gdcmTrace.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "client/io/dicom_load.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;

// Removes the file when it goes out of scope.
class TempFile {
 public:
  TempFile() {
    static std::atomic<int> counter{0};
    path_ = (fs::temp_directory_path() /
             absl::StrCat("cuimg-pixels-", getpid(), "-", counter++, ".dcm"))
                .string();
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// GDCM's file parser asserts (aborts) or allocates an element's whole length on some malformed
// files that DCMTK reads or refuses cleanly (found by dicom_series_fuzzer). So DCMTK parses the
// file, and GDCM gets a well-formed copy holding only what decoding needs: the pixel module and
// the pixel data in the original transfer syntax (native data as explicit VR little endian).
absl::Status WritePixelModuleCopy(const std::string& file, const std::string& copy) {
  DcmFileFormat format;
  DicomLoad load;
  if (absl::Status s = LoadDicomFile(file, false, UINTMAX_MAX, &format, &load); !s.ok()) {
    return absl::DataLossError(s.message());
  }
  DcmDataset* ds = format.getDataset();
  const DcmTagKey keep[] = {DCM_SOPClassUID,       DCM_SamplesPerPixel, DCM_PhotometricInterpretation,
                            DCM_NumberOfFrames,    DCM_Rows,            DCM_Columns,
                            DCM_BitsAllocated,     DCM_BitsStored,      DCM_HighBit,
                            DCM_PixelRepresentation, DCM_PlanarConfiguration, DCM_PixelData};
  for (unsigned long i = ds->card(); i-- > 0;) {
    const DcmTagKey tag = ds->getElement(i)->getTag().getXTag();
    if (std::find(std::begin(keep), std::end(keep), tag) == std::end(keep)) {
      delete ds->remove(i);
    }
  }
  const DcmXfer original(ds->getOriginalXfer());
  const E_TransferSyntax xfer =
      original.isEncapsulated() ? original.getXfer() : EXS_LittleEndianExplicit;
  if (OFCondition c = format.saveFile(copy.c_str(), xfer, EET_ExplicitLength, EGL_recalcGL,
                                      EPD_noChange, 0, 0, EWM_createNewMeta);
      c.bad()) {
    return absl::DataLossError(absl::StrCat(file, ": pixel data does not copy (", c.text(), ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DicomPixels> DecodeDicomPixels(const std::string& file, int columns, int rows,
                                              int frames) {
  static std::once_flag quiet;
  std::call_once(quiet, [] {
    gdcm::Trace::SetDebug(false);
    gdcm::Trace::SetWarning(false);
    gdcm::Trace::SetError(false);
  });
  TempFile copy;
  if (absl::Status s = WritePixelModuleCopy(file, copy.path()); !s.ok()) return s;
  gdcm::ImageReader reader;
  reader.SetFileName(copy.path().c_str());
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
