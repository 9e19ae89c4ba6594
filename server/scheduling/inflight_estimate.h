// Admission estimates: the host bytes a validated request will hold while it runs (its message,
// a decoded input, the results and the backend's copies), computed from sizes alone before
// anything is allocated, for InflightBudget. Estimates err on the high side.
#ifndef CUIMG_SERVER_SCHEDULING_INFLIGHT_ESTIMATE_H_
#define CUIMG_SERVER_SCHEDULING_INFLIGHT_ESTIMATE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/image.h"
#include "server/server_options.h"
#include "server/state/resident_store.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// The shape (data null) of a validated image input: inline from the request, resident from the
// store (NOT_FOUND naming the field), encoded from its header (INVALID_ARGUMENT when corrupt or
// over max_decoded_pixels).
absl::StatusOr<ImageView> InputShape(const ImageInput& input, absl::string_view identity,
                                     ResidentStore& store, const RequestLimits& limits);

absl::StatusOr<std::uint64_t> EstimateInflightBytes(const MorphologyJob& job,
                                                    const v1::MorphologyRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits);
// The label image (4 bytes a voxel: the backend's result, and a resident one's copy in the
// response) and labelling's own buffers; the region table is counted once its size is known
// (LabelRegionBytes, CallScope::HoldMore).
absl::StatusOr<std::uint64_t> EstimateInflightBytes(const LabelJob& job,
                                                    const v1::LabelRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits);
// Host bytes the segmentation steps of `steps` need on an image of `extent` beside the chain's
// images (MorphologyReferenceScratchImages): the reference's reconstruction queue
// (ReconstructionReferenceQueueBytes) for a reconstruction step, labelling's buffers for a mask
// step; the steps run one at a time, so the largest need. 0 without such steps.
std::uint64_t SegmentationScratchBytes(const std::vector<MorphologyStep>& steps,
                                       const Extent& extent);
// Host bytes a streamed volume's whole-volume stage (rpc/volume_stream_whole.h) holds at most for
// `steps`, the chain from its first global step on, over a volume of `type` and `extent`: the
// gathered volume, its result, the CPU reference's scratch images between passes and the
// segmentation steps' own (SegmentationScratchBytes).
std::uint64_t WholeVolumeStageBytes(PixelType type, const Extent& extent,
                                    const std::vector<MorphologyStep>& steps);
// Host bytes of `regions` regions' statistics: the backend's rows, the response's columns and
// their serialized copy.
std::uint64_t LabelRegionBytes(std::size_t regions, bool intensity);
absl::StatusOr<std::uint64_t> EstimateInflightBytes(const GradientJob& job,
                                                    const v1::GradientRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits);
absl::StatusOr<std::uint64_t> EstimateInflightBytes(const PyramidJob& job,
                                                    const v1::PyramidRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits);
absl::StatusOr<std::uint64_t> EstimateInflightBytes(const DetectJob& job,
                                                    const v1::DetectPedestriansRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits);
absl::StatusOr<std::uint64_t> EstimateInflightBytes(const DeformJob& job,
                                                    const v1::DeformRequest& request,
                                                    absl::string_view identity,
                                                    ResidentStore& store,
                                                    const RequestLimits& limits);

// Whether a request keeps or reads objects on the server (the `resident` right).
bool UsesResident(const ImageInput& input, const OutputSpec& output);
bool UsesResident(const MorphologyJob& job);
bool UsesResident(const LabelJob& job);
bool UsesResident(const GradientJob& job);
bool UsesResident(const PyramidJob& job);
bool UsesResident(const DetectJob& job);
bool UsesResident(const DeformJob& job);

}  // namespace cuimg

#endif  // CUIMG_SERVER_SCHEDULING_INFLIGHT_ESTIMATE_H_
