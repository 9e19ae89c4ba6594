#include "server/rpc/imaging_service.h"

#include <chrono>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/detect_geometry.h"
#include "server/observability/log.h"
#include "server/rpc/call_messages.h"
#include "server/rpc/image_input.h"
#include "server/scheduling/inflight_estimate.h"
#include "server/scheduling/work_estimate.h"
#include "server/validation/proto_conversion.h"

namespace cuimg {
namespace {

// Requests with a batch's `inputs` (types.proto): the image RPCs but Deform.
template <typename Request, typename = void>
struct TakesBatches : std::false_type {};
template <typename Request>
struct TakesBatches<Request, std::void_t<decltype(std::declval<const Request&>().inputs())>>
    : std::true_type {};

// The image RPCs' unary reactor: gRPC's default one, plus OnCancel, which hands a client's
// cancellation (or its passed deadline) to the running work through the call's token. It keeps
// the call's scope until OnDone, so that the call stays live (live_calls.h) until gRPC has
// handed its response to the kernel.
class CancellingReactor final : public grpc::ServerUnaryReactor {
 public:
  CancellingReactor(grpc::CallbackServerContext* ctx, std::shared_ptr<CancelToken> cancel,
                    std::shared_ptr<CallScope> call)
      : ctx_(ctx), cancel_(std::move(cancel)), call_(std::move(call)) {}
  void OnCancel() override {
    // gRPC cancels a call whose deadline passed too, and so does the client when its own copy of
    // the deadline passes: MarkClientGone tells which it was.
    cancel_->MarkClientGone(began_, ctx_->deadline());
  }
  void OnDone() override { delete this; }

 private:
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<CancelToken> cancel_;
  std::shared_ptr<CallScope> call_;
  const std::chrono::system_clock::time_point began_ = std::chrono::system_clock::now();
};

// The helper processes for frames whose decoders may abort; null (logged) without the helper.
std::unique_ptr<FrameSandbox> MakeFrameSandbox(const ServerOptions& options) {
  FrameSandboxOptions sandbox;
  sandbox.helper_path = options.frame_decoder_path;
  sandbox.max_helpers = options.decode_threads + 1;
  sandbox.frame_timeout = absl::Milliseconds(options.frame_decode_timeout_ms);
  absl::StatusOr<std::unique_ptr<FrameSandbox>> made = FrameSandbox::Create(sandbox);
  if (!made.ok()) {
    LogEvent(LogLevel::kWarning, "frame_decoder_missing",
             {{"message", std::string(made.status().message())}});
    return nullptr;
  }
  return *std::move(made);
}

}  // namespace

ImagingService::ImagingService(const ServerOptions& options, const AuthPolicy& auth,
                               Backend* backend, WorkQueue* queue, InflightBudget* budget,
                               ResidentStore* store, ServerMetrics* metrics,
                               const ModelRegistry* models)
    : options_(options),
      auth_(auth),
      backend_(backend),
      queue_(queue),
      budget_(budget),
      store_(store),
      decode_threads_(std::make_unique<DecodeThreads>(options.decode_threads)),
      frame_sandbox_(MakeFrameSandbox(options)),
      decoders_{decode_threads_.get(), backend->jpeg_decoder(), backend->frame_decoder(),
                frame_sandbox_.get()},
      metrics_(metrics),
      models_(models),
      shared_memory_(
          options.shared_memory.enabled
              ? std::make_unique<SharedMemoryRegistry>(
                    options.shared_memory, SharedMemoryKeysFor(options.security), backend)
              : nullptr),
      uploads_(std::make_unique<UploadQuota>(UploadQuotaOptions{
          options.max_uploads_per_identity, options.max_upload_bytes_per_identity != 0
                                                ? options.max_upload_bytes_per_identity
                                                : budget->capacity() / 2})) {}

absl::Status ImagingService::AuthorizeCall(CallScope& call, unsigned rights) {
  absl::StatusOr<std::string> identity =
      cuimg::Authorize(*call.context(), auth_, rights, call.rpc());
  if (!identity.ok()) return identity.status();
  absl::StatusOr<LiveCalls::Hold> hold = live_calls_.Enter();
  if (!hold.ok()) return hold.status();
  call.set_hold(*std::move(hold));
  call.set_identity(*std::move(identity));
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ImagingService::ServeAtOnce(
    absl::string_view rpc, grpc::CallbackServerContext* ctx, unsigned rights,
    absl::FunctionRef<absl::Status(const std::string& identity)> body) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  CallScope call(rpc, ctx, metrics_);
  absl::Status status = AuthorizeCall(call, rights);
  if (status.ok()) status = body(call.identity());
  reactor->Finish(call.Complete(status));
  return reactor;
}

template <typename Job, typename Request>
absl::StatusOr<InflightBudget::Reservation> ImagingService::Admit(
    const grpc::ServerContextBase& ctx, absl::string_view rpc, Job* job, const Request& request,
    const std::string& identity, std::uint64_t extra_bytes) {
  if (UsesResident(*job)) {
    CUIMG_RETURN_IF_ERROR(cuimg::Authorize(ctx, auth_, kRightResident, rpc).status());
  }
  CUIMG_RETURN_IF_ERROR(CompleteFromResident(job, request, identity));
  CUIMG_ASSIGN_OR_RETURN(std::uint64_t bytes,
                         EstimateInflightBytes(*job, request, identity, *store_, options_.limits));
  CUIMG_ASSIGN_OR_RETURN(double work, RequestWork(*job, identity));
  CUIMG_RETURN_IF_ERROR(CheckRequestWork(work, options_.max_request_work));
  return budget_->Reserve(bytes + extra_bytes, "");
}

absl::StatusOr<InflightBudget::Reservation> ImagingService::AdmitDetect(
    const grpc::ServerContextBase& ctx, DetectJob* job, const v1::DetectPedestriansRequest& request,
    const std::string& identity, std::uint64_t extra_bytes) {
  return Admit(ctx, "DetectStream", job, request, identity, extra_bytes);
}

template <typename Job, typename Request>
absl::StatusOr<InflightBudget::Reservation> ImagingService::AdmitBatch(
    const grpc::ServerContextBase& ctx, absl::string_view rpc, BatchJob<Job>* batch,
    const Request& request, const std::string& identity, std::uint64_t extra_bytes) {
  bool resident = false;
  for (const absl::StatusOr<Job>& entry : batch->entries) {
    resident = resident || (entry.ok() && UsesResident(*entry));
  }
  if (resident) CUIMG_RETURN_IF_ERROR(cuimg::Authorize(ctx, auth_, kRightResident, rpc).status());
  std::uint64_t bytes = request.ByteSizeLong() + extra_bytes;
  std::uint64_t input_bytes = 0;
  double work = 0;
  for (absl::StatusOr<Job>& entry : batch->entries) {
    if (!entry.ok()) continue;
    absl::Status priced = [&]() -> absl::Status {
      CUIMG_RETURN_IF_ERROR(CompleteFromResident(&*entry, request, identity));
      CUIMG_ASSIGN_OR_RETURN(ImageView in,
                             InputShape(entry->input, identity, *store_, options_.limits));
      CUIMG_ASSIGN_OR_RETURN(std::uint64_t entry_bytes,
                             EstimateJobBytes(*entry, identity, *store_, options_.limits));
      CUIMG_ASSIGN_OR_RETURN(double entry_work, RequestWork(*entry, identity));
      input_bytes += in.Bytes();
      bytes += entry_bytes;
      work += entry_work;
      return absl::OkStatus();
    }();
    if (!priced.ok()) entry = std::move(priced);
  }
  CUIMG_RETURN_IF_ERROR(CheckBatchBytes(input_bytes, options_.limits));
  CUIMG_RETURN_IF_ERROR(CheckRequestWork(work, options_.max_request_work));
  return budget_->Reserve(bytes, "");
}

absl::StatusOr<InflightBudget::Reservation> ImagingService::AdmitDetectBatch(
    const grpc::ServerContextBase& ctx, BatchJob<DetectJob>* batch,
    const v1::DetectPedestriansRequest& request, const std::string& identity,
    std::uint64_t extra_bytes) {
  return AdmitBatch(ctx, "DetectStream", batch, request, identity, extra_bytes);
}

absl::StatusOr<BatchJob<MorphologyJob>> ImagingService::ValidateBatch(
    const v1::MorphologyRequest& request, absl::Span<const DetachedPixels> pixels) const {
  return ValidateMorphologyBatch(request, options_.limits, pixels);
}

absl::StatusOr<BatchJob<GradientJob>> ImagingService::ValidateBatch(
    const v1::GradientRequest& request, absl::Span<const DetachedPixels> pixels) const {
  return ValidateGradientBatch(request, options_.limits, pixels);
}

absl::StatusOr<BatchJob<PyramidJob>> ImagingService::ValidateBatch(
    const v1::PyramidRequest& request, absl::Span<const DetachedPixels> pixels) const {
  return ValidatePyramidBatch(request, options_.limits, pixels);
}

absl::StatusOr<BatchJob<DetectJob>> ImagingService::ValidateBatch(
    const v1::DetectPedestriansRequest& request, absl::Span<const DetachedPixels> pixels) const {
  return ValidateDetectBatch(request, options_.limits, *models_, pixels);
}

template <typename Messages, typename Validate, typename Job>
grpc::ServerUnaryReactor* ImagingService::Serve(
    absl::string_view rpc, grpc::CallbackServerContext* ctx, std::shared_ptr<Messages> messages,
    Validate validate,
    absl::Status (ImagingService::*run)(const Job&, CallScope&, typename Messages::Response*)) {
  auto cancel =
      std::make_shared<CancelToken>(CancelToken::SteadyDeadline(ctx->deadline()), &hard_stop_);
  auto call = std::make_shared<CallScope>(rpc, ctx, metrics_);
  grpc::ServerUnaryReactor* reactor = new CancellingReactor(ctx, cancel, call);
  call->set_cancel(cancel.get());
  // Every refusal is recorded (its reason, its retry hints) by CallScope::Complete.
  auto refuse = [&](const absl::Status& status) {
    reactor->Finish(call->Complete(status));
    return reactor;
  };
  // Who first: an unauthenticated caller learns nothing about its request.
  if (absl::Status who = AuthorizeCall(*call, kRightProcess); !who.ok()) return refuse(who);
  const std::string& identity = call->identity();
  // Full: refuse before parsing, so that shedding twice the capacity costs little of it.
  if (absl::Status room = queue_->CheckRoom(); !room.ok()) return refuse(room);
  if (absl::Status parsed = messages->Parse(); !parsed.ok()) return refuse(parsed);
  if constexpr (TakesBatches<typename Messages::Request>::value) {
    if (messages->request().inputs_size() > 0) {
      absl::StatusOr<BatchJob<Job>> batch =
          ValidateBatch(messages->request(), messages->entry_pixels());
      if (!batch.ok()) return refuse(batch.status());
      absl::StatusOr<InflightBudget::Reservation> reservation = AdmitBatch(
          *ctx, rpc, &*batch, messages->request(), identity, messages->detached_request_bytes());
      if (!reservation.ok()) return refuse(reservation.status());
      return Start(reactor, call, cancel, messages, *std::move(reservation), *std::move(batch),
                   [this](const BatchJob<Job>& b, CallScope& c, typename Messages::Response* r) {
                     return RunBatch(b, c, r);
                   });
    }
  }
  absl::StatusOr<Job> job = messages->Validate(validate, options_.limits);
  if (!job.ok()) return refuse(job.status());
  absl::StatusOr<InflightBudget::Reservation> reservation =
      Admit(*ctx, rpc, &*job, messages->request(), identity, messages->detached_request_bytes());
  if (!reservation.ok()) return refuse(reservation.status());
  return Start(reactor, call, cancel, messages, *std::move(reservation), *std::move(job),
               [this, run](const Job& j, CallScope& c, typename Messages::Response* r) {
                 return (this->*run)(j, c, r);
               });
}

template <typename Messages, typename Job, typename Run>
grpc::ServerUnaryReactor* ImagingService::Start(grpc::ServerUnaryReactor* reactor,
                                                std::shared_ptr<CallScope> call,
                                                std::shared_ptr<CancelToken> cancel,
                                                std::shared_ptr<Messages> messages,
                                                InflightBudget::Reservation reservation, Job job,
                                                Run run) {
  auto held = std::make_shared<InflightBudget::Reservation>(std::move(reservation));
  call->set_reservation(held.get());
  auto shared_job = std::make_shared<Job>(std::move(job));
  call->set_detached_results(messages->detached_results());
  const absl::Status admitted = queue_->Submit([this, call, cancel, shared_job, held, messages,
                                                reactor, run](WorkQueue::Admission& admission) {
    call->MarkStarted();
    // The copy out of the received bytes ran before queueing: h2d counts it, not the queue.
    call->times().queue_us -= messages->pixel_copy_us();
    absl::Status status = call->CheckAlive();
    if (status.ok()) {
      status = run(*shared_job, *call, messages->response());
      if (status.ok()) status = call->CheckSharedMemory();
      // That copy is this server's share of moving the pixels to the device (StageTimes).
      call->times().h2d_us += messages->pixel_copy_us();
      // Work that finished after its client left is logged with the client's outcome,
      // not OK: gRPC has answered it already.
      if (status.ok()) status = call->CheckAlive();
    }
    if (status.ok()) status = messages->Serialize();
    metrics_->AddBytes(messages->request_bytes(), status.ok() ? messages->response_bytes() : 0);
    // Free the slot and bytes before answering: the client may call again on the answer.
    held->Release();
    admission.Release();
    reactor->Finish(call->Complete(status));
  });
  // Every refusal is recorded (its reason, its retry hints) by CallScope::Complete.
  if (!admitted.ok()) reactor->Finish(call->Complete(admitted));
  return reactor;
}

grpc::ServerUnaryReactor* ImagingService::Morphology(grpc::CallbackServerContext* ctx,
                                                     const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  return Serve("Morphology", ctx,
               Detached<v1::MorphologyRequest, v1::MorphologyResponse>(request, response, backend_),
               &ValidateMorphologyRequest, &ImagingService::RunMorphology);
}

grpc::ServerUnaryReactor* ImagingService::Label(grpc::CallbackServerContext* ctx,
                                                const grpc::ByteBuffer* request,
                                                grpc::ByteBuffer* response) {
  return Serve("Label", ctx,
               Detached<v1::LabelRequest, v1::LabelResponse>(request, response, backend_),
               &ValidateLabelRequest, &ImagingService::RunLabel);
}

grpc::ServerUnaryReactor* ImagingService::Gradient(grpc::CallbackServerContext* ctx,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  return Serve("Gradient", ctx,
               Detached<v1::GradientRequest, v1::GradientResponse>(request, response, backend_),
               &ValidateGradientRequest, &ImagingService::RunGradient);
}

grpc::ServerUnaryReactor* ImagingService::Pyramid(grpc::CallbackServerContext* ctx,
                                                  const grpc::ByteBuffer* request,
                                                  grpc::ByteBuffer* response) {
  return Serve("Pyramid", ctx,
               Detached<v1::PyramidRequest, v1::PyramidResponse>(request, response, backend_),
               &ValidatePyramidRequest, &ImagingService::RunPyramid);
}

grpc::ServerUnaryReactor* ImagingService::DetectPedestrians(grpc::CallbackServerContext* ctx,
                                                            const grpc::ByteBuffer* request,
                                                            grpc::ByteBuffer* response) {
  auto validate = [this](const v1::DetectPedestriansRequest& r, const RequestLimits& limits,
                         DetachedPixels pixels) { return ValidateDetect(r, limits, pixels); };
  return Serve("DetectPedestrians", ctx,
               Detached<v1::DetectPedestriansRequest, v1::DetectPedestriansResponse>(
                   request, response, backend_),
               validate, &ImagingService::RunDetect);
}

absl::StatusOr<DetectJob> ImagingService::ValidateDetect(const v1::DetectPedestriansRequest& r,
                                                         const RequestLimits& limits,
                                                         DetachedPixels pixels) const {
  return ValidateDetectRequest(r, limits, *models_, pixels);
}

grpc::ServerUnaryReactor* ImagingService::ListModels(grpc::CallbackServerContext* ctx,
                                                     const v1::ListModelsRequest*,
                                                     v1::ListModelsResponse* response) {
  return ServeAtOnce("ListModels", ctx, kRightProcess, [&](const std::string&) {
    for (const HogModel* m : models_->List()) {
      v1::DetectorModel* out = response->add_models();
      out->set_name(m->name);
      out->set_window_width(static_cast<std::uint32_t>(m->window_width));
      out->set_window_height(static_cast<std::uint32_t>(m->window_height));
      out->set_descriptor_size(static_cast<std::uint32_t>(m->DescriptorSize()));
      out->set_description(m->description);
      out->set_gamma_correction(m->gamma_correction);
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ImagingService::GetServerInfo(grpc::CallbackServerContext* ctx,
                                                        const v1::GetServerInfoRequest*,
                                                        v1::ServerInfo* response) {
  return ServeAtOnce("GetServerInfo", ctx, kRightProcess, [&](const std::string&) {
    for (FrameSyntax syntax : DecodableFrameSyntaxes()) {
      // Without the helper, the syntaxes whose decoders may abort are not decoded at all.
      const bool sandboxed =
          syntax == FrameSyntax::kJpegLsLossless || syntax == FrameSyntax::kJpegLsNearLossless ||
          syntax == FrameSyntax::kHtj2kLossless || syntax == FrameSyntax::kHtj2kLosslessRpcl ||
          syntax == FrameSyntax::kHtj2k;
      if (sandboxed && frame_sandbox_ == nullptr) continue;
      response->add_decodable_transfer_syntaxes(std::string(FrameSyntaxUid(syntax)));
      // Implicit VR little endian frames hold what explicit VR ones do.
      if (syntax == FrameSyntax::kNative) {
        response->add_decodable_transfer_syntaxes("1.2.840.10008.1.2");
      }
    }
    response->add_encodable_transfer_syntaxes(
        std::string(FrameSyntaxUid(FrameSyntax::kHtj2kLossless)));
    const std::string where =
        decoders_.frames != nullptr ? decoders_.frames->Summary() : std::string("cpu");
    response->set_frame_decoder(where);
    response->set_frame_encoder(where);
    response->set_version(kVersion);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* ImagingService::Deform(grpc::CallbackServerContext* ctx,
                                                 const grpc::ByteBuffer* request,
                                                 grpc::ByteBuffer* response) {
  return Serve(
      "Deform", ctx,
      DetachedResultsOnly<v1::DeformRequest, v1::DeformResponse>(request, response, backend_),
      &ValidateDeformRequest, &ImagingService::RunDeform);
}

absl::Status ImagingService::CompleteFromResident(MorphologyJob* job,
                                                  const v1::MorphologyRequest& request,
                                                  absl::string_view identity) {
  if (job->input.kind != ImageInput::Kind::kHandle) return absl::OkStatus();
  if (job->steps_await_spacing) {
    absl::StatusOr<std::shared_ptr<const StoredImage>> stored =
        store_->Get(identity, job->input.handle);
    if (!stored.ok()) return AtField(stored.status(), job->input.field);
    CUIMG_RETURN_IF_ERROR(ResolveMorphologyOnResident(
        request, (*stored)->spacing, (*stored)->image.extent(), options_.limits, job));
  }
  // The object's shape is known now: refuse what does not suit it before it is queued.
  CUIMG_ASSIGN_OR_RETURN(ImageView shape,
                         InputShape(job->input, identity, *store_, options_.limits));
  CUIMG_RETURN_IF_ERROR(CheckMorphologyInput(shape, *job));
  if (job->marker.has_value() && job->marker->kind == ImageInput::Kind::kHandle) {
    CUIMG_ASSIGN_OR_RETURN(ImageView marker,
                           InputShape(*job->marker, identity, *store_, options_.limits));
    CUIMG_RETURN_IF_ERROR(CheckMarkerShape(marker, shape, "marker"));
  }
  return absl::OkStatus();
}

absl::Status ImagingService::CompleteFromResident(LabelJob* job, const v1::LabelRequest&,
                                                  absl::string_view identity) {
  if (job->input.kind != ImageInput::Kind::kHandle) return absl::OkStatus();
  CUIMG_ASSIGN_OR_RETURN(ImageView shape,
                         InputShape(job->input, identity, *store_, options_.limits));
  CUIMG_RETURN_IF_ERROR(CheckLabelInput(shape, *job));
  if (job->intensity.has_value() && job->intensity->kind == ImageInput::Kind::kHandle) {
    CUIMG_ASSIGN_OR_RETURN(ImageView intensity,
                           InputShape(*job->intensity, identity, *store_, options_.limits));
    CUIMG_RETURN_IF_ERROR(CheckLabelIntensity(intensity, shape));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> ImagingService::RequestWork(const MorphologyJob& job,
                                                   absl::string_view identity) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, *store_, options_.limits));
  return MorphologyWork(in.extent, job.steps, WorkModelOf(backend_->name()));
}

absl::StatusOr<double> ImagingService::RequestWork(const LabelJob& job,
                                                   absl::string_view identity) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, *store_, options_.limits));
  return LabelWork(in.extent, job.spec, job.intensity.has_value());
}

absl::StatusOr<double> ImagingService::RequestWork(const GradientJob& job,
                                                   absl::string_view identity) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, *store_, options_.limits));
  return GradientWork(in.extent, job.spec);
}

absl::StatusOr<double> ImagingService::RequestWork(const PyramidJob& job,
                                                   absl::string_view identity) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, *store_, options_.limits));
  // The output type does not change the levels' sizes; the input's stands in until resolved.
  PyramidSpec spec = job.spec;
  if (job.output_input_type) spec.output_type = in.type;
  absl::StatusOr<std::vector<PyramidLevel>> levels = PlanPyramidLevels(in.type, in.extent, spec);
  return levels.ok() ? PyramidWork(*levels) : 0.0;
}

absl::StatusOr<double> ImagingService::RequestWork(const DetectJob& job,
                                                   absl::string_view identity) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, *store_, options_.limits));
  absl::StatusOr<DetectGeometry> geometry =
      PlanDetection(in.extent, job.model->window_width, job.model->window_height, job.spec);
  return geometry.ok() ? DetectWork(*geometry, job.model->DescriptorSize()) : 0.0;
}

absl::StatusOr<double> ImagingService::RequestWork(const DeformJob& job,
                                                   absl::string_view identity) {
  std::uint64_t vertices = job.mesh.view.vertex_count;
  std::uint64_t triangles = job.mesh.view.triangle_count;
  if (job.mesh.kind == MeshInput::Kind::kHandle) {
    absl::StatusOr<ResidentInfo> info = store_->Describe(identity, job.mesh.handle);
    if (!info.ok()) return AtField(info.status(), "mesh.handle");
    vertices = info->vertex_count;
    triangles = info->triangle_count;
  }
  return DeformWork(vertices, triangles, job.lattice.ControlPointCount());
}

void ToProto(const ResidentInfo& info, v1::ResidentObject* out) {
  out->set_handle(info.handle);
  out->set_size_bytes(info.size_bytes);
  out->set_ttl_seconds(info.ttl_seconds);
  out->set_device(info.device);
  if (info.kind == ResidentKind::kMesh) {
    out->set_kind(v1::RESIDENT_KIND_MESH);
    out->set_vertex_count(static_cast<std::uint32_t>(info.vertex_count));
    out->set_triangle_count(static_cast<std::uint32_t>(info.triangle_count));
    return;
  }
  out->set_kind(v1::RESIDENT_KIND_IMAGE);
  out->set_pixel_type(PixelTypeToProto(info.type));
  out->set_width(static_cast<std::uint32_t>(info.extent.width));
  out->set_height(static_cast<std::uint32_t>(info.extent.height));
  out->set_depth(info.extent.depth > 1 ? static_cast<std::uint32_t>(info.extent.depth) : 0);
  out->set_channels(static_cast<std::uint32_t>(info.channels));
}

}  // namespace cuimg
