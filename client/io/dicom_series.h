// DICOM image series in and out through DCMTK's dcmdata (libdcmtk-dev), pixels decoded by GDCM
// (client/io/dicom_pixels.h, every transfer syntax a PACS sends): a directory of single-frame
// slices or enhanced (multi-frame) objects becomes one volume in rescaled units (Hounsfield units
// for CT), and a processed volume goes back out as a new series that carries the source slices'
// tags.
//
// Patient and study fields are carried from input to output unchanged and never printed: errors
// name files, slice indices and UIDs only.
#ifndef CUIMG_CLIENT_IO_DICOM_SERIES_H_
#define CUIMG_CLIENT_IO_DICOM_SERIES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/io/dicom_frames.h"
#include "client/io/voxel_spacing.h"
#include "cuimg/common/image.h"

namespace cuimg {

struct DicomSeries {
  // I16, or F32 when a slice's RescaleSlope or RescaleIntercept is not an integer; width =
  // Columns, height = Rows, depth = slices (frames) in order along the slice normal.
  Image volume;
  // volume's extent and type, kept for the writer when the pixels have been moved out (or were
  // never decoded: see `stored`).
  Extent extent;
  PixelType type = PixelType::kI16;
  // Set when the series was kept as its stored frames (DicomReadOptions::frame_syntaxes): `volume`
  // is then empty, and a server decodes the frames to what `volume` would have held.
  std::optional<StoredFrames> stored;
  // x: column spacing, y: row spacing (PixelSpacing), z: the median gap between slice positions.
  VoxelSpacing spacing;
  // The first slice's ImagePositionPatient, the row and column directions and the normal.
  PatientGeometry geometry;
  // Per volume slice: the file it came from and its frame there (0 for single-frame files).
  std::vector<std::string> files;
  std::vector<int> frames;
  // Per volume slice: the RescaleSlope and RescaleIntercept it was read with.
  std::vector<double> slopes;
  std::vector<double> intercepts;
  // True when a file held more than one frame (the writer then refuses: see WriteDicomSeries).
  bool multi_frame = false;
  // Largest |gap - median gap| in mm: non-zero when the slices are not evenly spaced.
  double gap_deviation_mm = 0;
};

struct DicomReadOptions {
  // When set, only this SeriesInstanceUID's files are read (a directory of several series).
  std::string series_uid = {};
  // The most voxels the volume may hold (INVALID_ARGUMENT beyond).
  std::int64_t max_voxels = std::int64_t{1} << 30;
  // Transfer syntax UIDs the caller sends as stored frames (a server's decodable syntaxes). When
  // every file of the series is single-frame, encapsulated in one of them
  // (IsEncapsulatedFrameSyntax) and of one pixel module (bits, sign, photometric interpretation),
  // the series is not decoded: DicomSeries::stored holds its frames. Otherwise (empty: always) it
  // is decoded as below.
  std::vector<std::string> frame_syntaxes = {};
};

// Reads the series at `path`: a directory's DICOM Part 10 files (not recursing; files without
// the "DICM" prefix, and files without Rows such as a DICOMDIR or a report, are skipped), or one
// file, by the reader contract (docs/design.md, "The DICOM reader contract"; client/python/cuimg/
// dicom.py follows it check for check). Each file is grayscale (MONOCHROME1/2), 8 or 16 bits
// allocated, in any transfer syntax GDCM decodes; a multi-frame (enhanced CT/MR) file gives one
// slice per frame, with geometry and rescale from its per-frame or shared functional groups
// (client/io/dicom_header.h has the per-file checks and their order). A file cuimg does not read
// is refused naming it and the attribute at fault ("FILE: KEYWORD: detail", an ErrorReason
// payload) with a code ExitCodeForReadError maps to 3: INVALID_ARGUMENT, UNIMPLEMENTED,
// DATA_LOSS (pixel data short, or a stream that does not decode, or a file that does not parse
// although Rows was read), OUT_OF_RANGE. All slices must share one SeriesInstanceUID (or be
// narrowed to `options.series_uid`; FAILED_PRECONDITION naming two of the UIDs otherwise;
// NOT_FOUND listing those present when none is options.series_uid; NOT_FOUND when no image is
// there), Rows and Columns, and PixelSpacing and ImageOrientationPatient where given, and hold
// at most options.max_voxels voxels (INVALID_ARGUMENT otherwise). A series of several slices
// needs PixelSpacing, ImageOrientationPatient and ImagePositionPatient on each and distinct
// positions; it is sorted by position projected on the normal (row direction x column
// direction), ascending. A single slice may lack them: geometry is then unknown, and spacing
// what PixelSpacing gives (0 otherwise). An uncompressed file too small for its pixels is
// refused before anything is allocated.
//
// Each stored value s (the decoded sample's low BitsStored bits, sign-extended when
// PixelRepresentation is 1, whatever the codestream says of its own sign) becomes s *
// RescaleSlope + RescaleIntercept (1 and 0 when absent). When every slice's slope and intercept
// are integers the volume is I16 and a value outside [-32768, 32767] is OUT_OF_RANGE naming the
// slice (cuimg does not clamp: clamped voxels would be written back as if measured). Otherwise
// (PET, many MR series) the volume is F32: a fractional slope such as 0.001 would round every
// value to a few integers, so nothing is rounded; F32 holds s * slope exactly enough that each
// stored value is recovered by the writer.
//
// Kept as stored frames (options.frame_syntaxes), the series passes every check above except
// the decode and the range of rescaled values, which the server that decodes the frames applies
// by the same rule.
absl::StatusOr<DicomSeries> ReadDicomSeries(const std::string& path,
                                            const DicomReadOptions& options = {});

struct DicomWriteOptions {
  // What produced the series (DerivationDescription, appended to SeriesDescription).
  std::string derivation = "cuimg";
  // The organisation's UID root for the new SeriesInstanceUID and SOPInstanceUIDs; DCMTK's
  // site root when empty. At most 40 characters of digits and dots, so generated UIDs fit 64.
  std::string uid_root = {};
  // When not empty, the result's slices as frames of this encapsulated transfer syntax
  // (IsEncapsulatedFrameSyntax), one per slice in z order, each decoding to the slice's signed
  // 16-bit values: they are written as they are (the result's pixels are not read).
  std::string frames_syntax = {};
  std::vector<std::string> frames = {};
};

// Writes `result` (of source.extent; I16, or F32 from an F32 source) as a new series in
// `directory` (created; ALREADY_EXISTS if it holds files, so two series never mix): one file per
// slice, slice_NNNN.dcm, each a copy of the source slice's dataset with a new SeriesInstanceUID
// (one for the series) and SOPInstanceUID, ImageType DERIVED\SECONDARY, the SeriesNumber + 1000,
// options.derivation as DerivationDescription and appended to SeriesDescription, a
// SourceImageSequence item naming the source slice (its SOP class and instance UIDs), and signed
// 16-bit pixels. Attributes describing the source's stored values (Smallest/Largest pixel values,
// padding) are dropped, and so is every top-level sequence holding pixel data at any depth (the
// IconImageSequence: it depicts the source, and an encapsulated one cannot be written
// uncompressed); a dataset DCMTK still could not write uncompressed is INTERNAL before a byte of
// that slice is written. I16 results are stored as they are with RescaleSlope 1, RescaleIntercept
// 0, so every range fits. F32 results keep the source slice's own slope and intercept when every
// value of the slice, quantised to that step, fits 16 bits: a morphology result then gets back
// exactly the source's stored values; otherwise (INVALID_ARGUMENT for NaN or infinity) the slice
// gets RescaleIntercept 0 and RescaleSlope max|v| / 32767, a step of 1/65534 of its range.
// Geometry, frame of reference, patient and study tags are kept. Explicit VR little endian. A
// multi-frame source is FAILED_PRECONDITION (write .nii, .nrrd or .npy instead). With
// options.frames (an I16 result; `result.data` may be null) each slice holds its frame
// encapsulated under options.frames_syntax (dicom_frames.h's SaveEncapsulated), RescaleSlope 1,
// RescaleIntercept 0; INVALID_ARGUMENT when their count is not the depth. Returns the new
// SeriesInstanceUID.
absl::StatusOr<std::string> WriteDicomSeries(const DicomSeries& source, const ImageView& result,
                                             const std::string& directory,
                                             const DicomWriteOptions& options);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_DICOM_SERIES_H_
