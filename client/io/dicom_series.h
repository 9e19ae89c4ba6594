// DICOM image series in and out through DCMTK's dcmdata (libdcmtk-dev): a directory of
// single-frame slices becomes one i16 volume in rescaled units (Hounsfield units for CT), and a
// processed volume goes back out as a new series that carries the source slices' tags.
//
// Patient and study fields are carried from input to output unchanged and never printed: errors
// name files and slice indices only.
#ifndef CUIMG_CLIENT_IO_DICOM_SERIES_H_
#define CUIMG_CLIENT_IO_DICOM_SERIES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/io/voxel_spacing.h"
#include "cuimg/common/image.h"

namespace cuimg {

struct DicomSeries {
  // I16, width = Columns, height = Rows, depth = slices in order along the slice normal.
  Image volume;
  // volume's extent, kept for the writer when the pixels have been moved out.
  Extent extent;
  // x: column spacing, y: row spacing (PixelSpacing), z: the median gap between slice positions.
  VoxelSpacing spacing;
  // The source slice files in volume order (the writer copies their tags).
  std::vector<std::string> files;
  // Largest |gap - median gap| in mm: non-zero when the slices are not evenly spaced.
  double gap_deviation_mm = 0;
};

// Reads every DICOM file under `directory` (not recursing; files that are not DICOM images, such
// as a DICOMDIR, are skipped). Each slice must be a single frame, 16 bits allocated, one sample,
// uncompressed (UNIMPLEMENTED otherwise: decompress with DCMTK's dcmdjpeg/dcmdjpls first); all
// must share one SeriesInstanceUID, Rows, Columns, PixelSpacing and ImageOrientationPatient, and
// have distinct ImagePositionPatient, and hold at most 2^30 voxels (INVALID_ARGUMENT otherwise); a
// file too small for its Rows x Columns is DATA_LOSS, found before the volume is allocated. Slices are sorted by position
// projected on the normal (row direction x column direction), ascending.
//
// Each stored value s (BitsStored bits, signed or not per PixelRepresentation) becomes
// round(s * RescaleSlope + RescaleIntercept) (slope 1 and intercept 0 when absent). A value that
// does not fit i16, [-32768, 32767], is OUT_OF_RANGE naming the slice: cuimg does not clamp
// silently, because clamped voxels would be written back as if measured.
absl::StatusOr<DicomSeries> ReadDicomSeries(const std::string& directory);

// Writes `result` (I16, of source.extent) as a new series in `directory` (created;
// ALREADY_EXISTS if it holds files, so two series never mix): one file per slice,
// slice_NNNN.dcm, each a copy of the source slice's dataset with a new SeriesInstanceUID (one for
// the series) and SOPInstanceUID, ImageType DERIVED\SECONDARY, the SeriesNumber + 1000,
// `derivation` as DerivationDescription and appended to SeriesDescription, and the pixels stored
// as they are: signed 16-bit, RescaleSlope 1, RescaleIntercept 0, so stored values are the
// rescaled units and every range fits. Geometry (positions, orientation, spacing, frame of
// reference), patient and study tags are kept. Explicit VR little endian. Returns the new
// SeriesInstanceUID.
absl::StatusOr<std::string> WriteDicomSeries(const DicomSeries& source, const ImageView& result,
                                             const std::string& directory,
                                             const std::string& derivation);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_DICOM_SERIES_H_
