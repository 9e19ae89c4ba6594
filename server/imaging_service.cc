#include "server/imaging_service.h"

#include <cstring>
#include <memory>

#include "cuimg/common/status_macros.h"
#include "server/image_input.h"
#include "server/proto_conversion.h"

namespace cuimg {

ImagingService::ImagingService(const ServerOptions& options, Backend* backend, WorkQueue* queue,
                               ResidentStore* store, ServerMetrics* metrics)
    : options_(options), backend_(backend), queue_(queue), store_(store), metrics_(metrics) {}

grpc::ServerUnaryReactor* ImagingService::Morphology(grpc::CallbackServerContext* ctx,
                                                     const v1::MorphologyRequest* request,
                                                     v1::MorphologyResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  auto call = std::make_shared<CallScope>("Morphology", ctx, metrics_);
  absl::StatusOr<MorphologyJob> job = ValidateMorphologyRequest(*request, options_.limits);
  if (!job.ok()) {
    metrics_->RecordRejection("invalid_argument");
    reactor->Finish(call->Complete(job.status()));
    return reactor;
  }
  auto shared_job = std::make_shared<MorphologyJob>(*std::move(job));
  const absl::Status admitted = queue_->Submit([this, call, shared_job, request, response,
                                                reactor] {
    call->MarkStarted();
    const absl::Status status = RunMorphology(*shared_job, *request, *call, response);
    reactor->Finish(call->Complete(status));
  });
  if (!admitted.ok()) {
    metrics_->RecordRejection(admitted.code() == absl::StatusCode::kResourceExhausted
                                  ? "overload"
                                  : "shutting_down");
    ctx->AddTrailingMetadata("cuimg-retry-after-ms", "100");
    reactor->Finish(call->Complete(admitted));
  }
  return reactor;
}

absl::Status ImagingService::RunMorphology(const MorphologyJob& job,
                                           const v1::MorphologyRequest& request, CallScope& call,
                                           v1::MorphologyResponse* response) {
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());
  const std::string identity = CallerIdentity(*call.context());
  CUIMG_ASSIGN_OR_RETURN(ResolvedImage in,
                         ResolveImage(job.input, request.input(), identity, *store_,
                                      options_.limits, &call.times()));
  CUIMG_RETURN_IF_ERROR(CheckMorphologyInput(in.view, job));
  CUIMG_RETURN_IF_ERROR(call.CheckAlive());

  metrics_->AddPixels("Morphology", in.view.extent.Pixels());
  metrics_->AddBytes(static_cast<std::int64_t>(request.ByteSizeLong()),
                     job.output.omit_data ? 0 : static_cast<std::int64_t>(in.view.Bytes()));
  if (!job.output.keep_resident) {
    // The common case: compute straight into the response's bytes.
    v1::Image* out = response->mutable_result()->mutable_image();
    SetImageHeader(in.view, out);
    *out->mutable_spacing() = in.spacing;
    std::string* data = out->mutable_data();
    data->resize(in.view.Bytes());
    const ImageView out_view{in.view.type, in.view.extent, 1, data->data()};
    return backend_->Morphology(in.view, out_view, job.steps, &call.times());
  }
  auto result = std::make_unique<StoredImage>();
  result->image = Image(in.view.type, in.view.extent, 1);
  result->spacing = in.spacing;
  CUIMG_RETURN_IF_ERROR(
      backend_->Morphology(in.view, result->image.view(), job.steps, &call.times()));
  return DeliverResult(job.output, identity, std::move(result), response->mutable_result());
}

absl::Status ImagingService::DeliverResult(const OutputSpec& output, absl::string_view identity,
                                           std::unique_ptr<StoredImage> image,
                                           v1::ImageResult* result) {
  if (!output.omit_data) {
    v1::Image* out = result->mutable_image();
    SetImageHeader(image->image.view(), out);
    *out->mutable_spacing() = image->spacing;
    out->mutable_data()->assign(reinterpret_cast<const char*>(image->image.bytes()),
                                image->image.size_bytes());
  }
  if (output.keep_resident) {
    absl::StatusOr<ResidentInfo> info =
        store_->Put(identity, std::shared_ptr<const StoredImage>(std::move(image)),
                    output.ttl_seconds);
    if (!info.ok()) {
      return absl::Status(info.status().code(),
                          absl::StrCat("output.keep_resident: ", info.status().message()));
    }
    result->set_handle(info->handle);
  }
  return absl::OkStatus();
}

void ToProto(const ResidentInfo& info, v1::ResidentObject* out) {
  out->set_handle(info.handle);
  out->set_kind(v1::RESIDENT_KIND_IMAGE);
  out->set_pixel_type(PixelTypeToProto(info.type));
  out->set_width(static_cast<std::uint32_t>(info.extent.width));
  out->set_height(static_cast<std::uint32_t>(info.extent.height));
  out->set_depth(info.extent.depth > 1 ? static_cast<std::uint32_t>(info.extent.depth) : 0);
  out->set_channels(static_cast<std::uint32_t>(info.channels));
  out->set_size_bytes(info.size_bytes);
  out->set_ttl_seconds(info.ttl_seconds);
  // Resident images live in host memory on every backend for now.
  out->set_device(-1);
}

}  // namespace cuimg
