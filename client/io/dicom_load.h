// Loads a DICOM file with DCMTK's dcmdata, deflated explicit VR little endian included, without
// letting a forged element length allocate memory the file does not hold.
#ifndef CUIMG_CLIENT_IO_DICOM_LOAD_H_
#define CUIMG_CLIENT_IO_DICOM_LOAD_H_

#include <dcmtk/config/osconfig.h>  // first, as DCMTK requires
#include <dcmtk/dcmdata/dctk.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace cuimg {

struct DicomLoad {
  // The bytes the dataset occupies: the file less its preamble and meta header, or for a
  // deflated file its inflated size (what uncompressed pixel data must fit in).
  std::uintmax_t dataset_bytes = 0;
  bool deflated = false;
  // A DICOM Part 10 file: "DICM" after the 128-byte preamble. Set before DCMTK reads anything,
  // so it is known when the load fails.
  bool part10 = false;
};

// Loads `file` into `format` (values over 4 KB stay in the file until used), up to the pixel data
// when `until_pixel_data`. DCMTK reads a deflated dataset from a stream it cannot seek, so it would
// allocate each element's declared length before finding the stream short (1.4 GB from a 2 KB
// file, found by dicom_series_fuzzer): a deflated file is inflated here to a temporary file (at
// most `max_inflated_bytes`, OUT_OF_RANGE beyond; DATA_LOSS for a stream that does not inflate or
// values it does not hold) and loaded from it whole as explicit VR little endian, without its meta
// header (DCMTK makes a new one when the dataset is written). Not DICOM, or refused by DCMTK:
// INVALID_ARGUMENT with DCMTK's reason; NOT_FOUND when the file does not open.
absl::Status LoadDicomFile(const std::string& file, bool until_pixel_data,
                           std::uintmax_t max_inflated_bytes, DcmFileFormat* format,
                           DicomLoad* load);

// What a LoadDicomFile error says after the file's path, which it puts first (for a message that
// names the file once).
std::string LoadFailureReason(const absl::Status& status, const std::string& file);

// Silences DCMTK's own log (its warnings can quote element values; patient fields must never
// reach a log). Call before using DCMTK; thread-safe, and only the first call does anything.
void QuietDcmtkLog();

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_DICOM_LOAD_H_
