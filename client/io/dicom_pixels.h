// A DICOM object's pixel data whatever its transfer syntax: native (implicit/explicit VR, either
// endianness; deflated explicit VR through client/io/dicom_load.h) read by DCMTK, and encapsulated
// data decoded by GDCM (libgdcm-dev): RLE, JPEG baseline, extended and lossless (processes 1, 2/4,
// 14 and 14 SV1), JPEG-LS lossless and near-lossless (CharLS) and JPEG 2000 lossless and lossy
// (OpenJPEG). GDCM rather than DCMTK's codecs: DCMTK has no JPEG 2000 decoder, and GDCM is also
// what the Python client decodes with (pydicom's gdcm handler, Debian python3-gdcm), so both read
// the same stored values from the same file. GDCM gets a DCMTK-written copy of the pixel module
// only (its parser aborts on some malformed files), written to and removed from the temporary
// directory, and decodes in a child process (its codecs abort on some malformed streams), the
// values shared back.
#ifndef CUIMG_CLIENT_IO_DICOM_PIXELS_H_
#define CUIMG_CLIENT_IO_DICOM_PIXELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cuimg {

struct DicomPixels {
  int columns = 0;
  int rows = 0;
  int frames = 0;
  // Stored values as decoded, frame after frame, each widened to 16 bits with the bits above
  // BitsStored left as they were (the caller masks and sign-extends).
  std::vector<std::uint16_t> stored;
};

// Decodes every frame of `file`, a one-sample (grayscale) object of 8 or 16 bits allocated, whose
// Rows x Columns x NumberOfFrames must equal `expected` columns x rows x frames (the header the
// caller checked: INVALID_ARGUMENT otherwise). A file GDCM cannot parse, or whose compressed
// stream does not decode to that many values, is DATA_LOSS naming the file and its transfer
// syntax, as is a stream that stops GDCM's decoder (the child dies); GDCM's own logging is off
// (it can quote element values).
absl::StatusOr<DicomPixels> DecodeDicomPixels(const std::string& file, int columns, int rows,
                                              int frames);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_DICOM_PIXELS_H_
