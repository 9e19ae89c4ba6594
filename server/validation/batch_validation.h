// Batches (types.proto): a request's `inputs`, each validated as a call with that image alone
// as `input` would be, with the request's parameters validated once. Pure functions, as the rest
// of validation.
#ifndef CUIMG_SERVER_VALIDATION_BATCH_VALIDATION_H_
#define CUIMG_SERVER_VALIDATION_BATCH_VALIDATION_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/server_options.h"
#include "server/state/model_registry.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// A validated batch: one entry per element of the request's `inputs`, in order, each the job a
// call with that image alone would run (its fields named from the batch: "inputs[3].image"), or
// why that entry is refused.
template <typename Job>
struct BatchJob {
  std::vector<absl::StatusOr<Job>> entries;
  // Every entry runs with the same parameters (a Morphology batch whose elements are all in
  // voxels: in millimetres, each entry's steps follow its own spacing), so entries of one shape
  // and type may run as one.
  bool same_parameters = true;
};

// What the entries share, refused for the whole call (INVALID_ARGUMENT naming the field):
// `inputs` beside `input`, more entries than limits.max_batch_inputs, a parameter, output options
// (shared memory is not taken with a batch). `pixels[k]`: inputs[k]'s pixels when they arrived
// beside the message (wire_pixels.h); entries past its end hold their own.
absl::StatusOr<BatchJob<MorphologyJob>> ValidateMorphologyBatch(
    const v1::MorphologyRequest& request, const RequestLimits& limits,
    absl::Span<const DetachedPixels> pixels);
absl::StatusOr<BatchJob<GradientJob>> ValidateGradientBatch(
    const v1::GradientRequest& request, const RequestLimits& limits,
    absl::Span<const DetachedPixels> pixels);
absl::StatusOr<BatchJob<PyramidJob>> ValidatePyramidBatch(const v1::PyramidRequest& request,
                                                          const RequestLimits& limits,
                                                          absl::Span<const DetachedPixels> pixels);
// The model first, as for one input: NOT_FOUND naming `model` fails the call.
absl::StatusOr<BatchJob<DetectJob>> ValidateDetectBatch(const v1::DetectPedestriansRequest& request,
                                                        const RequestLimits& limits,
                                                        const ModelRegistry& models,
                                                        absl::Span<const DetachedPixels> pixels);

// INVALID_ARGUMENT naming `inputs` and --max_batch_bytes when a batch's inputs hold more than
// limits.max_batch_bytes (`bytes`: each admitted entry's pixels as decoded, summed).
absl::Status CheckBatchBytes(std::uint64_t bytes, const RequestLimits& limits);

}  // namespace cuimg

#endif  // CUIMG_SERVER_VALIDATION_BATCH_VALIDATION_H_
