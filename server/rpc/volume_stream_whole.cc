#include "server/rpc/volume_stream_whole.h"

#include <algorithm>
#include <cstring>

#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/scheduling/inflight_estimate.h"

namespace cuimg {

absl::StatusOr<absl::optional<ResolvedImage>> ResolveStreamMarker(ImagingService& service,
                                                                  CallScope& call,
                                                                  const VolumeStreamJob& job) {
  if (!job.marker.has_value()) return absl::optional<ResolvedImage>();
  absl::StatusOr<ResolvedImage> marker =
      ResolveImage(*job.marker, call, service.store(), service.shared_memory(),
                   service.options().limits, ImageDecoders{});
  if (!marker.ok()) return WithFieldPrefix(marker.status(), "header.morphology.");
  CUIMG_RETURN_IF_ERROR(CheckMarkerShape(marker->view, ImageView{job.type, job.extent, 1, nullptr},
                                         "header.morphology.marker"));
  return absl::optional<ResolvedImage>(*std::move(marker));
}

WholeVolumeStage::WholeVolumeStage(PixelType type, const Extent& extent,
                                   std::vector<MorphologyStep> steps)
    : type_(type),
      extent_(extent),
      steps_(std::move(steps)),
      slice_bytes_(static_cast<std::size_t>(extent.SlicePixels()) * PixelSize(type)),
      // Every slice is placed before it is read (the stream fails otherwise): not zero-filled.
      gathered_(type, extent, 1, Image::kUninitialized) {}

std::uint64_t WholeVolumeStage::HeldBytes(PixelType type, const Extent& extent,
                                          const std::vector<MorphologyStep>& steps) {
  return WholeVolumeStageBytes(type, extent, steps);
}

absl::Status WholeVolumeStage::PlaceSlab(Backend& backend, const ImageView& in,
                                         const std::vector<MorphologyStep>& local_steps,
                                         std::int64_t first, std::int64_t z, std::int64_t slices,
                                         StageTimes* times, const CancelToken& cancel) {
  const auto* slab = static_cast<const std::uint8_t*>(in.data);
  Image result;
  if (!local_steps.empty()) {
    result = Image(in.type, in.extent, 1, Image::kUninitialized);
    CUIMG_RETURN_IF_ERROR(
        backend.Morphology(in, result.view(), local_steps, nullptr, times, cancel));
    slab = result.bytes();
  }
  std::memcpy(gathered_.bytes() + z * slice_bytes_, slab + first * slice_bytes_,
              slices * slice_bytes_);
  return absl::OkStatus();
}

absl::Status WholeVolumeStage::Run(Backend& backend, const ImageView* marker, StageTimes* times,
                                   const CancelToken& cancel) {
  result_ = Image(type_, extent_, 1, Image::kUninitialized);
  const absl::Status status =
      backend.Morphology(gathered_.view(), result_.view(), steps_, marker, times, cancel);
  gathered_ = Image();  // read: its bytes go back while the results stream out
  return status;
}

std::unique_ptr<v1::VolumeStreamResponse> WholeVolumeStage::Message(
    std::int64_t z, std::int64_t slices,
    const std::vector<v1::StructuringElement>& resolved) const {
  auto message = std::make_unique<v1::VolumeStreamResponse>();
  message->set_z_begin(static_cast<std::uint32_t>(z));
  message->set_slices(static_cast<std::uint32_t>(slices));
  message->mutable_data()->assign(reinterpret_cast<const char*>(result_.bytes()) + z * slice_bytes_,
                                  slices * slice_bytes_);
  if (z == 0) {
    for (const v1::StructuringElement& e : resolved) *message->add_resolved_elements() = e;
  }
  return message;
}

}  // namespace cuimg
