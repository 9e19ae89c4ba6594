#include "cuimg/kernels/mask_steps.h"

#include <algorithm>

#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "segmentation/components.h"
#include "segmentation/region_stats.h"

namespace cuimg {
namespace {

using seg::kBackground;
using seg::kMark;

constexpr int kThreads = 256;
// The workspace: the largest root's key, then the links.
constexpr std::size_t kLinksOffset = 256;

std::uint32_t Blocks(std::int64_t items) {
  return static_cast<std::uint32_t>((items + kThreads - 1) / kThreads);
}

// The root of p after flattening: p itself when its entry is >= p.
__device__ __forceinline__ std::uint32_t FlatRoot(std::uint32_t v, std::uint32_t p) {
  return v >= p ? p : v;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    RemoveSmallOutputKernel(const T* in, T* out, const std::uint32_t* __restrict__ labels,
                            std::uint32_t pixels, std::uint32_t min_voxels) {
  const std::uint32_t p = blockIdx.x * kThreads + threadIdx.x;
  if (p >= pixels) return;
  const T value = in[p];
  const std::uint32_t v = labels[p];
  bool keep = true;
  if (v != kBackground) {
    const std::uint32_t r = FlatRoot(v, p);
    keep = labels[r] - r >= min_voxels;  // a root holds r + its voxels
  }
  out[p] = keep ? value : T{0};
}

// The largest component's root as one key: voxels in the high word, the complement of the root
// in the low word, so that the maximum is the largest component and, among equals, the first.
__global__ void __launch_bounds__(seg::kTileThreads)
    LargestRootKernel(const std::uint32_t* __restrict__ labels, std::uint32_t pixels,
                      unsigned long long* best) {
  const std::uint32_t base = blockIdx.x * seg::kSegmentPixels +
                             threadIdx.x * static_cast<std::uint32_t>(seg::kPixelsPerThread);
  unsigned long long key = 0;
  for (int i = 0; i < seg::kPixelsPerThread; ++i) {
    const std::uint32_t p = base + i;
    if (p >= pixels) break;
    const std::uint32_t v = labels[p];
    if (v == kBackground || v < p) continue;
    const unsigned long long k = (static_cast<unsigned long long>(v - p) << 32) | (~p);
    key = key > k ? key : k;
  }
  for (int i = 16; i > 0; i >>= 1) {
    const unsigned long long other = __shfl_down_sync(0xffffffffu, key, i);
    key = key > other ? key : other;
  }
  if ((threadIdx.x & 31) == 0 && key != 0) atomicMax(best, key);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    KeepLargestOutputKernel(const T* in, T* out, const std::uint32_t* __restrict__ labels,
                            std::uint32_t pixels, const unsigned long long* best) {
  const std::uint32_t p = blockIdx.x * kThreads + threadIdx.x;
  if (p >= pixels) return;
  const T value = in[p];
  const std::uint32_t v = labels[p];
  const std::uint32_t largest = ~static_cast<std::uint32_t>(*best & 0xffffffffu);
  out[p] = (v == kBackground || FlatRoot(v, p) == largest) ? value : T{0};
}

__device__ __forceinline__ void Seed(std::uint32_t* labels, std::uint32_t p) {
  if (seg::Ld(labels + p) == kBackground) return;
  const std::uint32_t r = seg::FindRoot(labels, p);
  if (!(seg::Ld(labels + r) & kMark)) atomicOr(labels + r, kMark);
}

template <typename M>
__global__ void __launch_bounds__(kThreads)
    SeedMarkerKernel(std::uint32_t* labels, const M* __restrict__ marker, std::uint32_t pixels) {
  const std::uint32_t p = blockIdx.x * kThreads + threadIdx.x;
  if (p >= pixels) return;
  const M m = marker[p];
  if (m != M{0} && m == m) Seed(labels, p);  // non-zero, not NaN
}

// Border pixels, some twice: per slice its first and last rows and columns, and in a volume the
// whole first and last slices.
__global__ void __launch_bounds__(kThreads)
    SeedBorderKernel(std::uint32_t* labels, seg::Geometry g, unsigned long long items) {
  const unsigned long long w = g.width, h = g.height;
  const unsigned long long ring = 2 * w + 2 * h;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(kThreads) + threadIdx.x;
       i < items; i += static_cast<unsigned long long>(gridDim.x) * kThreads) {
    unsigned long long x, y, z;
    if (i < ring * g.depth) {
      z = i / ring;
      const unsigned long long j = i % ring;
      if (j < 2 * w) {
        x = j % w;
        y = j < w ? 0 : h - 1;
      } else {
        y = (j - 2 * w) % h;
        x = j - 2 * w < h ? 0 : w - 1;
      }
    } else {
      const unsigned long long j = i - ring * g.depth;
      z = j < w * h ? 0 : g.depth - 1;
      x = j % w;
      y = (j / w) % h;
    }
    Seed(labels, static_cast<std::uint32_t>((z * h + y) * w + x));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    FillOutputKernel(const T* in, T* out, const std::uint32_t* __restrict__ labels,
                     std::uint32_t pixels, T fill) {
  const std::uint32_t p = blockIdx.x * kThreads + threadIdx.x;
  if (p >= pixels) return;
  const T value = in[p];
  const std::uint32_t v = labels[p];
  // Flattened (every pixel one link from its root) and read-only here: plain loads, which the
  // SM's cache serves, not L2 reads of one hot root line by every warp of a giant component.
  const bool keep = v == kBackground || (labels[FlatRoot(v, p)] & kMark) != 0;
  out[p] = keep ? value : fill;
}

std::uint32_t* Links(void* workspace) {
  return reinterpret_cast<std::uint32_t*>(static_cast<std::uint8_t*>(workspace) + kLinksOffset);
}

}  // namespace

std::size_t MaskStepWorkspaceBytes(const Extent& extent) {
  return kLinksOffset + (static_cast<std::size_t>(extent.Pixels()) * 4 + 255) / 256 * 256;
}

absl::Status RemoveSmallOnDevice(PixelType type, const Extent& extent, Connectivity connectivity,
                                 std::int64_t min_voxels, const void* d_in, void* d_out,
                                 void* workspace, cudaStream_t stream) {
  LabelSpec spec;
  spec.connectivity = connectivity;
  spec.min_voxels = min_voxels;
  CUIMG_RETURN_IF_ERROR(ValidateLabelSpec(spec, extent, ""));
  const auto pixels = static_cast<std::uint32_t>(extent.Pixels());
  if (min_voxels <= 1) {  // every component has a voxel: nothing to remove
    if (d_out == d_in) return absl::OkStatus();
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(d_out, d_in, pixels * PixelSize(type), cudaMemcpyDeviceToDevice, stream),
        "remove_small copy");
    return absl::OkStatus();
  }
  const Connectivity c = ResolveConnectivity(connectivity, extent);
  std::uint32_t* links = Links(workspace);
  CUIMG_RETURN_IF_ERROR(
      seg::LaunchComponents(seg::SetSpec{type, std::nullopt}, extent, c, d_in, links, stream));
  CUIMG_RETURN_IF_ERROR(seg::LaunchFlatten(extent, true, links, nullptr, stream));
  const auto min_count =
      static_cast<std::uint32_t>(min_voxels > kMaxLabelPixels ? kMaxLabelPixels : min_voxels);
  return VisitAnyPixelType(type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    RemoveSmallOutputKernel<T><<<Blocks(pixels), kThreads, 0, stream>>>(
        static_cast<const T*>(d_in), static_cast<T*>(d_out), links, pixels, min_count);
    CUIMG_CUDA_CHECK_LAUNCH(stream, "RemoveSmallOutputKernel");
    return absl::OkStatus();
  });
}

absl::Status KeepLargestOnDevice(PixelType type, const Extent& extent, Connectivity connectivity,
                                 const void* d_in, void* d_out, void* workspace,
                                 cudaStream_t stream) {
  LabelSpec spec;
  spec.connectivity = connectivity;
  CUIMG_RETURN_IF_ERROR(ValidateLabelSpec(spec, extent, ""));
  const Connectivity c = ResolveConnectivity(connectivity, extent);
  const auto pixels = static_cast<std::uint32_t>(extent.Pixels());
  auto* best = static_cast<unsigned long long*>(workspace);
  std::uint32_t* links = Links(workspace);
  CUIMG_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(best, 0, sizeof *best, stream), "keep_largest");
  CUIMG_RETURN_IF_ERROR(
      seg::LaunchComponents(seg::SetSpec{type, std::nullopt}, extent, c, d_in, links, stream));
  CUIMG_RETURN_IF_ERROR(seg::LaunchFlatten(extent, true, links, nullptr, stream));
  LargestRootKernel<<<seg::SegmentCount(extent), seg::kTileThreads, 0, stream>>>(links, pixels,
                                                                                 best);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "LargestRootKernel");
  return VisitAnyPixelType(type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    KeepLargestOutputKernel<T><<<Blocks(pixels), kThreads, 0, stream>>>(
        static_cast<const T*>(d_in), static_cast<T*>(d_out), links, pixels, best);
    CUIMG_CUDA_CHECK_LAUNCH(stream, "KeepLargestOutputKernel");
    return absl::OkStatus();
  });
}

absl::Status FillUnseededComponentsOnDevice(PixelType type, const Extent& extent,
                                            const SeededFillSpec& spec, const void* d_in,
                                            const void* d_marker, PixelType marker_type,
                                            void* d_out, void* workspace, cudaStream_t stream) {
  CUIMG_RETURN_IF_ERROR(ValidateSeededFillSpec(spec, extent, ""));
  if (spec.seed_marker && d_marker == nullptr) {
    return absl::InvalidArgumentError("d_marker: required to seed components by a marker");
  }
  const Connectivity c = ResolveConnectivity(spec.connectivity, extent);
  const auto pixels = static_cast<std::uint32_t>(extent.Pixels());
  std::uint32_t* links = Links(workspace);
  CUIMG_RETURN_IF_ERROR(
      seg::LaunchComponents(seg::SetSpec{type, spec.range}, extent, c, d_in, links, stream));
  // Every pixel one link from its root, so that seeding and the output find it in one step
  // whatever the shapes (a spiral's tiles may leave long chains of tile roots).
  CUIMG_RETURN_IF_ERROR(seg::LaunchFlatten(extent, false, links, nullptr, stream));
  if (spec.seed_border) {
    const seg::Geometry g = seg::MakeGeometry(extent, c);
    const unsigned long long items =
        static_cast<unsigned long long>(2 * extent.width + 2 * extent.height) * extent.depth +
        (extent.depth > 1 ? 2ull * extent.width * extent.height : 0ull);
    const std::int64_t blocks = std::min<std::int64_t>(Blocks(items), 65536);
    SeedBorderKernel<<<static_cast<std::uint32_t>(blocks), kThreads, 0, stream>>>(links, g, items);
    CUIMG_CUDA_CHECK_LAUNCH(stream, "SeedBorderKernel");
  }
  if (spec.seed_marker) {
    CUIMG_RETURN_IF_ERROR(VisitAnyPixelType(marker_type, [&](auto tag) -> absl::Status {
      using M = decltype(tag);
      SeedMarkerKernel<M>
          <<<Blocks(pixels), kThreads, 0, stream>>>(links, static_cast<const M*>(d_marker), pixels);
      CUIMG_CUDA_CHECK_LAUNCH(stream, "SeedMarkerKernel");
      return absl::OkStatus();
    }));
  }
  return VisitAnyPixelType(type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    FillOutputKernel<T><<<Blocks(pixels), kThreads, 0, stream>>>(
        static_cast<const T*>(d_in), static_cast<T*>(d_out), links, pixels,
        SaturateCast<T>(spec.fill));
    CUIMG_CUDA_CHECK_LAUNCH(stream, "FillOutputKernel");
    return absl::OkStatus();
  });
}

}  // namespace cuimg
