// The nested-rows passes (kernel in morphology_nested.cuh): the grid, strips and bands of a pass,
// and its launch with the element's column steps compiled in (morphology_nested_compiled.cu) or
// read at run time (here).
#include "morphology_nested.cuh"

#include <algorithm>
#include <cstdint>

#include "cuimg/common/status_macros.h"
#include "morphology_kernels.h"

namespace cuimg::internal {
namespace {

using nested::kColumnsPerLane;
using nested::kStripColumns;
using nested::LaunchCompiled;
using nested::LaunchKernel;
using nested::NestedParams;
using nested::RuntimeSteps;

// The run-time-steps kernel (column steps read from the parameters) at radius kR, a dilation or
// erosion per kDilate.
template <typename T, bool kDilate, int kR>
absl::Status LaunchRadius(const NestedParams<T>& p, cudaStream_t stream) {
  if (p.dz > 0) return LaunchKernel<T, kDilate, kR, 2, false, RuntimeSteps>(p, stream);
  if (p.point_dz > 0) return LaunchKernel<T, kDilate, kR, 1, true, RuntimeSteps>(p, stream);
  return LaunchKernel<T, kDilate, kR, 1, false, RuntimeSteps>(p, stream);
}

// LaunchRadius for a radius known only at run time (0..kNestedMaxRadius), as gradient.cu does.
template <typename T, bool kDilate>
absl::Status LaunchForRadius(const NestedParams<T>& p, int radius, cudaStream_t stream) {
  switch (radius) {
    case 0:
      return LaunchRadius<T, kDilate, 0>(p, stream);
    case 1:
      return LaunchRadius<T, kDilate, 1>(p, stream);
    case 2:
      return LaunchRadius<T, kDilate, 2>(p, stream);
    case 3:
      return LaunchRadius<T, kDilate, 3>(p, stream);
    case 4:
      return LaunchRadius<T, kDilate, 4>(p, stream);
    case 5:
      return LaunchRadius<T, kDilate, 5>(p, stream);
    case 6:
      return LaunchRadius<T, kDilate, 6>(p, stream);
    case 7:
      return LaunchRadius<T, kDilate, 7>(p, stream);
    default:
      return absl::InternalError("nested-rows radius out of range");
  }
}

}  // namespace

template <typename T>
absl::Status LaunchNestedPass(const T* in, T* out, const Extent& extent, const NestedPass& pass,
                              bool dilate, T border, cudaStream_t stream) {
  constexpr int P = LaneOps<T>::kPack;
  NestedParams<T> p{};
  p.in = in;
  p.out = out;
  p.width = static_cast<int>(extent.width);
  p.height = static_cast<int>(extent.height);
  p.depth = static_cast<int>(extent.depth);
  int planes = 0;
  if (P == 1) {  // one slice per plane
    p.plane_rows = p.height;
    p.slice_step = 1;
    planes = p.depth;
  } else if (p.depth > 1) {  // slices z, z+1
    p.plane_rows = p.height;
    p.slice_step = 2;
    p.lane_slice = 1;
    planes = (p.depth + 1) / 2;
  } else {  // rows y, y + ceil(height / 2) of the one slice
    p.plane_rows = (p.height + 1) / 2;
    p.lane_rows = p.plane_rows;
    planes = 1;
  }
  p.dz = pass.dz;
  p.point_dz = pass.point_dz;
  const int u0 = pass.half_width[0];
  p.halo = (u0 + kColumnsPerLane - 1) / kColumnsPerLane * kColumnsPerLane;
  p.strip_width = kStripColumns - 2 * p.halo;
  if (p.strip_width <= 0 || pass.radius < 0 || pass.radius > kNestedMaxRadius) {
    return absl::InternalError("nested-rows pass outside the kernel's limits");
  }
  p.strips = (p.width + p.strip_width - 1) / p.strip_width;
  // Bands of rows: enough warps for a few waves (132 SMs, 16 resident warps each), but 64 rows or
  // more so the 2R rows loaded only as halo stay a small share (512x512x300 u8, 9x9 disk: 32 rows
  // 164 us, 64 rows 157 us, 128 rows 171 us on an H200).
  constexpr long long kTargetWarps = 16384;
  p.band_rows = p.plane_rows;
  while (p.band_rows >= 128 && static_cast<long long>(p.strips) * planes *
                                       ((p.plane_rows + p.band_rows - 1) / p.band_rows) <
                                   kTargetWarps) {
    p.band_rows = (p.band_rows + 1) / 2;
  }
  p.bands = (p.plane_rows + p.band_rows - 1) / p.band_rows;
  p.warps = static_cast<long long>(p.strips) * p.bands * planes;
  NestedColumnSteps(pass, p.steps);
  p.border = border;
  // Vector accesses need every row to start 4-pixel aligned (and the buffers, as cudaMalloc's are).
  p.vector = p.width % 4 == 0 && reinterpret_cast<std::uintptr_t>(in) % (4 * sizeof(T)) == 0 &&
             reinterpret_cast<std::uintptr_t>(out) % (4 * sizeof(T)) == 0;
  if (pass.compiled >= 0 && p.vector) return LaunchCompiled<T>(p, pass.compiled, dilate, stream);
  return dilate ? LaunchForRadius<T, true>(p, pass.radius, stream)
                : LaunchForRadius<T, false>(p, pass.radius, stream);
}

template absl::Status LaunchNestedPass<std::uint8_t>(const std::uint8_t*, std::uint8_t*,
                                                     const Extent&, const NestedPass&, bool,
                                                     std::uint8_t, cudaStream_t);
template absl::Status LaunchNestedPass<std::uint16_t>(const std::uint16_t*, std::uint16_t*,
                                                      const Extent&, const NestedPass&, bool,
                                                      std::uint16_t, cudaStream_t);
template absl::Status LaunchNestedPass<std::int16_t>(const std::int16_t*, std::int16_t*,
                                                     const Extent&, const NestedPass&, bool,
                                                     std::int16_t, cudaStream_t);
template absl::Status LaunchNestedPass<float>(const float*, float*, const Extent&,
                                              const NestedPass&, bool, float, cudaStream_t);

}  // namespace cuimg::internal
