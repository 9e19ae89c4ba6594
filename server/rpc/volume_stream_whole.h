// The whole-volume stage of a streamed volume whose chain has a global step (IsGlobalStep:
// reconstruction, hole filling, ...): a slice's result there may depend on every other slice, so
// no halo lets a slab stand for the volume. The chain's steps before its first global one still
// run slab by slab as slabs arrive (volume_stream_rpc.cc); their results are gathered here, and
// the rest of the chain runs once, on the whole volume, when the last slab is in. The results
// then stream back in z order from this stage's result.
#ifndef CUIMG_SERVER_RPC_VOLUME_STREAM_WHOLE_H_
#define CUIMG_SERVER_RPC_VOLUME_STREAM_WHOLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/optional.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/morphology_types.h"
#include "cuimg/v1/streaming.pb.h"
#include "server/backend/backend.h"
#include "server/rpc/call_scope.h"
#include "server/rpc/image_input.h"
#include "server/rpc/imaging_service.h"
#include "server/scheduling/volume_stream_plan.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// The marker of a streamed chain (a resident handle or shared memory), resolved for `call` and
// checked against the volume's shape; nullopt when the chain reads none. Errors name the header's
// field ("header.morphology.marker...").
absl::StatusOr<absl::optional<ResolvedImage>> ResolveStreamMarker(ImagingService& service,
                                                                  CallScope& call,
                                                                  const VolumeStreamJob& job);

class WholeVolumeStage {
 public:
  // `steps`: the chain from its first global step on; `type` and `extent`: the whole volume's.
  WholeVolumeStage(PixelType type, const Extent& extent, std::vector<MorphologyStep> steps);

  // Host bytes the stage holds at most: the gathered volume, its result, the CPU reference's
  // scratch images between passes and its segmentation steps' own (WholeVolumeStageBytes, where
  // admission's estimates are).
  static std::uint64_t HeldBytes(PixelType type, const Extent& extent,
                                 const std::vector<MorphologyStep>& steps);

  // One slab of the input (`in`: a window of the volume with its halo) through `local_steps`
  // (the chain's steps before its first global one; none: copied as it is), whose slices
  // [first, first + slices) of the window, volume slices [z, z + slices), go into the gathered
  // volume. Calls for disjoint slices may run at once; none once Run has started.
  absl::Status PlaceSlab(Backend& backend, const ImageView& in,
                         const std::vector<MorphologyStep>& local_steps, std::int64_t first,
                         std::int64_t z, std::int64_t slices, StageTimes* times,
                         const CancelToken& cancel);

  // Runs the steps on the gathered volume (every slice placed) with `marker` (the volume's shape,
  // or null when no step reads one); the gathered volume is freed once it is read. The backend
  // looks at `cancel` as in any Morphology call.
  absl::Status Run(Backend& backend, const ImageView* marker, StageTimes* times,
                   const CancelToken& cancel);

  // Result slices [z, z + slices) as a response message (after Run succeeded); the first
  // (z 0) carries `resolved` (the elements as run).
  std::unique_ptr<v1::VolumeStreamResponse> Message(
      std::int64_t z, std::int64_t slices,
      const std::vector<v1::StructuringElement>& resolved) const;

 private:
  PixelType type_;
  Extent extent_;
  std::vector<MorphologyStep> steps_;
  std::size_t slice_bytes_;
  Image gathered_;
  Image result_;
};

}  // namespace cuimg

#endif  // CUIMG_SERVER_RPC_VOLUME_STREAM_WHOLE_H_
