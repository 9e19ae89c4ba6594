#include "server/rpc/imaging_service.h"

#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "proto/wire_contract.h"
#include "server/scheduling/admission.h"
#include "server/rpc/call_messages.h"
#include "server/rpc/image_input.h"
#include "server/validation/proto_conversion.h"
#include "server/rpc/wire_pixels.h"
#include "server/scheduling/work_estimate.h"

namespace cuimg {
namespace {

// A returned result's header: everything but the pixels.
v1::Image* DescribeResult(PixelType type, const Extent& extent, const v1::Spacing& spacing,
                          v1::ImageResult* result) {
  v1::Image* image = result->mutable_image();
  SetImageHeader(ImageView{type, extent, 1, nullptr}, image);
  *image->mutable_spacing() = spacing;
  return image;
}

// Where one result image goes: when it is only returned, into a buffer sent beside the
// response's bytes (`detached`); into an owned image when it also stays resident (then copied
// into the response unless omitted).
class ResultSlot {
 public:
  ResultSlot(const OutputSpec& output, PixelType type, const Extent& extent,
             const v1::Spacing& spacing, v1::ImageResult* result, DetachedResults& detached)
      : output_(output), result_(result) {
    if (!output.keep_resident) {
      DescribeResult(type, extent, spacing, result);
      data_ = detached.Add(result, ImageView{type, extent, 1, nullptr}.Bytes());
      return;
    }
    stored_ = std::make_unique<StoredImage>();
    stored_->image = Image(type, extent, 1);
    stored_->spacing = spacing;
    data_ = stored_->image.bytes();
  }

  void* data() const { return data_; }

  // Stores the result when asked (counting against the caller's budget) and fills the response.
  absl::Status Deliver(ResidentStore& store, absl::string_view identity, absl::string_view field) {
    if (stored_ == nullptr) return absl::OkStatus();
    if (!output_.omit_data) {
      v1::Image* image = result_->mutable_image();
      SetImageHeader(stored_->image.view(), image);
      *image->mutable_spacing() = stored_->spacing;
      image->mutable_data()->assign(reinterpret_cast<const char*>(stored_->image.bytes()),
                                    stored_->image.size_bytes());
    }
    absl::StatusOr<ResidentInfo> info =
        store.Put(identity, std::shared_ptr<const StoredImage>(std::move(stored_)),
                  output_.ttl_seconds);
    if (!info.ok()) {
      return absl::Status(info.status().code(), absl::StrCat(field, ": ", info.status().message()));
    }
    result_->set_handle(info->handle);
    return absl::OkStatus();
  }

 private:
  OutputSpec output_;
  v1::ImageResult* result_;
  std::unique_ptr<StoredImage> stored_;
  void* data_ = nullptr;
};

// The image RPCs' unary reactor: gRPC's default one, plus OnCancel, which hands a client's
// cancellation (or its passed deadline) to the running work through the call's token.
class CancellingReactor final : public grpc::ServerUnaryReactor {
 public:
  CancellingReactor(grpc::CallbackServerContext* ctx, std::shared_ptr<CancelToken> cancel)
      : ctx_(ctx), cancel_(std::move(cancel)) {}
  void OnCancel() override {
    // gRPC cancels a call whose deadline passed too; its clock says which it was.
    if (std::chrono::system_clock::now() >= ctx_->deadline()) {
      cancel_->MarkDeadlinePassed();
    } else {
      cancel_->Cancel();
    }
  }
  void OnDone() override { delete this; }

 private:
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<CancelToken> cancel_;
};

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
      metrics_(metrics),
      models_(models),
      shared_memory_(options.shared_memory.enabled
                         ? std::make_unique<SharedMemoryRegistry>(
                               options.shared_memory, SharedMemoryKeysFor(options.security),
                               backend)
                         : nullptr),
      uploads_(std::make_unique<UploadQuota>(UploadQuotaOptions{
          options.max_uploads_per_identity, options.max_upload_bytes_per_identity != 0
                                                ? options.max_upload_bytes_per_identity
                                                : budget->capacity() / 2})) {}

absl::Status ImagingService::AuthorizeCall(CallScope& call, unsigned rights) {
  absl::StatusOr<std::string> identity =
      cuimg::Authorize(*call.context(), auth_, rights, call.rpc());
  if (!identity.ok()) {
    RecordRefusal(call.context(), identity.status(), false);
    return identity.status();
  }
  call.set_identity(*std::move(identity));
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* ImagingService::ServeAtOnce(
    absl::string_view rpc, grpc::CallbackServerContext* ctx, unsigned rights,
    absl::FunctionRef<absl::Status(const std::string& identity)> body) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  CallScope call(rpc, ctx, metrics_);
  absl::Status status = AuthorizeCall(call, rights);
  if (status.ok()) {
    status = body(call.identity());
    if (!status.ok()) RecordRefusal(ctx, status, false);
  }
  reactor->Finish(call.Complete(status));
  return reactor;
}

void ImagingService::RecordRefusal(grpc::CallbackServerContext* ctx, const absl::Status& status,
                                   bool transient) {
  switch (status.code()) {
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      metrics_->RecordRejection("unauthorized");
      return;
    case absl::StatusCode::kResourceExhausted:
      metrics_->RecordRejection(transient ? "overload" : "too_large");
      break;
    case absl::StatusCode::kUnavailable:
      metrics_->RecordRejection("shutting_down");
      break;
    case absl::StatusCode::kNotFound:  // an unknown model or resident handle
      metrics_->RecordRejection("not_found");
      return;
    default:
      metrics_->RecordRejection("invalid_argument");
      return;
  }
  AddRetryHints(ctx, static_cast<grpc::StatusCode>(status.code()), transient);
}

template <typename Messages, typename Validate, typename Job>
grpc::ServerUnaryReactor* ImagingService::Serve(
    absl::string_view rpc, grpc::CallbackServerContext* ctx, std::shared_ptr<Messages> messages,
    Validate validate,
    absl::Status (ImagingService::*run)(const Job&, CallScope&, typename Messages::Response*)) {
  auto cancel = std::make_shared<CancelToken>(CancelToken::SteadyDeadline(ctx->deadline()),
                                               &hard_stop_);
  grpc::ServerUnaryReactor* reactor = new CancellingReactor(ctx, cancel);
  auto call = std::make_shared<CallScope>(rpc, ctx, metrics_);
  call->set_cancel(cancel.get());
  auto refuse = [&](const absl::Status& status, bool transient) {
    RecordRefusal(ctx, status, transient);
    reactor->Finish(call->Complete(status));
    return reactor;
  };
  // Who first: an unauthenticated caller learns nothing about its request.
  if (absl::Status who = AuthorizeCall(*call, kRightProcess); !who.ok()) {
    reactor->Finish(call->Complete(who));
    return reactor;
  }
  const std::string& identity = call->identity();
  // Full: refuse before parsing, so that shedding twice the capacity costs little of it.
  if (absl::Status room = queue_->CheckRoom(); !room.ok()) {
    return refuse(room, room.code() == absl::StatusCode::kResourceExhausted);
  }
  if (absl::Status parsed = messages->Parse(); !parsed.ok()) return refuse(parsed, false);
  absl::StatusOr<Job> job = messages->Validate(validate, options_.limits);
  if (!job.ok()) return refuse(job.status(), false);
  if (UsesResident(*job)) {
    if (absl::Status may = AuthorizeCall(*call, kRightResident); !may.ok()) {
      reactor->Finish(call->Complete(may));
      return reactor;
    }
  }
  absl::StatusOr<std::uint64_t> bytes =
      EstimateInflightBytes(*job, messages->request(), identity, *store_, options_.limits);
  if (!bytes.ok()) return refuse(bytes.status(), false);
  absl::StatusOr<double> work = RequestWork(*job, identity);
  if (!work.ok()) return refuse(work.status(), false);
  if (absl::Status fits = CheckRequestWork(*work, options_.max_request_work); !fits.ok()) {
    return refuse(fits, false);
  }
  *bytes += messages->detached_request_bytes();
  absl::StatusOr<InflightBudget::Reservation> reservation = budget_->Reserve(*bytes, "request");
  if (!reservation.ok()) {
    return refuse(reservation.status(), *bytes <= budget_->per_request_bytes());
  }
  auto held = std::make_shared<InflightBudget::Reservation>(*std::move(reservation));
  auto shared_job = std::make_shared<Job>(*std::move(job));
  call->set_detached_results(messages->detached_results());
  const absl::Status admitted =
      queue_->Submit([this, call, cancel, shared_job, held, messages, reactor,
                      run](WorkQueue::Admission& admission) {
        call->MarkStarted();
        // The copy out of the received bytes ran before queueing: h2d counts it, not the queue.
        call->times().queue_us -= messages->pixel_copy_us();
        absl::Status status = call->CheckAlive();
        if (status.ok()) {
          status = (this->*run)(*shared_job, *call, messages->response());
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
  if (!admitted.ok()) return refuse(admitted, admitted.code() == absl::StatusCode::kResourceExhausted);
  return reactor;
}

grpc::ServerUnaryReactor* ImagingService::Morphology(grpc::CallbackServerContext* ctx,
                                                     const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  return Serve("Morphology", ctx,
               Detached<v1::MorphologyRequest, v1::MorphologyResponse>(request, response, backend_),
               &ValidateMorphologyRequest, &ImagingService::RunMorphology);
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
                         DetachedPixels pixels) {
    return ValidateDetectRequest(r, limits, *models_, pixels);
  };
  return Serve("DetectPedestrians", ctx,
               Detached<v1::DetectPedestriansRequest, v1::DetectPedestriansResponse>(
                   request, response, backend_),
               validate, &ImagingService::RunDetect);
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

grpc::ServerUnaryReactor* ImagingService::Deform(grpc::CallbackServerContext* ctx,
                                                 const grpc::ByteBuffer* request,
                                                 grpc::ByteBuffer* response) {
  return Serve("Deform", ctx,
               DetachedResultsOnly<v1::DeformRequest, v1::DeformResponse>(request, response,
                                                                          backend_),
               &ValidateDeformRequest, &ImagingService::RunDeform);
}

absl::StatusOr<double> ImagingService::RequestWork(const MorphologyJob& job,
                                                   absl::string_view identity) {
  CUIMG_ASSIGN_OR_RETURN(ImageView in, InputShape(job.input, identity, *store_, options_.limits));
  return MorphologyWork(in.extent, job.steps, WorkModelOf(backend_->name()));
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
    if (!info.ok()) {
      return absl::Status(info.status().code(),
                          absl::StrCat("mesh.handle: ", info.status().message()));
    }
    vertices = info->vertex_count;
    triangles = info->triangle_count;
  }
  return DeformWork(vertices, triangles, job.lattice.ControlPointCount());
}

absl::Status ImagingService::RunMorphology(const MorphologyJob& job, CallScope& call,
                                           v1::MorphologyResponse* response) {
  const std::string& identity = call.identity();
  CUIMG_ASSIGN_OR_RETURN(ResolvedImage in,
                         ResolveImage(job.input, call, *store_,
                                      shared_memory_.get(), options_.limits, decode_threads_.get()));
  CUIMG_RETURN_IF_ERROR(CheckMorphologyInput(in.view, job));
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  if (!job.output.shared_memory_region.empty()) {
    return MorphologyIntoSharedMemory(job, in, call, response);
  }
  ResultSlot result(job.output, in.view.type, in.view.extent, in.spacing,
                    response->mutable_result(), *call.detached_results());
  const ImageView out{in.view.type, in.view.extent, 1, result.data()};
  CUIMG_RETURN_IF_ERROR(
      backend_->Morphology(in.view, out, job.steps, &call.times(), call.cancel()));
  metrics_->AddPixels("Morphology", in.view.extent.Pixels());
  return result.Deliver(*store_, identity, "output.keep_resident");
}

absl::Status ImagingService::MorphologyIntoSharedMemory(const MorphologyJob& job,
                                                        const ResolvedImage& in, CallScope& call,
                                                        v1::MorphologyResponse* response) {
  CUIMG_ASSIGN_OR_RETURN(std::shared_ptr<const SharedMemoryRegion> region,
                         FindRegion(shared_memory_.get(), call, job.output.shared_memory_region,
                                    "output.shared_memory.region"));
  const std::size_t bytes = in.view.Bytes();
  CUIMG_ASSIGN_OR_RETURN(std::uint8_t* data,
                         region->Span(job.output.shared_memory_offset, bytes,
                                      "output.shared_memory.offset"));
  // The kernels read the input while writing the output: the two must not share bytes of the
  // object (wherever it is mapped).
  if (in.region != nullptr && SharedBytesOverlap(*in.region, job.input.offset, bytes, *region,
                                                 job.output.shared_memory_offset, bytes)) {
    return absl::InvalidArgumentError(
        "output.shared_memory.offset: the result's bytes overlap the input's");
  }
  const ImageView out{in.view.type, in.view.extent, 1, data};
  CUIMG_RETURN_IF_ERROR(
      backend_->Morphology(in.view, out, job.steps, &call.times(), call.cancel()));
  metrics_->AddPixels("Morphology", in.view.extent.Pixels());
  v1::Image* image = response->mutable_result()->mutable_image();
  SetImageHeader(out, image);
  *image->mutable_spacing() = in.spacing;
  return absl::OkStatus();
}

absl::Status ImagingService::RunGradient(const GradientJob& job, CallScope& call,
                                         v1::GradientResponse* response) {
  const std::string& identity = call.identity();
  CUIMG_ASSIGN_OR_RETURN(ResolvedImage in,
                         ResolveImage(job.input, call, *store_,
                                      shared_memory_.get(), options_.limits, decode_threads_.get()));
  CUIMG_RETURN_IF_ERROR(CheckGradientInput(in.view, job));
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  const Extent& e = in.view.extent;
  DetachedResults& detached = *call.detached_results();
  ResultSlot gx(job.output, PixelType::kF32, e, in.spacing, response->mutable_gx(), detached);
  ResultSlot gy(job.output, PixelType::kF32, e, in.spacing, response->mutable_gy(), detached);
  std::unique_ptr<ResultSlot> magnitude;
  std::unique_ptr<ResultSlot> angle;
  if (job.spec.magnitude) {
    magnitude = std::make_unique<ResultSlot>(job.output, PixelType::kF32, e, in.spacing,
                                             response->mutable_magnitude(), detached);
  }
  if (job.spec.angle) {
    angle = std::make_unique<ResultSlot>(job.output, PixelType::kF32, e, in.spacing,
                                         response->mutable_angle(), detached);
  }
  GradientOutputs out;
  out.gx = static_cast<float*>(gx.data());
  out.gy = static_cast<float*>(gy.data());
  out.magnitude = magnitude ? static_cast<float*>(magnitude->data()) : nullptr;
  out.angle = angle ? static_cast<float*>(angle->data()) : nullptr;
  CUIMG_RETURN_IF_ERROR(backend_->Gradient(in.view, job.spec, out, &call.times(), call.cancel()));
  CUIMG_ASSIGN_OR_RETURN(GradientTaps taps, ComputeGradientTaps(job.spec));
  for (double t : taps.smoothing) response->add_smoothing_taps(static_cast<float>(t));
  for (double t : taps.derivative) response->add_derivative_taps(static_cast<float>(t));
  metrics_->AddPixels("Gradient", e.Pixels());
  CUIMG_RETURN_IF_ERROR(gx.Deliver(*store_, identity, "output.keep_resident"));
  CUIMG_RETURN_IF_ERROR(gy.Deliver(*store_, identity, "output.keep_resident"));
  if (magnitude) CUIMG_RETURN_IF_ERROR(magnitude->Deliver(*store_, identity, "output.keep_resident"));
  if (angle) CUIMG_RETURN_IF_ERROR(angle->Deliver(*store_, identity, "output.keep_resident"));
  return absl::OkStatus();
}

absl::Status ImagingService::RunPyramid(const PyramidJob& job_in, CallScope& call,
                                        v1::PyramidResponse* response) {
  PyramidJob job = job_in;
  const std::string& identity = call.identity();
  CUIMG_ASSIGN_OR_RETURN(ResolvedImage in,
                         ResolveImage(job.input, call, *store_,
                                      shared_memory_.get(), options_.limits, decode_threads_.get()));
  CUIMG_RETURN_IF_ERROR(CheckPyramidInput(in.view, &job));
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  CUIMG_ASSIGN_OR_RETURN(std::vector<PyramidLevel> levels,
                         PlanPyramidLevels(in.view.type, in.view.extent, job.spec));
  // The backend writes the packed levels once: into pieces that gRPC sends level by level when
  // they are only returned (each piece one pinned buffer where the pool has one), else into one
  // buffer that the resident copies are taken from.
  DetachedResults& detached = *call.detached_results();
  const bool only_returned = !job.output.keep_resident;
  std::vector<PackedPiece> pieces;
  std::vector<std::shared_ptr<HostBuffer>> buffers;
  std::vector<std::uint8_t> packed;
  if (only_returned) {
    pieces = GroupPyramidLevels(levels, options_.pinned_message_max_bytes);
    for (PackedPiece& piece : pieces) {
      buffers.push_back(detached.Allocate(piece.bytes));
      piece.data = buffers.back()->data();
    }
  } else {
    packed.resize(PyramidOutputBytes(levels));
    pieces.push_back(PackedPiece{0, packed.size(), packed.data()});
  }
  CUIMG_RETURN_IF_ERROR(backend_->Pyramid(in.view, job.spec, pieces, &call.times(), call.cancel()));
  std::size_t piece = 0;
  for (const PyramidLevel& level : levels) {
    v1::PyramidLevel* out = response->add_levels();
    out->set_index(static_cast<std::uint32_t>(level.index));
    out->set_scale(level.scale);
    out->set_width(static_cast<std::uint32_t>(level.width));
    out->set_height(static_cast<std::uint32_t>(level.height));
    const Extent extent{level.width, level.height, 1};
    if (only_returned) {
      while (level.offset_bytes >= pieces[piece].offset + pieces[piece].bytes) ++piece;
      DescribeResult(job.spec.output_type, extent, in.spacing, out->mutable_result());
      detached.Attach(out->mutable_result(), buffers[piece],
                       level.offset_bytes - pieces[piece].offset, level.bytes);
      continue;
    }
    ResultSlot slot(job.output, job.spec.output_type, extent, in.spacing, out->mutable_result(),
                    detached);
    std::memcpy(slot.data(), packed.data() + level.offset_bytes, level.bytes);
    CUIMG_RETURN_IF_ERROR(slot.Deliver(*store_, identity, "output.keep_resident"));
  }
  metrics_->AddPixels("Pyramid", in.view.extent.Pixels());
  return absl::OkStatus();
}

absl::Status ImagingService::RunDetect(const DetectJob& job, CallScope& call,
                                       v1::DetectPedestriansResponse* response) {
  const HogModel& model = *job.model;
  const DetectSpec& spec = job.spec;
  CUIMG_ASSIGN_OR_RETURN(ResolvedImage in,
                         ResolveImage(job.input, call, *store_,
                                      shared_memory_.get(), options_.limits, decode_threads_.get()));
  CUIMG_RETURN_IF_ERROR(CheckDetectInput(in.view, job));
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  CUIMG_ASSIGN_OR_RETURN(DetectResult result,
                         backend_->DetectPedestrians(in.view, model, spec, &call.times(),
                                                     call.cancel()));
  CUIMG_RETURN_IF_ERROR(CheckGroupedHits(result.hits.size(), spec, options_.max_grouped_hits));
  for (const Detection& d : FinishDetections(result.geometry, std::move(result.hits), spec)) {
    v1::Detection* out = response->add_detections();
    out->set_x(d.x);
    out->set_y(d.y);
    out->set_width(d.width);
    out->set_height(d.height);
    out->set_score(d.score);
    out->set_scale(d.scale);
  }
  response->set_levels(static_cast<std::uint32_t>(result.geometry.levels.size()));
  response->set_windows(static_cast<std::uint64_t>(result.geometry.windows));
  response->set_model(model.name);
  metrics_->AddPixels("DetectPedestrians", in.view.extent.Pixels());
  return absl::OkStatus();
}

absl::Status ImagingService::RunDeform(const DeformJob& job, CallScope& call,
                                       v1::DeformResponse* response) {
  const std::string& identity = call.identity();
  std::shared_ptr<const BackendMesh> mesh;
  if (job.mesh.kind == MeshInput::Kind::kHandle) {
    absl::StatusOr<std::shared_ptr<const BackendMesh>> found =
        store_->GetMesh(identity, job.mesh.handle);
    if (!found.ok()) {
      return absl::Status(found.status().code(),
                          absl::StrCat("mesh.handle: ", found.status().message()));
    }
    mesh = *std::move(found);
  } else {
    CUIMG_ASSIGN_OR_RETURN(mesh, backend_->UploadMesh(job.mesh.view, &call.times()));
  }
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  const std::size_t floats = mesh->vertex_count() * 3;
  // Positions and normals go beside the response's bytes (wire_pixels.h).
  auto output = [&](int field) {
    return static_cast<float*>(
        call.detached_results()->AddBytes(response, field, floats * sizeof(float)));
  };
  float* positions = nullptr;
  float* normals = nullptr;
  if (!job.output.omit_data) {
    if (WantsPositions(job.outputs)) {
      positions = output(v1::DeformResponse::kPositionsFieldNumber);
    }
    if (WantsNormals(job.outputs)) {
      normals = output(v1::DeformResponse::kNormalsFieldNumber);
    }
  }
  std::shared_ptr<const BackendMesh> kept;
  CUIMG_RETURN_IF_ERROR(backend_->Deform(*mesh, job.lattice, job.outputs, positions, normals,
                                         job.output.keep_resident ? &kept : nullptr,
                                         &call.times(), call.cancel()));
  response->set_vertex_count(static_cast<std::uint32_t>(mesh->vertex_count()));
  metrics_->AddPixels("Deform", static_cast<std::int64_t>(mesh->vertex_count()));
  if (kept != nullptr) {
    CUIMG_RETURN_IF_ERROR(CheckKeptMesh(*kept, positions));
    absl::StatusOr<ResidentInfo> info = store_->PutMesh(identity, kept, job.output.ttl_seconds);
    if (!info.ok()) {
      return absl::Status(info.status().code(),
                          absl::StrCat("output.keep_resident: ", info.status().message()));
    }
    response->set_handle(info->handle);
  }
  return absl::OkStatus();
}

absl::Status ImagingService::CheckKeptMesh(const BackendMesh& kept, const float* positions) {
  // A resident mesh must pass what an uploaded one passes (ValidateMesh): huge but finite
  // displacements can carry positions past the float range. The returned positions are the kept
  // ones when the call asked for them (the triangles are the source mesh's, valid already);
  // otherwise the kept mesh is read back.
  absl::Status valid;
  if (positions != nullptr) {
    valid = ValidateMesh(MeshView{positions, kept.vertex_count(), nullptr, 0}, "deformed mesh");
  } else {
    CUIMG_ASSIGN_OR_RETURN(Mesh host, backend_->DownloadMesh(kept));
    valid = ValidateMesh(host, "deformed mesh");
  }
  if (valid.ok()) return valid;
  return absl::InvalidArgumentError(absl::StrCat(
      "output.keep_resident: the lattice moves the mesh out of the float range, so it cannot be "
      "kept resident: ", valid.message()));
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
