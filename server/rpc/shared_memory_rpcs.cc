// RegisterSharedMemory, UnregisterSharedMemory and ListSharedMemory (shared_memory.proto).
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
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
  return ServeAtOnce("RegisterSharedMemory", ctx, kRightResident, [&](const std::string& identity) {
    if (shared_memory_ == nullptr) {
      return MakeError(absl::StatusCode::kFailedPrecondition, ErrorReason::kSharedMemoryUnavailable,
                       "",
                       "this server does not offer shared memory (start it with --shared_memory)");
    }
    if (!IsLocalPeer(ctx->peer())) {
      return MakeError(absl::StatusCode::kFailedPrecondition, ErrorReason::kSharedMemoryUnavailable,
                       "",
                       absl::StrCat("shared memory is for clients on the server's host; this "
                                    "call came from ",
                                    ctx->peer()));
    }
    absl::StatusOr<SharedMemoryInfo> info =
        shared_memory_->Register(identity, request->key(), request->byte_size());
    if (info.ok()) ToProto(*info, response->mutable_region());
    return info.status();
  });
}

grpc::ServerUnaryReactor* ImagingService::UnregisterSharedMemory(
    grpc::CallbackServerContext* ctx, const v1::UnregisterSharedMemoryRequest* request,
    v1::UnregisterSharedMemoryResponse*) {
  return ServeAtOnce(
      "UnregisterSharedMemory", ctx, kRightResident, [&](const std::string& identity) {
        CUIMG_RETURN_IF_ERROR(ValidateHandle(request->handle(), "handle"));
        if (shared_memory_ == nullptr) {
          return MakeError(absl::StatusCode::kFailedPrecondition,
                           ErrorReason::kSharedMemoryUnavailable, "",
                           "this server does not offer shared memory");
        }
        return AtField(shared_memory_->Unregister(identity, request->handle()), "handle");
      });
}

grpc::ServerUnaryReactor* ImagingService::ListSharedMemory(grpc::CallbackServerContext* ctx,
                                                           const v1::ListSharedMemoryRequest*,
                                                           v1::ListSharedMemoryResponse* response) {
  return ServeAtOnce("ListSharedMemory", ctx, kRightResident, [&](const std::string& identity) {
    if (shared_memory_ == nullptr) return absl::OkStatus();
    for (const SharedMemoryInfo& info : shared_memory_->List(identity)) {
      ToProto(info, response->add_regions());
    }
    response->set_used_bytes(shared_memory_->UsedBytes(identity));
    response->set_budget_bytes(shared_memory_->options().max_bytes_per_identity);
    response->set_max_regions(shared_memory_->options().max_regions_per_identity);
    response->set_key_prefix(shared_memory_->KeyPrefix(identity));
    return absl::OkStatus();
  });
}

}  // namespace cuimg
