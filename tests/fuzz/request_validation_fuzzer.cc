// libFuzzer target: request validation of every RPC. The first byte picks the request type (0
// Morphology, 1 Gradient, 2 Pyramid, 3 Deform, 4 and 5 Upload's image and mesh headers, 6
// DetectPedestrians, 7 a ProcessVolumeStream header, 8 Label), the rest is parsed as that protobuf
// message (the bytes a client could send); validation must return a status, never crash, and
// admission's estimate must be computable for whatever it accepts. For an accepted stream header,
// the slab plan must tile the volume: output windows contiguous, inputs inside the volume and
// covering each output slab's halo (for a chain with a global step, the halo of its steps before
// that one). Elements in millimetres resolve to one element per step (a resident input's against a
// fixed spacing), and a resident input's job is checked against a fixed shape as admission checks
// it. Morphology, Gradient and Label are also validated with their inline pixels detached (as the
// server receives them) and must get the same status. Every refusal keeps the error contract
// (tests/testing/error_contract.h): a documented reason set where it was raised and a field of the
// request that its message starts with.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "cuimg/v1/resident.pb.h"
#include "cuimg/v1/streaming.pb.h"
#include "server/scheduling/inflight_estimate.h"
#include "server/scheduling/volume_stream_plan.h"
#include "server/state/resident_store.h"
#include "server/validation/request_validation.h"
#include "tests/testing/error_contract.h"

namespace {

// A validator's refusal names its reason and a field of `request`; admission's (an unknown
// handle, an encoded file that does not probe) its reason, and its field when it names one.
void CheckRefusal(const absl::Status& status, const google::protobuf::Message& request,
                  bool field_required = true) {
  if (status.ok()) return;
  if (!cuimg::testing::ErrorContractError(status, request, field_required).empty()) {
    __builtin_trap();
  }
}

template <typename Request, typename Job>
void Check(const std::uint8_t* data, std::size_t size,
           absl::StatusOr<Job> (*validate)(const Request&, const cuimg::RequestLimits&),
           const cuimg::RequestLimits& limits, cuimg::ResidentStore& store) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  absl::StatusOr<Job> job = validate(request, limits);
  CheckRefusal(job.status(), request);
  if (!job.ok()) return;
  // Every accepted job can be sized for admission (an unknown handle is NOT_FOUND, not a crash).
  CheckRefusal(cuimg::EstimateInflightBytes(*job, request, "fuzzer", store, limits).status(),
               request, false);
}

// A Morphology on a resident handle with elements in millimetres resolves against the object's
// spacing at admission: here a CT-like one. The resolved chain must have one element per step.
void CompleteFromResident(const cuimg::v1::MorphologyRequest& request,
                          const cuimg::RequestLimits& limits, cuimg::MorphologyJob* job) {
  if (job->steps_await_spacing) {
    cuimg::v1::Spacing spacing;
    spacing.set_x_mm(0.7);
    spacing.set_y_mm(0.7);
    spacing.set_z_mm(2.5);
    const absl::Status resolved =
        cuimg::ResolveMorphologyOnResident(request, spacing, cuimg::Extent{8, 8, 8}, limits, job);
    CheckRefusal(resolved, request);
    if (!resolved.ok()) return;
  }
  if (!job->resolved_elements.empty() && job->resolved_elements.size() != job->steps.size()) {
    __builtin_trap();
  }
  // Admission's check of the steps against the object (any verdict, never a crash).
  if (job->input.kind == cuimg::ImageInput::Kind::kHandle) {
    (void)cuimg::CheckMorphologyInput(
        cuimg::ImageView{cuimg::PixelType::kU32, cuimg::Extent{8, 8, 8}, 1, nullptr}, *job);
    (void)cuimg::CheckMorphologyInput(
        cuimg::ImageView{cuimg::PixelType::kF32, cuimg::Extent{8, 8, 1}, 1, nullptr}, *job);
  }
}
void CompleteFromResident(const cuimg::v1::LabelRequest&, const cuimg::RequestLimits&,
                          cuimg::LabelJob* job) {
  if (job->input.kind == cuimg::ImageInput::Kind::kHandle) {
    (void)cuimg::CheckLabelInput(
        cuimg::ImageView{cuimg::PixelType::kU32, cuimg::Extent{8, 8, 8}, 1, nullptr}, *job);
  }
}
template <typename Request, typename Job>
void CompleteFromResident(const Request&, const cuimg::RequestLimits&, Job*) {}

// Morphology, Gradient, Pyramid and DetectPedestrians also take their inline pixels beside the
// message (wire_pixels.h): validating with the pixels moved out must give the same verdict as with
// them in place.
template <typename Request, typename Job>
void CheckDetached(const std::uint8_t* data, std::size_t size,
                   absl::StatusOr<Job> (*validate)(const Request&, const cuimg::RequestLimits&,
                                                   cuimg::DetachedPixels),
                   const cuimg::RequestLimits& limits, cuimg::ResidentStore& store) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  absl::StatusOr<Job> inline_job = validate(request, limits, absl::nullopt);
  CheckRefusal(inline_job.status(), request);
  if (inline_job.ok()) {
    CompleteFromResident(request, limits, &*inline_job);
    CheckRefusal(
        cuimg::EstimateInflightBytes(*inline_job, request, "fuzzer", store, limits).status(),
        request, false);
  }
  if (!request.input().has_image()) return;
  const std::string pixels = request.input().image().data();
  request.mutable_input()->mutable_image()->clear_data();
  const absl::StatusOr<Job> detached_job = validate(request, limits, absl::string_view(pixels));
  if (detached_job.status() != inline_job.status()) __builtin_trap();
}

// DetectPedestrians against a registry holding the default model (an in-memory one: the
// fuzzer reads no files).
absl::StatusOr<cuimg::DetectJob> ValidateDetect(const cuimg::v1::DetectPedestriansRequest& request,
                                                const cuimg::RequestLimits& limits,
                                                cuimg::DetachedPixels pixels) {
  static const cuimg::ModelRegistry* const models = [] {
    auto* registry = new cuimg::ModelRegistry();
    cuimg::HogModel model;
    model.name = cuimg::kDefaultDetectorModel;
    model.weights.assign(model.DescriptorSize(), 0.5f);
    if (!registry->Add(std::move(model)).ok()) __builtin_trap();
    return registry;
  }();
  return cuimg::ValidateDetectRequest(request, limits, *models, pixels);
}

// The slab plan of an accepted header, as slices arrive `step` at a time.
void CheckStreamPlan(const cuimg::VolumeStreamJob& job, std::int64_t step) {
  const std::int64_t depth = job.extent.depth;
  const int reach = cuimg::VolumeStreamZReach(job);
  std::int64_t next = 0;
  for (std::int64_t received = std::min(step, depth);;
       received = std::min(received + step, depth)) {
    while (std::optional<cuimg::SlabWindow> w =
               cuimg::NextSlabWindow(depth, reach, received, next, 3)) {
      if (w->out_begin != next || w->out_end <= w->out_begin || w->in_begin < 0 ||
          w->in_end > std::min(depth, received) ||
          w->in_begin != std::max<std::int64_t>(0, w->out_begin - reach) ||
          w->in_end != std::min(depth, w->out_end + reach)) {
        __builtin_trap();
      }
      next = w->out_end;
    }
    if (received == depth) break;
  }
  if (next != depth) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static cuimg::ResidentStore store(cuimg::ResidentStoreOptions{});
  cuimg::RequestLimits limits;
  // Small enough that accepted inline requests stay cheap to size.
  limits.max_pixels = 1 << 22;
  limits.max_decoded_pixels = 1 << 20;
  const std::uint8_t kind = data[0];
  ++data;
  --size;
  switch (kind % 9) {
    case 0:
      CheckDetached(data, size, &cuimg::ValidateMorphologyRequest, limits, store);
      break;
    case 1:
      CheckDetached(data, size, &cuimg::ValidateGradientRequest, limits, store);
      break;
    case 2:
      CheckDetached(data, size, &cuimg::ValidatePyramidRequest, limits, store);
      break;
    case 3:
      Check(data, size, &cuimg::ValidateDeformRequest, limits, store);
      break;
    case 6:
      CheckDetached(data, size, &ValidateDetect, limits, store);
      break;
    case 8:
      CheckDetached(data, size, &cuimg::ValidateLabelRequest, limits, store);
      break;
    case 4: {
      cuimg::v1::UploadRequest upload;
      if (upload.ParseFromArray(data, static_cast<int>(size)) && upload.has_image()) {
        CheckRefusal(cuimg::ValidateUploadHeader(upload.image(), limits).status(), upload);
      }
      break;
    }
    case 7: {
      cuimg::v1::VolumeStreamRequest first;  // the stream's first message, its fields' root
      cuimg::v1::VolumeStreamHeader& header = *first.mutable_header();
      if (!header.ParseFromArray(data, static_cast<int>(size))) break;
      absl::StatusOr<cuimg::VolumeStreamJob> job =
          cuimg::ValidateVolumeStreamHeader(header, limits);
      CheckRefusal(job.status(), first);
      if (job.ok() && job->extent.depth <= 4096) {
        CheckStreamPlan(*job, 1 + static_cast<std::int64_t>(size % 5));
      }
      break;
    }
    case 5: {
      cuimg::v1::UploadRequest upload;
      if (upload.ParseFromArray(data, static_cast<int>(size)) && upload.has_mesh()) {
        CheckRefusal(cuimg::ValidateUploadMeshHeader(upload.mesh(), limits), upload);
      }
      break;
    }
  }
  return 0;
}
