// Images and volumes for the subcommands that take either (morphology, gradient), chosen by the
// path: a directory (or a name without an extension) is a DICOM series, .npy a NumPy array, .nrrd/.nhdr NRRD, anything else an
// image file (PNG, JPEG, TIFF; multi-page TIFF is a volume). Spacing travels with the pixels
// where the format has it (NRRD, DICOM), so results keep the input's voxel size.
#ifndef CUIMG_CLIENT_IO_VOLUME_FILE_H_
#define CUIMG_CLIENT_IO_VOLUME_FILE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/io/dicom_series.h"
#include "client/io/nrrd_file.h"
#include "client/io/voxel_spacing.h"
#include "cuimg/common/image.h"

namespace cuimg {

struct VolumeFile {
  Image image;
  VoxelSpacing spacing;
  // Set when the input was a DICOM series: a DICOM output copies its tags.
  std::shared_ptr<const DicomSeries> dicom;
};

// True for paths read or written as DICOM series: an existing directory, a path ending in '/',
// or a name without an extension (a directory to be created).
bool IsDicomSeriesPath(const std::string& path);

absl::StatusOr<VolumeFile> ReadVolumeFile(const std::string& path);

struct VolumeWriteOptions {
  NrrdEncoding nrrd_encoding = NrrdEncoding::kRaw;
  // DICOM: what produced the series (DerivationDescription), e.g. "cuimg morphology dilate".
  std::string derivation = "cuimg";
};
// By the same rules as ReadVolumeFile. A DICOM output needs `source.dicom` (FAILED_PRECONDITION
// otherwise: cuimg writes a derived series, never a series from scratch).
absl::Status WriteVolumeFile(const std::string& path, const ImageView& image,
                             const VoxelSpacing& spacing, const VolumeFile& source,
                             const VolumeWriteOptions& options);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_VOLUME_FILE_H_
