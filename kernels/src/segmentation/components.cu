#include "segmentation/components.h"

#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "segmentation/region_stats.h"

namespace cuimg::seg {
namespace {

template <typename T, Connectivity C>
absl::Status Launch(const SetSpec& set, const Geometry& g, const void* d_in,
                    std::uint32_t* d_labels, cudaStream_t stream, const LabelPhaseMark& mark,
                    std::uint32_t* d_local_roots) {
  const std::uint32_t tiles =
      g.tiles_x * g.tiles_y * ((g.depth + TileShape<C>::kZ - 1) / TileShape<C>::kZ);
  LocalComponentsKernel<T, C><<<tiles, kTileThreads, 0, stream>>>(
      static_cast<const T*>(d_in), MakeForeground<T>(set.range), d_labels, g, d_local_roots);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "LocalComponentsKernel");
  if (mark) mark("local");
  if (tiles > 1) {
    MergeTilesKernel<T, C><<<tiles, kTileThreads, 0, stream>>>(
        static_cast<const T*>(d_in), MakeForeground<T>(set.range), d_labels, g);
    CUIMG_CUDA_CHECK_LAUNCH(stream, "MergeTilesKernel");
  }
  if (mark) mark("merge");
  return absl::OkStatus();
}

template <typename T>
absl::Status LaunchFor(const SetSpec& set, const Geometry& g, Connectivity c, const void* d_in,
                       std::uint32_t* d_labels, cudaStream_t stream, const LabelPhaseMark& mark,
                       std::uint32_t* d_local_roots) {
  switch (c) {
    case Connectivity::k8:
      return Launch<T, Connectivity::k8>(set, g, d_in, d_labels, stream, mark, d_local_roots);
    case Connectivity::k6:
      return Launch<T, Connectivity::k6>(set, g, d_in, d_labels, stream, mark, d_local_roots);
    case Connectivity::k18:
      return Launch<T, Connectivity::k18>(set, g, d_in, d_labels, stream, mark, d_local_roots);
    case Connectivity::k26:
      return Launch<T, Connectivity::k26>(set, g, d_in, d_labels, stream, mark, d_local_roots);
    case Connectivity::kDefault:
    case Connectivity::k4:
      break;
  }
  return Launch<T, Connectivity::k4>(set, g, d_in, d_labels, stream, mark, d_local_roots);
}

}  // namespace

Geometry MakeGeometry(const Extent& extent, Connectivity connectivity) {
  const bool volume = IsVolume(connectivity);
  const std::int64_t tile_y =
      volume ? TileShape<Connectivity::k6>::kY : TileShape<Connectivity::k4>::kY;
  Geometry g;
  g.width = static_cast<std::uint32_t>(extent.width);
  g.height = static_cast<std::uint32_t>(extent.height);
  g.depth = static_cast<std::uint32_t>(extent.depth);
  g.tiles_x = static_cast<std::uint32_t>((extent.width + 31) / 32);
  g.tiles_y = static_cast<std::uint32_t>((extent.height + tile_y - 1) / tile_y);
  g.pixels = static_cast<std::uint32_t>(extent.Pixels());
  return g;
}

std::uint32_t TileCount(const Extent& extent, Connectivity connectivity) {
  const Geometry g = MakeGeometry(extent, connectivity);
  const std::uint32_t tile_z = IsVolume(connectivity) ? TileShape<Connectivity::k6>::kZ : 1;
  return g.tiles_x * g.tiles_y * ((g.depth + tile_z - 1) / tile_z);
}

std::uint32_t SegmentCount(const Extent& extent) {
  return static_cast<std::uint32_t>((extent.Pixels() + kSegmentPixels - 1) / kSegmentPixels);
}

absl::Status LaunchComponents(const SetSpec& set, const Extent& extent, Connectivity connectivity,
                              const void* d_in, std::uint32_t* d_labels, cudaStream_t stream,
                              const LabelPhaseMark& mark, std::uint32_t* d_local_roots) {
  const Geometry g = MakeGeometry(extent, connectivity);
  return VisitAnyPixelType(set.type, [&](auto tag) {
    return LaunchFor<decltype(tag)>(set, g, connectivity, d_in, d_labels, stream, mark,
                                    d_local_roots);
  });
}

absl::Status LaunchFlatten(const Extent& extent, bool count, std::uint32_t* d_labels,
                           std::uint32_t* d_segment_roots, cudaStream_t stream,
                           std::uint16_t* d_root_masks) {
  const std::uint32_t segments = SegmentCount(extent);
  const auto pixels = static_cast<std::uint32_t>(extent.Pixels());
  if (count) {
    FlattenKernel<true>
        <<<segments, kTileThreads, 0, stream>>>(d_labels, pixels, d_segment_roots, d_root_masks);
  } else {
    FlattenKernel<false>
        <<<segments, kTileThreads, 0, stream>>>(d_labels, pixels, d_segment_roots, d_root_masks);
  }
  CUIMG_CUDA_CHECK_LAUNCH(stream, "FlattenKernel");
  return absl::OkStatus();
}

}  // namespace cuimg::seg
