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
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/io/voxel_spacing.h"
#include "cuimg/common/image.h"

namespace cuimg {

struct DicomSeries {
  // I16, or F32 when a slice's RescaleSlope or RescaleIntercept is not an integer; width =
  // Columns, height = Rows, depth = slices (frames) in order along the slice normal.
  Image volume;
  // volume's extent, kept for the writer when the pixels have been moved out.
  Extent extent;
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
};

// Reads the DICOM files directly in `directory` (not recursing; files that are not DICOM images,
// such as a DICOMDIR, are skipped), or the one file `directory` names (a one-file series, which
// must be a DICOM image: INVALID_ARGUMENT otherwise). Each file is grayscale, 8 or 16 bits
// allocated, in any transfer syntax GDCM decodes; a multi-frame (enhanced CT/MR) file gives one
// slice per frame, with geometry and rescale from its per-frame or shared functional groups. All
// slices must share one SeriesInstanceUID (or be narrowed to `options.series_uid`;
// FAILED_PRECONDITION naming two of the UIDs otherwise; NOT_FOUND listing those present when none
// is options.series_uid), Rows, Columns, PixelSpacing and ImageOrientationPatient, and have
// distinct ImagePositionPatient, and hold at most options.max_voxels voxels (INVALID_ARGUMENT
// otherwise). An uncompressed file too small for its pixels is DATA_LOSS, found before anything is
// allocated; a compressed stream that does not decode is DATA_LOSS naming the file. Slices are
// sorted by position projected on the normal (row direction x column direction), ascending. A
// series of one slice may lack PixelSpacing (spacing 0: unknown), ImageOrientationPatient and
// ImagePositionPatient (geometry unknown), as secondary captures and NM images do: only elements in
// millimetres need the spacing. A series of several slices without orientation or positions is
// INVALID_ARGUMENT (they cannot be ordered); without PixelSpacing it reads with spacing 0.
//
// Each stored value s (BitsStored bits, signed or not per PixelRepresentation, bits above masked)
// becomes s * RescaleSlope + RescaleIntercept (1 and 0 when absent). When every slice's slope and
// intercept are integers the volume is I16 and a value outside [-32768, 32767] is OUT_OF_RANGE
// naming the slice (cuimg does not clamp: clamped voxels would be written back as if measured).
// Otherwise (PET, many MR series) the volume is F32: a fractional slope such as 0.001 would round
// every value to a few integers, so nothing is rounded; F32 holds s * slope exactly enough that
// each stored value is recovered by the writer.
absl::StatusOr<DicomSeries> ReadDicomSeries(const std::string& directory,
                                            const DicomReadOptions& options = {});

struct DicomWriteOptions {
  // What produced the series (DerivationDescription, appended to SeriesDescription).
  std::string derivation = "cuimg";
  // The organisation's UID root for the new SeriesInstanceUID and SOPInstanceUIDs; DCMTK's
  // site root when empty. At most 40 characters of digits and dots, so generated UIDs fit 64.
  std::string uid_root = {};
};

// Writes `result` (of source.extent; I16, or F32 from an F32 source) as a new series in
// `directory` (created; ALREADY_EXISTS if it holds files, so two series never mix; the slices are
// written into a sibling folder that is renamed into place at the end, atomic_output.h, so an
// error leaves no folder): one file per
// slice, slice_NNNN.dcm, each a copy of the source slice's dataset with a new SeriesInstanceUID
// (one for the series) and SOPInstanceUID, ImageType DERIVED\SECONDARY, the SeriesNumber + 1000,
// options.derivation as DerivationDescription and appended to SeriesDescription, a
// SourceImageSequence item naming the source slice (its SOP class and instance UIDs), and signed
// 16-bit pixels. I16 results are stored as they are with RescaleSlope 1, RescaleIntercept 0, so
// every range fits. F32 results keep the source slice's own slope and intercept when every value
// of the slice, quantised to that step, fits 16 bits: a morphology result then gets back exactly
// the source's stored values; otherwise (INVALID_ARGUMENT for NaN or infinity) the slice gets
// RescaleIntercept 0 and RescaleSlope max|v| / 32767, a step of 1/65534 of its range. Geometry,
// frame of reference, patient and study tags are kept. Explicit VR little endian. A multi-frame
// source is FAILED_PRECONDITION (write .nii, .nrrd or .npy instead). Returns the new
// SeriesInstanceUID.
absl::StatusOr<std::string> WriteDicomSeries(const DicomSeries& source, const ImageView& result,
                                             const std::string& directory,
                                             const DicomWriteOptions& options);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_DICOM_SERIES_H_
