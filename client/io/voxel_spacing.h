// Physical voxel size and patient-space placement carried alongside a volume between files and the
// API (Image.spacing).
#ifndef CUIMG_CLIENT_IO_VOXEL_SPACING_H_
#define CUIMG_CLIENT_IO_VOXEL_SPACING_H_

#include <array>

namespace cuimg {

// Millimetres; 0 means unknown (the API's convention).
struct VoxelSpacing {
  double x_mm = 0;
  double y_mm = 0;
  double z_mm = 0;

  bool Known() const { return x_mm > 0 || y_mm > 0 || z_mm > 0; }
};

// Where voxel (i, j, k) lies in DICOM's patient space (LPS, millimetres):
// origin + i * spacing.x * axes[0] + j * spacing.y * axes[1] + k * spacing.z * axes[2].
// axes are unit vectors; NIfTI's RAS is this with x and y negated.
struct PatientGeometry {
  bool known = false;
  std::array<double, 3> origin{};
  std::array<std::array<double, 3>, 3> axes{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};
};

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_VOXEL_SPACING_H_
