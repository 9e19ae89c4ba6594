// NRRD files through Teem's nrrd library (libteem-dev): one-channel 2D images and 3D volumes of
// u8, u16, i16 or f32, with the voxel spacing. Reads every encoding Teem knows (raw, gzip,
// bzip2, ascii, hex) and detached headers (.nhdr); writes an attached header, raw or gzip.
#ifndef CUIMG_CLIENT_IO_NRRD_FILE_H_
#define CUIMG_CLIENT_IO_NRRD_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "client/io/voxel_spacing.h"
#include "cuimg/common/image.h"

namespace cuimg {

struct NrrdVolume {
  Image image;
  // From "spacings" or the norms of "space directions"; 0 where the file does not say.
  VoxelSpacing spacing;
  // From "space" (left-posterior-superior or right-anterior-superior), "space directions" and
  // "space origin" when the file has all three; unknown otherwise.
  PatientGeometry geometry;
};

// INVALID_ARGUMENT for a file whose first line is not a NRRD magic (NRRD0001-NRRD0005), other
// element types, ranks or more than 2^30 voxels (checked from the header, before the data is
// read); NOT_FOUND or DATA_LOSS with Teem's message otherwise.
absl::StatusOr<NrrdVolume> ReadNrrd(const std::string& path);

enum class NrrdEncoding { kRaw, kGzip };
// With `geometry` known: "space: left-posterior-superior", "space directions" (each axis scaled
// by its spacing, 1 where unknown) and "space origin"; else "spacings" when `spacing` is known
// (non-zero). Through WriteAtomically (atomic_output.h): whole or not at all.
absl::Status WriteNrrd(const std::string& path, const ImageView& image, const VoxelSpacing& spacing,
                       NrrdEncoding encoding, const PatientGeometry& geometry = {});

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_NRRD_FILE_H_
