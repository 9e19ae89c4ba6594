#include "cuimg/kernels/label.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "segmentation/components.h"
#include "segmentation/label_kernels.cuh"
#include "segmentation/region_stats.h"

namespace cuimg {

// Workspace layout (each part 256-byte aligned): the region count, the segments' counts and
// offsets, the root masks (the local pass's or the flatten pass's), then the region table's
// arrays.
struct LabelPlan::Impl {
  PixelType type = PixelType::kU8;
  Extent extent;
  LabelSpec spec;
  Connectivity connectivity = Connectivity::k4;
  std::optional<PixelType> intensity;
  std::uint32_t segments = 0;
  std::uint32_t capacity = 0;
  int launches = 0;
  std::size_t counts_offset = 0;
  std::size_t offsets_offset = 0;
  std::size_t masks_offset = 0;
  // Region table arrays: offsets from the workspace's start (0 = absent).
  std::size_t voxels = 0, first = 0, end = 0, coordinate_sum = 0;
  std::size_t max_key = 0, min_key_complement = 0, non_finite = 0, sum = 0;
  std::size_t bytes = 0;

  // Whether the numbering keeps components by their voxel counts (which a flatten pass sums).
  bool CountsVoxels() const { return spec.min_voxels > 1; }

  seg::RegionTable Table(void* workspace) const {
    auto* base = static_cast<std::uint8_t*>(workspace);
    auto at = [&](std::size_t offset) { return offset == 0 ? nullptr : base + offset; };
    seg::RegionTable t;
    t.capacity = capacity;
    t.voxels = reinterpret_cast<std::uint32_t*>(at(voxels));
    t.first = reinterpret_cast<std::int32_t*>(at(first));
    t.end = reinterpret_cast<std::int32_t*>(at(end));
    t.coordinate_sum = reinterpret_cast<unsigned long long*>(at(coordinate_sum));
    t.max_key = reinterpret_cast<std::uint32_t*>(at(max_key));
    t.min_key_complement = reinterpret_cast<std::uint32_t*>(at(min_key_complement));
    t.non_finite = reinterpret_cast<std::uint32_t*>(at(non_finite));
    t.sum = reinterpret_cast<unsigned long long*>(at(sum));
    return t;
  }
};

namespace {

std::size_t Align(std::size_t n) { return (n + 255) / 256 * 256; }

// The root masks: 16 bits for each thread of each segment (a bit a pixel).
std::size_t MasksBytes(std::uint32_t segments) {
  return std::size_t{segments} * seg::kTileThreads * sizeof(std::uint16_t);
}

// Launches the numbering and resolving passes for intensity type I (NoIntensity: none).
template <typename I>
absl::Status LaunchNumbering(const LabelPlan::Impl& plan, const void* d_intensity,
                             std::uint32_t* d_labels, void* workspace, cudaStream_t stream,
                             const LabelPhaseMark& mark) {
  const auto phase = [&](const char* name) {
    if (mark) mark(name);
  };
  auto* base = static_cast<std::uint8_t*>(workspace);
  auto* region_count = reinterpret_cast<std::uint32_t*>(base);
  auto* counts = reinterpret_cast<std::uint32_t*>(base + plan.counts_offset);
  auto* offsets = reinterpret_cast<std::uint32_t*>(base + plan.offsets_offset);
  auto* masks = reinterpret_cast<std::uint16_t*>(base + plan.masks_offset);
  const seg::RegionTable table = plan.Table(workspace);
  const bool counts_voxels = plan.CountsVoxels();
  // The least count a root keeps its component with (0: every root); counts beyond any
  // component's size keep nothing, and 2^31 - 1 is above every count.
  const std::uint32_t kept_from = !counts_voxels
                                      ? 0
                                      : static_cast<std::uint32_t>(std::min<std::int64_t>(
                                            plan.spec.min_voxels, kMaxLabelPixels));
  // The candidates for roots: without counts, the local roots LaunchComponents marked (a few a
  // tile; every pixel links to one), so that no pass visits every pixel before the last; with
  // counts, the roots of a flatten pass, which adds each component's voxels at its root.
  if (counts_voxels) {
    CUIMG_RETURN_IF_ERROR(seg::LaunchFlatten(plan.extent, true, d_labels, nullptr, stream, masks));
    phase("flatten");
  }
  const dim3 grid(plan.segments), block(seg::kTileThreads);
  seg::NumberRootsKernel<I, false>
      <<<grid, block, 0, stream>>>(d_labels, masks, kept_from, counts, offsets, table);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "NumberRootsKernel (count)");
  phase("count");
  // Up to kMaxSegmentsSummed segments each numbering block sums the counts before its own;
  // beyond, one block scans them first.
  const bool summed = plan.segments <= seg::kMaxSegmentsSummed;
  if (!summed) {
    seg::ScanSegmentsKernel<<<1, seg::kScanThreads, 0, stream>>>(counts, offsets, plan.segments,
                                                                 region_count);
    CUIMG_CUDA_CHECK_LAUNCH(stream, "ScanSegmentsKernel");
    phase("scan");
  }
  if (summed) {
    seg::NumberRootsKernel<I, true, true><<<grid, block, 0, stream>>>(
        d_labels, masks, kept_from, counts, offsets, table, region_count);
  } else {
    seg::NumberRootsKernel<I, true>
        <<<grid, block, 0, stream>>>(d_labels, masks, kept_from, counts, offsets, table);
  }
  CUIMG_CUDA_CHECK_LAUNCH(stream, "NumberRootsKernel");
  phase("number");
  if (!counts_voxels) {
    seg::NumberLocalRootsKernel<<<grid, block, 0, stream>>>(d_labels, masks);
    CUIMG_CUDA_CHECK_LAUNCH(stream, "NumberLocalRootsKernel");
    phase("local roots");
  }
  const seg::Geometry g = seg::MakeGeometry(plan.extent, plan.connectivity);
  const I* intensity = static_cast<const I*>(d_intensity);
  if (plan.extent.depth > 1) {
    seg::ResolveKernel<I, 3>
        <<<plan.segments, seg::kTileThreads, 0, stream>>>(d_labels, g, intensity, table);
  } else {
    seg::ResolveKernel<I, 2>
        <<<plan.segments, seg::kTileThreads, 0, stream>>>(d_labels, g, intensity, table);
  }
  CUIMG_CUDA_CHECK_LAUNCH(stream, "ResolveKernel");
  phase("resolve");
  return absl::OkStatus();
}

template <typename T>
absl::Status CopyBack(std::vector<T>* host, const void* device, std::size_t count,
                      cudaStream_t stream) {
  host->resize(count);
  if (count == 0) return absl::OkStatus();
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host->data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
      "copy region statistics");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LabelPlan> LabelPlan::Create(PixelType type, const Extent& extent,
                                            const LabelSpec& spec,
                                            std::optional<PixelType> intensity) {
  CUIMG_RETURN_IF_ERROR(ValidateLabelSpec(spec, extent, ""));
  auto impl = std::make_shared<Impl>();
  impl->type = type;
  impl->extent = extent;
  impl->spec = spec;
  impl->connectivity = ResolveConnectivity(spec.connectivity, extent);
  impl->intensity = intensity;
  impl->segments = seg::SegmentCount(extent);
  impl->capacity = static_cast<std::uint32_t>(MaxRegions(extent, impl->connectivity));
  const std::size_t rows = impl->capacity;
  std::size_t at = 256;  // the region count
  auto take = [&](std::size_t bytes) {
    const std::size_t offset = at;
    at += Align(bytes);
    return offset;
  };
  impl->counts_offset = take(impl->segments * sizeof(std::uint32_t));
  impl->offsets_offset = take(impl->segments * sizeof(std::uint32_t));
  impl->masks_offset = take(MasksBytes(impl->segments));
  impl->voxels = take(rows * 4);
  impl->first = take(3 * rows * 4);
  impl->end = take(3 * rows * 4);
  impl->coordinate_sum = take(3 * rows * 8);
  if (intensity.has_value()) {
    impl->max_key = take(rows * 4);
    impl->min_key_complement = take(rows * 4);
    if (*intensity == PixelType::kF32) {
      impl->non_finite = take(rows * 4);
      impl->sum = take(seg::kSumLimbs * rows * 8);
    } else {
      impl->sum = take(rows * 8);
    }
  }
  impl->bytes = at;
  // Local (+ merge), flatten or the local roots, count, (scan,) number, resolve.
  impl->launches = (seg::TileCount(extent, impl->connectivity) > 1 ? 2 : 1) + 4 +
                   (impl->segments > seg::kMaxSegmentsSummed ? 1 : 0);
  LabelPlan plan;
  plan.impl_ = std::move(impl);
  return plan;
}

std::size_t LabelPlan::WorkspaceBytes() const { return impl_->bytes; }
int LabelPlan::LaunchCount() const { return impl_->launches; }
PixelType LabelPlan::type() const { return impl_->type; }
const Extent& LabelPlan::extent() const { return impl_->extent; }
const LabelSpec& LabelPlan::spec() const { return impl_->spec; }

std::string LabelPlan::Describe() const {
  const Impl& p = *impl_;
  return absl::StrCat(p.extent.depth > 1 ? "3d tiles 32x8x8" : "2d tiles 32x32", " conn ",
                      static_cast<int>(p.connectivity), ", min_voxels ", p.spec.min_voxels,
                      ", intensity ",
                      p.intensity.has_value() ? PixelTypeName(*p.intensity) : "none");
}

const std::uint32_t* LabelPlan::DeviceRegionCount(const void* workspace) const {
  return static_cast<const std::uint32_t*>(workspace);
}

absl::Status LabelPlan::Run(const void* d_in, const void* d_intensity, std::uint32_t* d_labels,
                            void* workspace, cudaStream_t stream, const CancelToken& cancel,
                            const LabelPhaseMark& mark) const {
  CUIMG_RETURN_IF_ERROR(cancel.Check());
  const Impl& p = *impl_;
  if (p.intensity.has_value() != (d_intensity != nullptr)) {
    return absl::InvalidArgumentError(
        "d_intensity: must be given exactly when the plan has an intensity type");
  }
  seg::SetSpec set;
  set.type = p.type;
  set.range = p.spec.threshold;
  // Without min_voxels the local pass marks the local roots for the numbering (LaunchNumbering).
  std::uint32_t* local_roots = nullptr;
  if (!p.CountsVoxels()) {
    local_roots =
        reinterpret_cast<std::uint32_t*>(static_cast<std::uint8_t*>(workspace) + p.masks_offset);
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(local_roots, 0, MasksBytes(p.segments), stream),
                               "label");
  }
  CUIMG_RETURN_IF_ERROR(seg::LaunchComponents(set, p.extent, p.connectivity, d_in, d_labels, stream,
                                              mark, local_roots));
  if (!p.intensity.has_value()) {
    return LaunchNumbering<seg::NoIntensity>(p, nullptr, d_labels, workspace, stream, mark);
  }
  return VisitAnyPixelType(*p.intensity, [&](auto tag) {
    return LaunchNumbering<decltype(tag)>(p, d_intensity, d_labels, workspace, stream, mark);
  });
}

absl::StatusOr<std::vector<RegionStats>> LabelPlan::ReadRegions(const void* workspace,
                                                                cudaStream_t stream) const {
  const Impl& p = *impl_;
  std::uint32_t n = 0;
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&n, workspace, sizeof n, cudaMemcpyDeviceToHost, stream),
      "copy region count");
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "label");
  if (n > p.capacity) return absl::InternalError("label: region count above the table");
  const auto* base = static_cast<const std::uint8_t*>(workspace);
  const std::size_t c = p.capacity;
  const int axes = p.extent.depth > 1 ? 3 : 2;
  std::vector<std::uint32_t> voxels, max_key, min_key_complement, non_finite;
  std::vector<std::int32_t> first[3], end[3];
  std::vector<unsigned long long> coordinate_sum[3], sum[seg::kSumLimbs];
  CUIMG_RETURN_IF_ERROR(CopyBack(&voxels, base + p.voxels, n, stream));
  for (int a = 0; a < axes; ++a) {
    CUIMG_RETURN_IF_ERROR(CopyBack(&first[a], base + p.first + a * c * 4, n, stream));
    CUIMG_RETURN_IF_ERROR(CopyBack(&end[a], base + p.end + a * c * 4, n, stream));
    CUIMG_RETURN_IF_ERROR(
        CopyBack(&coordinate_sum[a], base + p.coordinate_sum + a * c * 8, n, stream));
  }
  const bool f32 = p.intensity == PixelType::kF32;
  if (p.intensity.has_value()) {
    CUIMG_RETURN_IF_ERROR(CopyBack(&max_key, base + p.max_key, n, stream));
    CUIMG_RETURN_IF_ERROR(CopyBack(&min_key_complement, base + p.min_key_complement, n, stream));
    if (f32) CUIMG_RETURN_IF_ERROR(CopyBack(&non_finite, base + p.non_finite, n, stream));
    for (int j = 0; j < (f32 ? seg::kSumLimbs : 1); ++j) {
      CUIMG_RETURN_IF_ERROR(CopyBack(&sum[j], base + p.sum + j * c * 8, n, stream));
    }
  }
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "copy region statistics");
  std::vector<RegionStats> regions;
  regions.reserve(n);
  for (std::uint32_t k = 0; k < n; ++k) {
    seg::RegionAccumulator acc;
    acc.voxels = voxels[k];
    for (int a = 0; a < 3; ++a) {
      acc.begin[a] = a < axes ? 0x7fffffff - first[a][k] : 0;
      acc.end[a] = a < axes ? end[a][k] : 1;
      acc.coordinate_sum[a] = a < axes ? coordinate_sum[a][k] : 0;
    }
    seg::SumLimbs limbs{};
    if (p.intensity.has_value()) {
      acc.max_key = max_key[k];
      acc.min_key_complement = min_key_complement[k];
      if (f32) {
        acc.non_finite = non_finite[k];
        for (int j = 0; j < seg::kSumLimbs; ++j) limbs[j] = static_cast<std::int64_t>(sum[j][k]);
      } else {
        acc.integer_sum = static_cast<std::int64_t>(sum[0][k]);
      }
    }
    regions.push_back(seg::FinishRegion(acc, p.intensity, &limbs));
  }
  return regions;
}

}  // namespace cuimg
