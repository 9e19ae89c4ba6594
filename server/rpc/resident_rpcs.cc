// The resident-object RPCs of ImagingService: Upload (client stream), Download (server stream),
// Release and ListResident.
#include <grpcpp/alarm.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/rpc/imaging_service.h"
#include "server/state/upload_buffer.h"
#include "server/state/upload_quota.h"
#include "server/validation/proto_conversion.h"

namespace cuimg {
namespace {

constexpr std::uint32_t kDefaultChunkBytes = 1 << 20;

// Accumulates an Upload stream into one image or mesh. Nothing is allocated for the declared
// size: the buffer grows as bytes arrive (upload_buffer.h), the identity's open uploads are
// bounded in number and declared bytes (upload_quota.h), and a stream that sends nothing for
// upload_idle_timeout_ms is ended, freeing what it held. The idle timer runs on gRPC's alarm
// thread, concurrently with the read callbacks: `mu_` orders the two, and the reactor lives until
// both gRPC (OnDone) and any armed timer have let go of it.
class UploadReactor final : public grpc::ServerReadReactor<v1::UploadRequest> {
 public:
  UploadReactor(ImagingService* service, grpc::CallbackServerContext* ctx,
                v1::UploadResponse* response)
      : service_(service),
        ctx_(ctx),
        response_(response),
        call_("Upload", ctx, &service->metrics()),
        idle_timeout_(absl::Milliseconds(service->options().upload_idle_timeout_ms)) {
    call_.MarkStarted();
    if (absl::Status who = service_->AuthorizeCall(call_, kRightProcess | kRightResident);
        !who.ok()) {
      Finish(call_.Complete(who));
      return;
    }
    absl::StatusOr<UploadQuota::Slot> slot = service_->uploads().Open(call_.identity());
    if (!slot.ok()) {
      Finish(call_.Complete(slot.status()));
      return;
    }
    slot_ = *std::move(slot);
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_activity_ = absl::Now();
      ArmIdleTimerLocked(last_activity_ + idle_timeout_);
    }
    StartRead(&message_);
  }

  void OnReadDone(bool ok) override {
    absl::Status status;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (finished_) return;  // the idle timer ended the call; this read failed with it
      last_activity_ = absl::Now();
      if (!ok) {  // the client half-closed (or the call broke)
        status = Complete();
      } else {
        status = buffer_ == nullptr ? Begin() : Append();
        message_.Clear();
      }
      if (!ok || !status.ok()) {
        finished_ = true;
        ReleaseLocked();
      }
    }
    if (!ok || !status.ok()) {
      FinishWith(status);
      return;
    }
    // Outside mu_ like Finish; gRPC does not call OnDone while this callback runs, so a timer
    // that finished the call meanwhile only makes this read fail.
    StartRead(&message_);
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_ = true;
      ReleaseLocked();
      // The timer's callback (with ok = false) then drops its reference promptly.
      if (alarm_ != nullptr) alarm_->Cancel();
    }
    Unref();
  }

 private:
  // Arms the idle check for `due`; the timer holds a reference until its callback ran.
  void ArmIdleTimerLocked(absl::Time due) {
    refs_.fetch_add(1);
    // This may run inside the previous alarm's callback, and the last Unref may too: destroying
    // an alarm from its own callback is safe (gRPC's alarm holds itself until the callback
    // returns).
    alarm_ = std::make_unique<grpc::Alarm>();
    alarm_->Set(absl::ToChronoTime(due), [this](bool fired) { OnIdleTimer(fired); });
  }

  void OnIdleTimer(bool fired) {
    bool expired = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (fired && !finished_) {
        const absl::Time due = last_activity_ + idle_timeout_;
        if (absl::Now() >= due) {
          expired = true;
          finished_ = true;
          ReleaseLocked();
        } else {
          ArmIdleTimerLocked(due);
        }
      }
    }
    if (expired) {
      // Finishing with a read pending ends it too (OnReadDone sees finished_).
      FinishWith(MakeError(
          absl::StatusCode::kDeadlineExceeded, ErrorReason::kIdleTimeout, "",
          absl::StrCat("nothing received for ", absl::ToInt64Milliseconds(idle_timeout_),
                       " ms (upload_idle_timeout_ms); the upload was ended and its bytes freed")));
    }
    Unref();
  }

  void Unref() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }

  // Called once, outside mu_ (Finish may run gRPC's callbacks).
  void FinishWith(const absl::Status& status) { Finish(call_.Complete(status)); }

  // Frees the bytes received and the identity's upload slot.
  void ReleaseLocked() {
    buffer_.reset();
    slot_.Release();
  }

  absl::Status Begin() {
    std::uint64_t size = 0;
    absl::string_view field;
    switch (message_.content_case()) {
      case v1::UploadRequest::kImage: {
        CUIMG_ASSIGN_OR_RETURN(ImageInput header,
                               ValidateUploadHeader(message_.image(), service_->options().limits));
        image_ = header;
        image_.bytes = absl::string_view();  // points into message_, which is reused
        spacing_ = message_.image().spacing();
        size = static_cast<std::uint64_t>(header.extent.Pixels()) * header.channels *
               PixelSize(header.type);
        field = "image";
        break;
      }
      case v1::UploadRequest::kMesh: {
        const v1::Mesh& m = message_.mesh();
        CUIMG_RETURN_IF_ERROR(ValidateUploadMeshHeader(m, service_->options().limits));
        mesh_ = true;
        vertex_count_ = m.vertex_count();
        triangle_count_ = m.triangle_count();
        size = (std::uint64_t{m.vertex_count()} + m.triangle_count()) * 12;
        field = "mesh";
        break;
      }
      case v1::UploadRequest::kChunk:
        return InvalidFieldError(ErrorReason::kMessageOutOfOrder, "chunk",
                                 "the first message must carry image or mesh");
      case v1::UploadRequest::CONTENT_NOT_SET:
        return InvalidFieldError(ErrorReason::kFieldRequired, "content",
                                 "the first message must carry image or mesh");
    }
    CUIMG_RETURN_IF_ERROR(AtField(service_->store().CheckRoom(call_.identity(), size), field));
    CUIMG_ASSIGN_OR_RETURN(std::unique_ptr<UploadBuffer> buffer,
                           UploadBuffer::Create(&service_->budget(), size, field));
    CUIMG_RETURN_IF_ERROR(slot_.Declare(size, field));
    ttl_seconds_ = message_.ttl_seconds();
    buffer_ = std::move(buffer);
    if (!mesh_) return buffer_->Append(message_.image().data(), "image.data");
    // A mesh's bytes arrive as positions, then triangles (ValidateUploadMeshHeader checked that
    // triangles come only after every position).
    CUIMG_RETURN_IF_ERROR(buffer_->Append(message_.mesh().positions(), "mesh.positions"));
    return buffer_->Append(message_.mesh().triangles(), "mesh.triangles");
  }

  absl::Status Append() {
    switch (message_.content_case()) {
      case v1::UploadRequest::kChunk:
        break;
      case v1::UploadRequest::kImage:
      case v1::UploadRequest::kMesh:
        return InvalidFieldError(ErrorReason::kMessageOutOfOrder,
                                 message_.has_image() ? "image" : "mesh",
                                 "only the first message may carry it; later ones carry chunk");
      case v1::UploadRequest::CONTENT_NOT_SET:
        return InvalidFieldError(ErrorReason::kFieldRequired, "content",
                                 "messages after the first must carry chunk");
    }
    if (message_.ttl_seconds() != 0) {
      return InvalidFieldError(ErrorReason::kMessageOutOfOrder, "ttl_seconds",
                               "only allowed in the first message");
    }
    return buffer_->Append(message_.chunk(), "chunk");
  }

  absl::Status Complete() {
    if (ctx_->IsCancelled()) {
      return MakeError(absl::StatusCode::kCancelled, ErrorReason::kCancelled, "",
                       "the client cancelled the upload");
    }
    if (buffer_ == nullptr) {
      return InvalidFieldError(ErrorReason::kFieldRequired, "content",
                               "the stream carried no image or mesh");
    }
    if (buffer_->received() != buffer_->declared()) {
      return InvalidFieldError(ErrorReason::kDataSizeMismatch, "chunk",
                               absl::StrCat("the stream ended after ", buffer_->received(), " of ",
                                            buffer_->declared(), " bytes"));
    }
    service_->metrics().AddBytes(static_cast<std::int64_t>(buffer_->received()), 0);
    if (mesh_) return CompleteMesh();
    auto stored = std::make_shared<StoredImage>();
    stored->image = Image(image_.type, image_.extent, image_.channels, buffer_->Take());
    stored->spacing = spacing_;
    absl::StatusOr<ResidentInfo> info =
        service_->store().Put(call_.identity(), std::move(stored), ttl_seconds_);
    if (!info.ok()) return AtField(info.status(), "image");
    ToProto(*info, response_->mutable_object());
    return absl::OkStatus();
  }

  absl::Status CompleteMesh() {
    // Positions (12 bytes a vertex) then triangles: the triangles start 4-byte aligned.
    const MeshView view{
        reinterpret_cast<const float*>(buffer_->data()), vertex_count_,
        reinterpret_cast<const std::uint32_t*>(buffer_->data() + std::size_t{vertex_count_} * 12),
        triangle_count_};
    CUIMG_RETURN_IF_ERROR(ValidateMesh(view, "mesh"));
    CUIMG_ASSIGN_OR_RETURN(std::shared_ptr<const BackendMesh> mesh,
                           service_->backend().UploadMesh(view, &call_.times()));
    absl::StatusOr<ResidentInfo> info =
        service_->store().PutMesh(call_.identity(), std::move(mesh), ttl_seconds_);
    if (!info.ok()) return AtField(info.status(), "mesh");
    ToProto(*info, response_->mutable_object());
    return absl::OkStatus();
  }

  ImagingService* service_;
  grpc::CallbackServerContext* ctx_;
  v1::UploadResponse* response_;
  CallScope call_;
  const absl::Duration idle_timeout_;
  // One for gRPC (dropped in OnDone), one per armed idle timer.
  std::atomic<int> refs_{1};
  std::mutex mu_;
  bool finished_ = false;  // Finish was called (or is about to be)
  absl::Time last_activity_;
  std::unique_ptr<grpc::Alarm> alarm_;  // the armed idle check
  v1::UploadRequest message_;
  UploadQuota::Slot slot_;
  std::unique_ptr<UploadBuffer> buffer_;  // set by the first message
  // The object's description from the first message.
  ImageInput image_;
  v1::Spacing spacing_;
  bool mesh_ = false;
  std::uint32_t vertex_count_ = 0;
  std::uint32_t triangle_count_ = 0;
  std::uint32_t ttl_seconds_ = 0;
};

// Streams a resident image back: header and first chunk, then chunks.
class DownloadReactor final : public grpc::ServerWriteReactor<v1::DownloadResponse> {
 public:
  DownloadReactor(ImagingService* service, grpc::CallbackServerContext* ctx,
                  const v1::DownloadRequest* request)
      : service_(service), call_("Download", ctx, &service->metrics()) {
    call_.MarkStarted();
    absl::Status status = service_->AuthorizeCall(call_, kRightProcess | kRightResident);
    if (status.ok()) status = Start(*request, call_.identity());
    if (!status.ok()) Finish(call_.Complete(status));
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(call_.Complete(MakeError(absl::StatusCode::kCancelled, ErrorReason::kCancelled, "",
                                      "the client stopped reading")));
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
      return InvalidFieldError(ErrorReason::kValueOutOfRange, "chunk_bytes",
                               absl::StrCat(request.chunk_bytes(), " is not in [65536, 16777216]"));
    }
    chunk_ = request.chunk_bytes() == 0 ? kDefaultChunkBytes : request.chunk_bytes();
    CUIMG_RETURN_IF_ERROR(ValidateHandle(request.handle(), "handle"));
    absl::StatusOr<ResidentInfo> info = service_->store().Describe(identity, request.handle());
    if (!info.ok()) return AtField(info.status(), "handle");
    if (info->kind == ResidentKind::kMesh) return StartMesh(identity, request.handle());
    absl::StatusOr<std::shared_ptr<const StoredImage>> image =
        service_->store().Get(identity, request.handle());
    if (!image.ok()) return AtField(image.status(), "handle");
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
    if (!mesh.ok()) return AtField(mesh.status(), "handle");
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

grpc::ServerReadReactor<v1::UploadRequest>* ImagingService::Upload(grpc::CallbackServerContext* ctx,
                                                                   v1::UploadResponse* response) {
  return new UploadReactor(this, ctx, response);
}

grpc::ServerWriteReactor<v1::DownloadResponse>* ImagingService::Download(
    grpc::CallbackServerContext* ctx, const v1::DownloadRequest* request) {
  return new DownloadReactor(this, ctx, request);
}

grpc::ServerUnaryReactor* ImagingService::Release(grpc::CallbackServerContext* ctx,
                                                  const v1::ReleaseRequest* request,
                                                  v1::ReleaseResponse*) {
  return ServeAtOnce("Release", ctx, kRightResident, [&](const std::string& identity) {
    CUIMG_RETURN_IF_ERROR(ValidateHandle(request->handle(), "handle"));
    return AtField(store_->Release(identity, request->handle()), "handle");
  });
}

grpc::ServerUnaryReactor* ImagingService::ListResident(grpc::CallbackServerContext* ctx,
                                                       const v1::ListResidentRequest*,
                                                       v1::ListResidentResponse* response) {
  return ServeAtOnce("ListResident", ctx, kRightResident, [&](const std::string& identity) {
    for (const ResidentInfo& info : store_->List(identity)) ToProto(info, response->add_objects());
    response->set_used_bytes(store_->UsedBytes(identity));
    response->set_budget_bytes(store_->budget_bytes());
    return absl::OkStatus();
  });
}

}  // namespace cuimg
