// `cuimg health`: grpc.health.v1 Check; exit 0 only when SERVING (usable as a container probe).
#include <cstdio>

#include "client/commands/commands.h"
#include "grpc_protocols/health.grpc.pb.h"

namespace cuimg {

int RunHealth(const ConnectionOptions& connection, const HealthCommand& command) {
  auto stub = grpc::health::v1::Health::NewStub(MakeChannel(connection));
  grpc::ClientContext context;
  PrepareContext(connection, &context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(command.service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return ReportRpcError(status);
  const std::string name =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
  std::printf("%s\n", name.c_str());
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk
                                                                             : kExitRpcError;
}

}  // namespace cuimg
