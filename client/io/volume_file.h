// Images and volumes for the subcommands that take either (morphology, gradient), chosen by the
// path: a directory (or a name without an extension) is a DICOM series, a .dcm file (or a file
// without an extension) a one-file DICOM series, .npy a NumPy array,
// .nrrd/.nhdr NRRD, .nii/.nii.gz NIfTI, anything else an image file (PNG, JPEG, TIFF; multi-page
// TIFF is a volume). Spacing and patient-space placement travel with the pixels where the format
// has them (NRRD, NIfTI, DICOM), so results keep the input's voxel size and position.
#ifndef CUIMG_CLIENT_IO_VOLUME_FILE_H_
#define CUIMG_CLIENT_IO_VOLUME_FILE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/io/dicom_series.h"
#include "client/io/nifti_file.h"
#include "client/io/nrrd_file.h"
#include "client/io/voxel_spacing.h"
#include "cuimg/common/image.h"

namespace cuimg {

struct VolumeFile {
  Image image;
  VoxelSpacing spacing;
  // Where the voxels lie in patient space, when the format says (DICOM, NIfTI, NRRD with space).
  PatientGeometry geometry;
  // Set when the input was a DICOM series: a DICOM output copies its tags.
  std::shared_ptr<const DicomSeries> dicom;
  // Set when the input was NIfTI: a NIfTI output keeps its qform and sform.
  std::shared_ptr<const NiftiTransforms> nifti;
};

// True for paths read or written as DICOM series: an existing directory, a path ending in '/',
// a name without an extension (a directory to be created, or a DICOM file), or a .dcm file
// (read as a one-file series; refused as an output, which is a folder).
bool IsDicomSeriesPath(const std::string& path);

struct VolumeReadOptions {
  // A DICOM directory holding several series: the SeriesInstanceUID to read.
  std::string series_uid = {};
  // A DICOM series: the transfer syntaxes it may be kept in as stored frames
  // (DicomReadOptions::frame_syntaxes; `image` is then empty and `dicom->stored` holds them).
  std::vector<std::string> frame_syntaxes = {};
};
// Reads `path` by the rules above. Errors keep the reader's status code: NOT_FOUND for a path that
// is not there, INVALID_ARGUMENT/DATA_LOSS/OUT_OF_RANGE/UNIMPLEMENTED for contents cuimg cannot
// read (ExitCodeForReadError in client/connection.h tells the exit codes apart).
absl::StatusOr<VolumeFile> ReadVolumeFile(const std::string& path,
                                          const VolumeReadOptions& options = {});

struct VolumeWriteOptions {
  NrrdEncoding nrrd_encoding = NrrdEncoding::kRaw;
  // DICOM: what produced the series (DerivationDescription), e.g. "cuimg morphology dilate".
  std::string derivation = "cuimg";
  // DICOM: the organisation's UID root for new UIDs (DCMTK's site root when empty).
  std::string uid_root = {};
  // DICOM: the slices as encoded frames (DicomWriteOptions::frames_syntax and frames).
  std::string frames_syntax = {};
  std::vector<std::string> frames = {};
};
// By the same rules as ReadVolumeFile. A DICOM output needs `source.dicom` (FAILED_PRECONDITION
// otherwise: cuimg writes a derived series, never a series from scratch). `source` is where the
// output's placement comes from: every volume written by a command passes its input here (the
// NIfTI transforms and units, the patient geometry NRRD and NIfTI write, the DICOM tags), so
// every format keeps what the input said. Every writer is atomic (atomic_output.h): on an error
// nothing is left under `path`.
absl::Status WriteVolumeFile(const std::string& path, const ImageView& image,
                             const VoxelSpacing& spacing, const VolumeFile& source,
                             const VolumeWriteOptions& options);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_VOLUME_FILE_H_
