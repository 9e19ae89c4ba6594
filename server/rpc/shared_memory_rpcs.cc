// RegisterSharedMemory, UnregisterSharedMemory and ListSharedMemory (shared_memory.proto).
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/rpc/imaging_service.h"

namespace cuimg {
namespace {

// A shared-memory object only means something on the server's own host: the peer must be a Unix
// socket or a loopback address.
bool IsLocalPeer(absl::string_view peer) {
  return absl::StartsWith(peer, "unix:") || absl::StartsWith(peer, "ipv4:127.") ||
         absl::StartsWith(peer, "ipv6:[::1]") || absl::StartsWith(peer, "ipv6:%5B::1%5D") ||
         absl::StartsWith(peer, "ipv6:[::ffff:127.") ||
         absl::StartsWith(peer, "ipv6:%5B::ffff:127.");
}

void ToProto(const SharedMemoryInfo& info, v1::SharedMemoryRegion* out) {
  out->set_handle(info.handle);
  out->set_key(info.key);
  out->set_byte_size(info.byte_size);
  out->set_device_mapped(info.device_mapped);
}

}  // namespace

grpc::ServerUnaryReactor* ImagingService::RegisterSharedMemory(
    grpc::CallbackServerContext* ctx, const v1::RegisterSharedMemoryRequest* request,
    v1::RegisterSharedMemoryResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  CallScope call("RegisterSharedMemory", ctx, metrics_);
  absl::StatusOr<std::string> identity = Authorize(*ctx, kRightResident, "RegisterSharedMemory");
  if (!identity.ok()) {
    RecordRefusal(ctx, identity.status(), false);
    reactor->Finish(call.Complete(identity.status()));
    return reactor;
  }
  call.set_identity(*identity);
  absl::Status status;
  if (shared_memory_ == nullptr) {
    status = absl::FailedPreconditionError(
        "this server does not offer shared memory (start it with --shared_memory)");
  } else if (!IsLocalPeer(ctx->peer())) {
    status = absl::FailedPreconditionError(absl::StrCat(
        "shared memory is for clients on the server's host; this call came from ", ctx->peer()));
  } else {
    absl::StatusOr<SharedMemoryInfo> info =
        shared_memory_->Register(*identity, request->key(), request->byte_size());
    status = info.status();
    if (info.ok()) ToProto(*info, response->mutable_region());
  }
  if (!status.ok()) RecordRefusal(ctx, status, false);
  reactor->Finish(call.Complete(status));
  return reactor;
}

grpc::ServerUnaryReactor* ImagingService::UnregisterSharedMemory(
    grpc::CallbackServerContext* ctx, const v1::UnregisterSharedMemoryRequest* request,
    v1::UnregisterSharedMemoryResponse*) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  CallScope call("UnregisterSharedMemory", ctx, metrics_);
  absl::StatusOr<std::string> identity =
      Authorize(*ctx, kRightResident, "UnregisterSharedMemory");
  if (!identity.ok()) {
    RecordRefusal(ctx, identity.status(), false);
    reactor->Finish(call.Complete(identity.status()));
    return reactor;
  }
  call.set_identity(*identity);
  absl::Status status =
      shared_memory_ == nullptr
          ? absl::FailedPreconditionError("this server does not offer shared memory")
          : shared_memory_->Unregister(*identity, request->handle());
  if (!status.ok()) status = absl::Status(status.code(), absl::StrCat("handle: ", status.message()));
  reactor->Finish(call.Complete(status));
  return reactor;
}

grpc::ServerUnaryReactor* ImagingService::ListSharedMemory(grpc::CallbackServerContext* ctx,
                                                           const v1::ListSharedMemoryRequest*,
                                                           v1::ListSharedMemoryResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  CallScope call("ListSharedMemory", ctx, metrics_);
  absl::StatusOr<std::string> identity = Authorize(*ctx, kRightResident, "ListSharedMemory");
  if (!identity.ok()) {
    RecordRefusal(ctx, identity.status(), false);
    reactor->Finish(call.Complete(identity.status()));
    return reactor;
  }
  call.set_identity(*identity);
  if (shared_memory_ != nullptr) {
    for (const SharedMemoryInfo& info : shared_memory_->List(*identity)) {
      ToProto(info, response->add_regions());
    }
    response->set_used_bytes(shared_memory_->UsedBytes(*identity));
    response->set_budget_bytes(shared_memory_->options().max_bytes_per_identity);
    response->set_max_regions(shared_memory_->options().max_regions_per_identity);
    response->set_key_prefix(shared_memory_->KeyPrefix(*identity));
  }
  reactor->Finish(call.Complete(absl::OkStatus()));
  return reactor;
}

}  // namespace cuimg
