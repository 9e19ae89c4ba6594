#include "client/io/volume_file.h"

#include <cstdio>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/io/image_file.h"
#include "client/io/npy_file.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {
namespace {

bool HasExtension(const std::string& path, std::initializer_list<const char*> extensions) {
  const std::string lower = absl::AsciiStrToLower(path);
  for (const char* e : extensions) {
    if (absl::EndsWith(lower, e)) return true;
  }
  return false;
}

}  // namespace

bool IsDicomSeriesPath(const std::string& path) {
  std::error_code ec;
  return absl::EndsWith(path, "/") || std::filesystem::is_directory(path, ec) ||
         !std::filesystem::path(path).has_extension() || HasExtension(path, {".dcm"});
}

absl::StatusOr<VolumeFile> ReadVolumeFile(const std::string& path,
                                          const VolumeReadOptions& options) {
  VolumeFile out;
  if (IsDicomSeriesPath(path)) {
    DicomReadOptions dicom_options;
    dicom_options.series_uid = options.series_uid;
    dicom_options.frame_syntaxes = options.frame_syntaxes;
    CUIMG_ASSIGN_OR_RETURN(DicomSeries series, ReadDicomSeries(path, dicom_options));
    out.spacing = series.spacing;
    out.geometry = series.geometry;
    out.image = std::move(series.volume);
    out.dicom = std::make_shared<DicomSeries>(std::move(series));
    return out;
  }
  if (HasExtension(path, {".npy"})) {
    CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadFileBytes(path));
    CUIMG_ASSIGN_OR_RETURN(out.image, ParseNpy(bytes, path));
    return out;
  }
  if (HasExtension(path, {".nrrd", ".nhdr"})) {
    CUIMG_ASSIGN_OR_RETURN(NrrdVolume nrrd, ReadNrrd(path));
    out.image = std::move(nrrd.image);
    out.spacing = nrrd.spacing;
    out.geometry = nrrd.geometry;
    return out;
  }
  if (HasExtension(path, {".nii", ".nii.gz"})) {
    CUIMG_ASSIGN_OR_RETURN(NiftiVolume nifti, ReadNifti(path));
    out.image = std::move(nifti.image);
    out.spacing = nifti.spacing;
    out.geometry = nifti.geometry;
    out.nifti = std::make_shared<NiftiTransforms>(nifti.transforms);
    return out;
  }
  if (!HasExtension(path, {".png", ".jpg", ".jpeg", ".tif", ".tiff"})) {
    // The path names no format cuimg reads: a usage error (ExitCodeForReadError), not bad data.
    return absl::FailedPreconditionError(absl::StrCat(
        path,
        ": unknown input extension (cuimg reads .png, .jpg, .tif, .npy, .nrrd, .nhdr, .nii, "
        ".nii.gz, a DICOM file (.dcm, or no extension: a one-file series) or a directory of "
        "DICOM files)"));
  }
  CUIMG_ASSIGN_OR_RETURN(out.image, ReadImageFile(path));
  return out;
}

absl::Status WriteVolumeFile(const std::string& path, const ImageView& image,
                             const VoxelSpacing& spacing, const VolumeFile& source,
                             const VolumeWriteOptions& options) {
  if (HasExtension(path, {".dcm"})) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": a DICOM output is a series folder, one file per slice (name a folder: OUT/)"));
  }
  if (IsDicomSeriesPath(path)) {
    if (source.dicom == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          path,
          ": a DICOM series is written only from a DICOM series input (its tags are copied)"));
    }
    DicomWriteOptions dicom_options;
    dicom_options.derivation = options.derivation;
    dicom_options.uid_root = options.uid_root;
    dicom_options.frames_syntax = options.frames_syntax;
    dicom_options.frames = options.frames;
    return WriteDicomSeries(*source.dicom, image, path, dicom_options).status();
  }
  if (HasExtension(path, {".npy"})) {
    absl::StatusOr<std::vector<std::uint8_t>> bytes = EncodeNpy(image);
    if (!bytes.ok())
      return absl::Status(bytes.status().code(),
                          absl::StrCat(path, ": ", bytes.status().message()));
    return WriteFileBytes(path, *bytes);
  }
  if (HasExtension(path, {".nrrd"})) {
    return WriteNrrd(path, image, spacing, options.nrrd_encoding, source.geometry);
  }
  if (HasExtension(path, {".nii", ".nii.gz"})) {
    return WriteNifti(path, image, spacing, source.geometry, source.nifti.get());
  }
  if (!HasExtension(path, {".png", ".jpg", ".jpeg", ".tif", ".tiff"})) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": unknown output extension (use .png, .jpg, .tif, .npy, .nrrd, .nii, .nii.gz, or a "
        "directory for a DICOM series)"));
  }
  return WriteImageFile(path, image);
}

}  // namespace cuimg
