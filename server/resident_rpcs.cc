// The resident-object RPCs of ImagingService: Upload (client stream), Download (server stream),
// Release and ListResident.
#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/imaging_service.h"
#include "server/proto_conversion.h"

namespace cuimg {
namespace {

constexpr std::uint32_t kDefaultChunkBytes = 1 << 20;

// Accumulates an Upload stream into one image, checking sizes before every copy.
class UploadReactor final : public grpc::ServerReadReactor<v1::UploadRequest> {
 public:
  UploadReactor(ImagingService* service, grpc::CallbackServerContext* ctx,
                v1::UploadResponse* response)
      : service_(service),
        ctx_(ctx),
        response_(response),
        call_("Upload", ctx, &service->metrics()) {
    call_.MarkStarted();
    absl::StatusOr<std::string> identity =
        service_->Authorize(*ctx, kRightProcess | kRightResident, "Upload");
    if (!identity.ok()) {
      service_->RecordRefusal(ctx, identity.status(), false);
      Finish(call_.Complete(identity.status()));
      return;
    }
    call_.set_identity(*identity);
    StartRead(&message_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client half-closed (or the call broke)
      Finish(call_.Complete(Complete()));
      return;
    }
    const absl::Status status = image_ == nullptr && mesh_ == nullptr ? Begin() : Append();
    if (!status.ok()) {
      if (status.code() == absl::StatusCode::kResourceExhausted) {
        service_->RecordRefusal(ctx_, status, transient_);
      }
      Finish(call_.Complete(status));
      return;
    }
    message_.Clear();
    StartRead(&message_);
  }

  void OnDone() override { delete this; }

 private:
  absl::Status Begin() {
    switch (message_.content_case()) {
      case v1::UploadRequest::kImage:
        break;
      case v1::UploadRequest::kMesh:
        return BeginMesh();
      case v1::UploadRequest::kChunk:
        return absl::InvalidArgumentError("chunk: the first message must carry image or mesh");
      case v1::UploadRequest::CONTENT_NOT_SET:
        return absl::InvalidArgumentError("content: the first message must carry image or mesh");
    }
    CUIMG_ASSIGN_OR_RETURN(ImageInput header,
                           ValidateUploadHeader(message_.image(), service_->options().limits));
    const std::uint64_t size =
        static_cast<std::uint64_t>(header.extent.Pixels()) * header.channels * PixelSize(header.type);
    if (size > service_->store().budget_bytes()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "image: ", size, " bytes exceeds the per-client resident budget of ",
          service_->store().budget_bytes(), " bytes"));
    }
    CUIMG_RETURN_IF_ERROR(Reserve(size, "image"));
    ttl_seconds_ = message_.ttl_seconds();
    image_ = std::make_unique<StoredImage>();
    image_->image = Image(header.type, header.extent, header.channels);
    image_->spacing = message_.image().spacing();
    return Copy(header.bytes, "image.data");
  }

  absl::Status BeginMesh() {
    const v1::Mesh& m = message_.mesh();
    CUIMG_RETURN_IF_ERROR(ValidateUploadMeshHeader(m, service_->options().limits));
    const std::uint64_t size = (std::uint64_t{m.vertex_count()} + m.triangle_count()) * 12;
    if (size > service_->store().budget_bytes()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "mesh: ", size, " bytes exceeds the per-client resident budget of ",
          service_->store().budget_bytes(), " bytes"));
    }
    CUIMG_RETURN_IF_ERROR(Reserve(size, "mesh"));
    ttl_seconds_ = message_.ttl_seconds();
    mesh_ = std::make_unique<Mesh>();
    mesh_->positions.resize(std::size_t{m.vertex_count()} * 3);
    mesh_->triangles.resize(std::size_t{m.triangle_count()} * 3);
    CUIMG_RETURN_IF_ERROR(CopyMesh(m.positions(), "mesh.positions"));
    return CopyMesh(m.triangles(), "mesh.triangles");
  }

  // The whole object is allocated when the header arrives, so its bytes count in flight from
  // then on: a client cannot hold many half-sent uploads' memory.
  absl::Status Reserve(std::uint64_t bytes, absl::string_view field) {
    absl::StatusOr<InflightBudget::Reservation> r = service_->budget().Reserve(bytes, field);
    if (!r.ok()) {
      transient_ = bytes <= service_->budget().per_request_bytes();
      return r.status();
    }
    reservation_ = *std::move(r);
    return absl::OkStatus();
  }

  absl::Status Append() {
    if (message_.content_case() != v1::UploadRequest::kChunk) {
      return absl::InvalidArgumentError("content: messages after the first must carry chunk");
    }
    if (message_.ttl_seconds() != 0) {
      return absl::InvalidArgumentError("ttl_seconds: only allowed in the first message");
    }
    return mesh_ != nullptr ? CopyMesh(message_.chunk(), "chunk") : Copy(message_.chunk(), "chunk");
  }

  // A mesh's bytes arrive as positions, then triangles.
  absl::Status CopyMesh(absl::string_view bytes, absl::string_view field) {
    const std::size_t pos_bytes = mesh_->positions.size() * 4;
    const std::size_t total = pos_bytes + mesh_->triangles.size() * 4;
    if (bytes.size() > total - received_) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": the stream carries more than the mesh's ", total, " bytes"));
    }
    while (!bytes.empty()) {
      const bool in_positions = received_ < pos_bytes;
      auto* dst = in_positions
                      ? reinterpret_cast<char*>(mesh_->positions.data()) + received_
                      : reinterpret_cast<char*>(mesh_->triangles.data()) + (received_ - pos_bytes);
      const std::size_t n = std::min(bytes.size(), in_positions ? pos_bytes - received_
                                                                : total - received_);
      std::memcpy(dst, bytes.data(), n);
      received_ += n;
      bytes.remove_prefix(n);
    }
    return absl::OkStatus();
  }

  absl::Status Copy(absl::string_view bytes, absl::string_view field) {
    const std::size_t total = image_->image.size_bytes();
    if (bytes.size() > total - received_) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": the stream carries more than the image's ", total, " bytes"));
    }
    std::memcpy(image_->image.bytes() + received_, bytes.data(), bytes.size());
    received_ += bytes.size();
    return absl::OkStatus();
  }

  absl::Status Complete() {
    if (ctx_->IsCancelled()) return absl::CancelledError("the client cancelled the upload");
    if (mesh_ != nullptr) return CompleteMesh();
    if (image_ == nullptr) {
      return absl::InvalidArgumentError("content: the stream carried no image or mesh");
    }
    if (received_ != image_->image.size_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat("chunk: the stream ended after ", received_,
                                                     " of ", image_->image.size_bytes(),
                                                     " bytes"));
    }
    service_->metrics().AddBytes(static_cast<std::int64_t>(received_), 0);
    CUIMG_ASSIGN_OR_RETURN(
        ResidentInfo info,
        service_->store().Put(call_.identity(),
                              std::shared_ptr<const StoredImage>(std::move(image_)), ttl_seconds_));
    ToProto(info, response_->mutable_object());
    return absl::OkStatus();
  }

  absl::Status CompleteMesh() {
    const std::size_t total = (mesh_->positions.size() + mesh_->triangles.size()) * 4;
    if (received_ != total) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk: the stream ended after ", received_, " of ", total, " bytes"));
    }
    CUIMG_RETURN_IF_ERROR(ValidateMesh(*mesh_, "mesh"));
    service_->metrics().AddBytes(static_cast<std::int64_t>(received_), 0);
    CUIMG_ASSIGN_OR_RETURN(std::shared_ptr<const BackendMesh> mesh,
                           service_->backend().UploadMesh(mesh_->view(), &call_.times()));
    CUIMG_ASSIGN_OR_RETURN(ResidentInfo info,
                           service_->store().PutMesh(call_.identity(), std::move(mesh),
                                                     ttl_seconds_));
    ToProto(info, response_->mutable_object());
    return absl::OkStatus();
  }

  ImagingService* service_;
  grpc::CallbackServerContext* ctx_;
  v1::UploadResponse* response_;
  CallScope call_;
  v1::UploadRequest message_;
  std::unique_ptr<StoredImage> image_;
  std::unique_ptr<Mesh> mesh_;
  std::size_t received_ = 0;
  std::uint32_t ttl_seconds_ = 0;
  InflightBudget::Reservation reservation_;
  bool transient_ = false;
};

// Streams a resident image back: header and first chunk, then chunks.
class DownloadReactor final : public grpc::ServerWriteReactor<v1::DownloadResponse> {
 public:
  DownloadReactor(ImagingService* service, grpc::CallbackServerContext* ctx,
                  const v1::DownloadRequest* request)
      : service_(service), call_("Download", ctx, &service->metrics()) {
    call_.MarkStarted();
    absl::StatusOr<std::string> identity =
        service_->Authorize(*ctx, kRightProcess | kRightResident, "Download");
    if (!identity.ok()) service_->RecordRefusal(ctx, identity.status(), false);
    call_.set_identity(identity.ok() ? *identity : "");
    const absl::Status status = identity.ok() ? Start(*request, *identity) : identity.status();
    if (!status.ok()) Finish(call_.Complete(status));
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(call_.Complete(absl::CancelledError("the client stopped reading")));
      return;
    }
    if (offset_ == bytes_.size()) {
      service_->metrics().AddBytes(0, static_cast<std::int64_t>(offset_));
      Finish(call_.Complete(absl::OkStatus()));
      return;
    }
    message_.Clear();
    NextChunk(message_.mutable_chunk());
    StartWrite(&message_);
  }

  void OnDone() override { delete this; }

 private:
  absl::Status Start(const v1::DownloadRequest& request, const std::string& identity) {
    if (request.chunk_bytes() != 0 &&
        (request.chunk_bytes() < (1u << 16) || request.chunk_bytes() > (1u << 24))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "chunk_bytes: ", request.chunk_bytes(), " is not in [65536, 16777216]"));
    }
    chunk_ = request.chunk_bytes() == 0 ? kDefaultChunkBytes : request.chunk_bytes();
    absl::StatusOr<ResidentInfo> info = service_->store().Describe(identity, request.handle());
    if (!info.ok()) {
      return absl::Status(info.status().code(), absl::StrCat("handle: ", info.status().message()));
    }
    if (info->kind == ResidentKind::kMesh) return StartMesh(identity, request.handle());
    absl::StatusOr<std::shared_ptr<const StoredImage>> image =
        service_->store().Get(identity, request.handle());
    if (!image.ok()) {
      return absl::Status(image.status().code(),
                          absl::StrCat("handle: ", image.status().message()));
    }
    image_ = *std::move(image);
    bytes_ = absl::string_view(reinterpret_cast<const char*>(image_->image.bytes()),
                               image_->image.size_bytes());
    v1::Image* header = message_.mutable_image();
    SetImageHeader(image_->image.view(), header);
    *header->mutable_spacing() = image_->spacing;
    NextChunk(header->mutable_data());
    StartWrite(&message_);
    return absl::OkStatus();
  }

  // Meshes stream positions then triangles; the first message splits its bytes between them.
  absl::Status StartMesh(const std::string& identity, const std::string& handle) {
    absl::StatusOr<std::shared_ptr<const BackendMesh>> mesh =
        service_->store().GetMesh(identity, handle);
    if (!mesh.ok()) {
      return absl::Status(mesh.status().code(), absl::StrCat("handle: ", mesh.status().message()));
    }
    CUIMG_ASSIGN_OR_RETURN(Mesh host, service_->backend().DownloadMesh(**mesh));
    mesh_bytes_.resize((host.positions.size() + host.triangles.size()) * 4);
    std::memcpy(mesh_bytes_.data(), host.positions.data(), host.positions.size() * 4);
    std::memcpy(mesh_bytes_.data() + host.positions.size() * 4, host.triangles.data(),
                host.triangles.size() * 4);
    bytes_ = mesh_bytes_;
    v1::Mesh* header = message_.mutable_mesh();
    header->set_vertex_count(static_cast<std::uint32_t>(host.vertex_count()));
    header->set_triangle_count(static_cast<std::uint32_t>(host.triangle_count()));
    std::string first;
    NextChunk(&first);
    const std::size_t pos_bytes = host.positions.size() * 4;
    header->set_positions(first.substr(0, std::min(first.size(), pos_bytes)));
    if (first.size() > pos_bytes) header->set_triangles(first.substr(pos_bytes));
    StartWrite(&message_);
    return absl::OkStatus();
  }

  void NextChunk(std::string* out) {
    const std::size_t n = std::min<std::size_t>(chunk_, bytes_.size() - offset_);
    out->assign(bytes_.data() + offset_, n);
    offset_ += n;
  }

  ImagingService* service_;
  CallScope call_;
  std::shared_ptr<const StoredImage> image_;
  std::string mesh_bytes_;
  absl::string_view bytes_;  // the object's bytes: the image's pixels or the mesh's arrays
  v1::DownloadResponse message_;
  std::size_t chunk_ = kDefaultChunkBytes;
  std::size_t offset_ = 0;
};

}  // namespace

grpc::ServerReadReactor<v1::UploadRequest>* ImagingService::Upload(
    grpc::CallbackServerContext* ctx, v1::UploadResponse* response) {
  return new UploadReactor(this, ctx, response);
}

grpc::ServerWriteReactor<v1::DownloadResponse>* ImagingService::Download(
    grpc::CallbackServerContext* ctx, const v1::DownloadRequest* request) {
  return new DownloadReactor(this, ctx, request);
}

grpc::ServerUnaryReactor* ImagingService::Release(grpc::CallbackServerContext* ctx,
                                                  const v1::ReleaseRequest* request,
                                                  v1::ReleaseResponse*) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  CallScope call("Release", ctx, metrics_);
  absl::StatusOr<std::string> identity = Authorize(*ctx, kRightResident, "Release");
  if (!identity.ok()) {
    RecordRefusal(ctx, identity.status(), false);
    reactor->Finish(call.Complete(identity.status()));
    return reactor;
  }
  call.set_identity(*identity);
  absl::Status status = store_->Release(*identity, request->handle());
  if (!status.ok()) status = absl::Status(status.code(), absl::StrCat("handle: ", status.message()));
  reactor->Finish(call.Complete(status));
  return reactor;
}

grpc::ServerUnaryReactor* ImagingService::ListResident(grpc::CallbackServerContext* ctx,
                                                       const v1::ListResidentRequest*,
                                                       v1::ListResidentResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  CallScope call("ListResident", ctx, metrics_);
  absl::StatusOr<std::string> identity = Authorize(*ctx, kRightResident, "ListResident");
  if (!identity.ok()) {
    RecordRefusal(ctx, identity.status(), false);
    reactor->Finish(call.Complete(identity.status()));
    return reactor;
  }
  call.set_identity(*identity);
  for (const ResidentInfo& info : store_->List(*identity)) ToProto(info, response->add_objects());
  response->set_used_bytes(store_->UsedBytes(*identity));
  response->set_budget_bytes(store_->budget_bytes());
  reactor->Finish(call.Complete(absl::OkStatus()));
  return reactor;
}

}  // namespace cuimg
