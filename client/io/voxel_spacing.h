// Physical voxel size carried alongside a volume between files and the API (Image.spacing).
#ifndef CUIMG_CLIENT_IO_VOXEL_SPACING_H_
#define CUIMG_CLIENT_IO_VOXEL_SPACING_H_

namespace cuimg {

// Millimetres; 0 means unknown (the API's convention).
struct VoxelSpacing {
  double x_mm = 0;
  double y_mm = 0;
  double z_mm = 0;

  bool Known() const { return x_mm > 0 || y_mm > 0 || z_mm > 0; }
};

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_VOXEL_SPACING_H_
