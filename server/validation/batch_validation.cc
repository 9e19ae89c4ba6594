#include "server/validation/batch_validation.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/validation/validation_rules.h"

namespace cuimg {
namespace {

// What every batch is refused for before its entries are read.
absl::Status CheckBatchShape(bool has_input, int entries, const RequestLimits& limits) {
  if (has_input) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, "inputs",
                             "a batch goes in place of `input`, not beside it");
  }
  if (entries > limits.max_batch_inputs) {
    return InvalidFieldError(ErrorReason::kLimitExceeded, "inputs",
                             absl::StrCat(entries, " entries exceed the server limit ",
                                          limits.max_batch_inputs, " (--max_batch_inputs)"));
  }
  return absl::OkStatus();
}

absl::Status RefuseBatchSharedMemoryOutput(const OutputSpec& output) {
  if (output.shared_memory_region.empty()) return absl::OkStatus();
  return InvalidFieldError(ErrorReason::kInvalidCombination, "output.shared_memory",
                           "not with `inputs` (a batch's results come back inline or resident)");
}

DetachedPixels PixelsOf(absl::Span<const DetachedPixels> pixels, int entry) {
  const auto k = static_cast<std::size_t>(entry);
  return k < pixels.size() ? pixels[k] : absl::nullopt;
}

std::string EntryField(int entry) { return absl::StrCat("inputs[", entry, "]"); }

// Each entry: `shared` with the entry's input, then `check` on it while the input is inline
// (what an inline image allows before it is resolved).
template <typename Job, typename Request, typename Check>
BatchJob<Job> Entries(const Request& request, const RequestLimits& limits,
                      absl::Span<const DetachedPixels> pixels, const Job& shared,
                      const Check& check) {
  BatchJob<Job> batch;
  batch.entries.reserve(static_cast<std::size_t>(request.inputs_size()));
  for (int i = 0; i < request.inputs_size(); ++i) {
    Job job = shared;
    absl::Status status = [&]() -> absl::Status {
      CUIMG_ASSIGN_OR_RETURN(job.input, ValidateImageSource(request.inputs(i), EntryField(i),
                                                            limits, PixelsOf(pixels, i)));
      if (job.input.kind != ImageInput::Kind::kInline &&
          job.input.kind != ImageInput::Kind::kFrames) {
        return absl::OkStatus();
      }
      return check(ImageView{job.input.type, job.input.extent, job.input.channels, nullptr}, &job);
    }();
    if (status.ok()) {
      batch.entries.emplace_back(std::move(job));
    } else {
      batch.entries.emplace_back(std::move(status));
    }
  }
  return batch;
}

}  // namespace

absl::StatusOr<BatchJob<MorphologyJob>> ValidateMorphologyBatch(
    const v1::MorphologyRequest& request, const RequestLimits& limits,
    absl::Span<const DetachedPixels> pixels) {
  CUIMG_RETURN_IF_ERROR(CheckBatchShape(request.has_input(), request.inputs_size(), limits));
  MorphologyJob shared;
  CUIMG_ASSIGN_OR_RETURN(shared.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_RETURN_IF_ERROR(RefuseBatchSharedMemoryOutput(shared.output));
  if (shared.output.frame_encoding != FrameSyntax::kNative) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, "output.frame_encoding",
                             "a batch's results are raw pixels: send DICOM frames whose results "
                             "are to be encoded one image a call");
  }
  // A marker has one image's shape: the reconstruction steps run one image a call.
  CUIMG_ASSIGN_OR_RETURN(const absl::optional<ImageInput> marker, ValidateMarker(request, limits));
  if (marker.has_value()) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, "marker",
                             "a batch (inputs) takes no marker: send each image with its marker "
                             "in a call of its own");
  }
  const bool per_entry_steps = AnyElementRadius(request);
  if (!per_entry_steps) {
    // In voxels: the same chain for every entry, and its faults are the call's.
    CUIMG_ASSIGN_OR_RETURN(
        shared.steps,
        ValidateMorphologySteps(request, "", limits, ElementFrame(), &shared.resolved_elements));
  }
  BatchJob<MorphologyJob> batch;
  batch.same_parameters = !per_entry_steps;
  batch.entries.reserve(static_cast<std::size_t>(request.inputs_size()));
  for (int i = 0; i < request.inputs_size(); ++i) {
    batch.entries.push_back(ValidateMorphologyInput(request, request.inputs(i), EntryField(i),
                                                    limits, PixelsOf(pixels, i), &shared));
  }
  return batch;
}

absl::StatusOr<BatchJob<GradientJob>> ValidateGradientBatch(
    const v1::GradientRequest& request, const RequestLimits& limits,
    absl::Span<const DetachedPixels> pixels) {
  CUIMG_RETURN_IF_ERROR(CheckBatchShape(request.has_input(), request.inputs_size(), limits));
  GradientJob shared;
  CUIMG_ASSIGN_OR_RETURN(shared.spec, ValidateGradientFields(request, ""));
  CUIMG_ASSIGN_OR_RETURN(shared.output, ValidateOutputOptions(request.output(), "output"));
  CUIMG_RETURN_IF_ERROR(RefuseSharedMemoryOutput(shared.output, "Gradient"));
  CUIMG_RETURN_IF_ERROR(RefuseFrameEncoding(shared.output, "Gradient"));
  return Entries(request, limits, pixels, shared, [](const ImageView& view, GradientJob* job) {
    return CheckGradientInput(view, *job);
  });
}

absl::StatusOr<BatchJob<PyramidJob>> ValidatePyramidBatch(const v1::PyramidRequest& request,
                                                          const RequestLimits& limits,
                                                          absl::Span<const DetachedPixels> pixels) {
  CUIMG_RETURN_IF_ERROR(CheckBatchShape(request.has_input(), request.inputs_size(), limits));
  PyramidJob shared;
  CUIMG_RETURN_IF_ERROR(ValidatePyramidFields(request, limits, &shared));
  return Entries(request, limits, pixels, shared, [](const ImageView& view, PyramidJob* job) {
    return CheckPyramidInput(view, job);
  });
}

absl::StatusOr<BatchJob<DetectJob>> ValidateDetectBatch(const v1::DetectPedestriansRequest& request,
                                                        const RequestLimits& limits,
                                                        const ModelRegistry& models,
                                                        absl::Span<const DetachedPixels> pixels) {
  DetectJob shared;
  CUIMG_ASSIGN_OR_RETURN(shared.model, FindDetectModel(request, models));
  CUIMG_RETURN_IF_ERROR(CheckBatchShape(request.has_input(), request.inputs_size(), limits));
  CUIMG_RETURN_IF_ERROR(ValidateDetectFields(request, limits, &shared));
  return Entries(request, limits, pixels, shared, [](const ImageView& view, DetectJob* job) {
    return CheckDetectInput(view, *job);
  });
}

absl::Status CheckBatchBytes(std::uint64_t bytes, const RequestLimits& limits) {
  if (bytes <= limits.max_batch_bytes) return absl::OkStatus();
  return InvalidFieldError(
      ErrorReason::kLimitExceeded, "inputs",
      absl::StrCat("the inputs hold ", bytes, " bytes (decoded), over the server limit ",
                   limits.max_batch_bytes, " (--max_batch_bytes)"));
}

}  // namespace cuimg
