// Label's work, once admitted (ImagingService::Serve): resolve the input (and the intensity
// image), label on the backend into the response's label buffer, and write the region table.
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/rpc/image_input.h"
#include "server/rpc/imaging_service.h"
#include "server/rpc/result_slot.h"
#include "server/scheduling/inflight_estimate.h"

namespace cuimg {
namespace {

// The spacing of each axis the image has (x, y; z for a volume) when all are known (> 0).
bool SpacingKnown(const v1::Spacing& spacing, const Extent& extent) {
  return spacing.x_mm() > 0 && spacing.y_mm() > 0 && (extent.depth == 1 || spacing.z_mm() > 0);
}

// The regions as RegionTable's columns (label.proto): (x, y, z) triples per region.
void FillRegionTable(const std::vector<RegionStats>& regions, const v1::Spacing& spacing,
                     const Extent& extent, bool intensity, v1::RegionTable* table) {
  const int n = static_cast<int>(regions.size());
  const bool mm = SpacingKnown(spacing, extent);
  const double scale[3] = {spacing.x_mm(), spacing.y_mm(), extent.depth > 1 ? spacing.z_mm() : 0};
  table->mutable_voxels()->Reserve(n);
  table->mutable_bbox_begin()->Reserve(3 * n);
  table->mutable_bbox_end()->Reserve(3 * n);
  table->mutable_centroid()->Reserve(3 * n);
  if (mm) table->mutable_centroid_mm()->Reserve(3 * n);
  for (const RegionStats& r : regions) {
    table->add_voxels(static_cast<std::uint64_t>(r.voxels));
    for (int axis = 0; axis < 3; ++axis) {
      table->add_bbox_begin(static_cast<std::uint32_t>(r.bbox_begin[axis]));
      table->add_bbox_end(static_cast<std::uint32_t>(r.bbox_end[axis]));
      table->add_centroid(r.centroid[axis]);
      if (mm) table->add_centroid_mm(r.centroid[axis] * scale[axis]);
    }
  }
  if (!intensity) return;
  for (const RegionStats& r : regions) {
    table->add_min(r.min);
    table->add_max(r.max);
    table->add_mean(r.mean);
    table->add_sum(r.sum);
  }
}

}  // namespace

absl::Status ImagingService::RunLabel(const LabelJob& job, CallScope& call,
                                      v1::LabelResponse* response) {
  CUIMG_ASSIGN_OR_RETURN(
      ResolvedImage in,
      ResolveImage(job.input, call, *store_, shared_memory_.get(), options_.limits, decoders_));
  CUIMG_RETURN_IF_ERROR(CheckLabelInput(in.view, job));
  CUIMG_ASSIGN_OR_RETURN(absl::optional<ResolvedImage> intensity,
                         ResolveExtraImage(job.intensity, call));
  if (intensity.has_value()) CUIMG_RETURN_IF_ERROR(CheckLabelIntensity(intensity->view, in.view));
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  const Extent& extent = in.view.extent;
  ResultSlot labels(job.output, PixelType::kU32, extent, in.spacing, response->mutable_labels(),
                    *call.detached_results());
  const ImageView out{PixelType::kU32, extent, 1, labels.data()};
  CUIMG_ASSIGN_OR_RETURN(
      std::vector<RegionStats> regions,
      backend_->Label(in.input(), job.spec, intensity.has_value() ? &intensity->view : nullptr, out,
                      &call.times(), call.cancel()));
  // The table's size is known only now: its bytes join the call's reservation, or the call is
  // refused as a request over the budget would have been.
  CUIMG_RETURN_IF_ERROR(
      call.HoldMore(LabelRegionBytes(regions.size(), intensity.has_value()), "input"));
  FillRegionTable(regions, in.spacing, extent, intensity.has_value(), response->mutable_regions());
  response->set_region_count(static_cast<std::uint32_t>(regions.size()));
  metrics_->AddPixels("Label", extent.Pixels());
  CUIMG_RETURN_IF_ERROR(labels.Deliver(*store_, call.identity()));
  // The shape travels even when the pixels stay on the server: it says how to read the table.
  if (!response->labels().has_image()) {
    DescribeResult(PixelType::kU32, extent, in.spacing, response->mutable_labels());
  }
  return absl::OkStatus();
}

}  // namespace cuimg
