// The per-file half of the DICOM reader contract (docs/design.md, "The DICOM reader contract"),
// which client/python/cuimg/dicom.py follows check for check: which pixel modules cuimg reads,
// and each frame's geometry and rescale. Every refusal names the file and the attribute at fault
// ("FILE: KEYWORD: detail") and carries an ErrorReason; none uses a code the CLI reads as a usage
// error (NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION), so each one exits 3.
#ifndef CUIMG_CLIENT_IO_DICOM_HEADER_H_
#define CUIMG_CLIENT_IO_DICOM_HEADER_H_

#include <dcmtk/config/osconfig.h>  // first, as DCMTK requires
#include <dcmtk/dcmdata/dctk.h>

#include <array>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/error.h"

namespace cuimg {

// A refusal of `file`: `code` (not OK), message "<file>: <keyword>: <detail>" (just "<file>:
// <detail>" for an empty keyword), `reason` as its payload.
absl::Status DicomRefusal(absl::StatusCode code, ErrorReason reason, const std::string& file,
                          absl::string_view keyword, absl::string_view detail);

struct PixelModule {
  int bits_allocated = 16;
  int bits_stored = 16;
  bool is_signed = false;
  int frames = 1;
};

// The pixel module of `ds` (a file's dataset), checked in this order, each refusal naming its
// attribute: SamplesPerPixel (absent: 1) must be 1 and PhotometricInterpretation MONOCHROME1 or
// MONOCHROME2 (UNIMPLEMENTED); BitsAllocated 8 or 16 (UNIMPLEMENTED); BitsStored (absent:
// BitsAllocated) in [1, BitsAllocated] (INVALID_ARGUMENT); HighBit (absent: BitsStored - 1) equal
// to BitsStored - 1 (UNIMPLEMENTED: the values would not be in the low bits);
// PixelRepresentation present (INVALID_ARGUMENT) and 0 or 1 (INVALID_ARGUMENT); NumberOfFrames
// (absent: 1) in [1, 65536] (INVALID_ARGUMENT); no ModalityLUTSequence (UNIMPLEMENTED: cuimg
// applies RescaleSlope and RescaleIntercept only). MONOCHROME1 values are read as stored: its
// inversion is for display, and a derived series keeps the attribute.
absl::StatusOr<PixelModule> ReadPixelModule(DcmItem* ds, const std::string& file);

// One frame's geometry and rescale. An attribute is looked up in the frame's item of the
// PerFrameFunctionalGroupsSequence, then the SharedFunctionalGroupsSequence, then the dataset's
// top level; an absent or empty one, or one with the wrong number of values, is nullopt.
struct FrameHeader {
  std::optional<std::array<double, 2>> pixel_spacing;  // row spacing (y), column spacing (x)
  std::optional<std::array<double, 6>> orientation;    // ImageOrientationPatient
  std::optional<std::array<double, 3>> position;       // ImagePositionPatient
  double slope = 1;                                    // RescaleSlope (absent: 1)
  double intercept = 0;                                // RescaleIntercept (absent: 0)
};

// Frame `frame` (from 0) of `ds`. INVALID_ARGUMENT naming RescaleSlope when the slope is 0 or
// either value is not finite.
absl::StatusOr<FrameHeader> ReadFrameHeader(DcmItem* ds, const std::string& file, int frame);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_DICOM_HEADER_H_
