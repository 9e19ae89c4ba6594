// NIfTI-1 and NIfTI-2 volumes (.nii, .nii.gz) through nifticlib's nifti2_io (libnifti2-dev),
// which reads and writes both versions.
#ifndef CUIMG_CLIENT_IO_NIFTI_FILE_H_
#define CUIMG_CLIENT_IO_NIFTI_FILE_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "client/io/voxel_spacing.h"
#include "cuimg/common/image.h"

namespace cuimg {

// The header fields that place a NIfTI volume, kept as read so a derived file carries them
// unchanged (the quaternion and the affine rows, not a matrix recomputed from them).
struct NiftiTransforms {
  int version = 1;  // 1 or 2
  int qform_code = 0;
  int sform_code = 0;
  double quatern_b = 0, quatern_c = 0, quatern_d = 0;
  double qoffset_x = 0, qoffset_y = 0, qoffset_z = 0;
  double qfac = 1;
  std::array<std::array<double, 4>, 3> srow{};
  // xyzt_units' halves (NIFTI_UNITS_*): a derived file keeps them, its pixdim in those units.
  int xyz_units = 0;
  int time_units = 0;
};

struct NiftiVolume {
  Image image;
  // pixdim[1..3] (absolute values) in millimetres: scaled from metres or micrometres when
  // xyz_units says so, taken as millimetres when it says nothing (NIFTI_UNITS_UNKNOWN).
  VoxelSpacing spacing;
  // From the sform when sform_code > 0, else the qform when qform_code > 0, turned from NIfTI's
  // RAS to DICOM's LPS; unknown otherwise.
  PatientGeometry geometry;
  NiftiTransforms transforms;
};

// Reads a NIfTI-1 or NIfTI-2 file of 2 or 3 dimensions (a 4th or more of size 1 allowed). Data
// types: uint8, int16, uint16 and float32 as they are; int8 widened to i16 (exact); others
// UNIMPLEMENTED naming the type. scl_slope/scl_inter (ignored when the slope is 0 or not finite,
// or 1 and 0; INVALID_ARGUMENT for a valid slope with an intercept not finite)
// are applied as DICOM's rescale is: integers give I16 (OUT_OF_RANGE for a value outside i16,
// never clamped), a fractional slope or intercept gives F32 (never rounded; OUT_OF_RANGE where a
// scaled value exceeds float32). Float NaN and infinities come through as stored (nifticlib's
// loader would make them 0, so the data is read here). More than
// `max_voxels` voxels is INVALID_ARGUMENT, checked from the header before the data is read; an
// uncompressed file shorter than its header says is DATA_LOSS. NOT_FOUND for a missing file,
// INVALID_ARGUMENT for one nifticlib does not take as NIfTI, a dim[0] outside [1, 7] or an xform
// code outside [0, 5].
absl::StatusOr<NiftiVolume> ReadNifti(const std::string& path,
                                      std::int64_t max_voxels = std::int64_t{1} << 30);

// Writes `image` (one channel of u8, i16, u16 or f32; INVALID_ARGUMENT otherwise) to `path`
// (.nii, or .nii.gz gzip-compressed) with scl_slope 0 (values as they are) and pixdim from
// `spacing` (1 where unknown). Placement: `keep` (a NIfTI source's) is copied unchanged, version
// and xyzt_units included (pixdim then in the kept spatial unit; millimetres otherwise); else
// `geometry`, when known, becomes both the sform and the qform (code 1, scanner anatomical; LPS
// turned to RAS); else both codes are 0. NIfTI-2 when `keep` is NIfTI-2 or an extent exceeds
// NIfTI-1's 32767; NIfTI-1 otherwise. The header is read back after writing: a write nifticlib
// could not finish is DATA_LOSS. Through WriteAtomically (atomic_output.h): the file is whole or
// not there.
absl::Status WriteNifti(const std::string& path, const ImageView& image,
                        const VoxelSpacing& spacing, const PatientGeometry& geometry,
                        const NiftiTransforms* keep);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_NIFTI_FILE_H_
