// How the client reaches the server, and how it reports RPC outcomes.
#ifndef CUIMG_CLIENT_CONNECTION_H_
#define CUIMG_CLIENT_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace cuimg {

struct ConnectionOptions {
  // gRPC target: host:port, dns:///host:port, unix:///path, ...
  std::string target = "localhost:50051";
  // Per-RPC deadline; 0 means none.
  double timeout_seconds = 60;
};

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRpcError = 1;
inline constexpr int kExitUsage = 2;

std::shared_ptr<grpc::Channel> MakeChannel(const ConnectionOptions& options);
// Applies the deadline to a new call's context.
void PrepareContext(const ConnectionOptions& options, grpc::ClientContext* context);
// Prints "error: CODE: message" to stderr and returns kExitRpcError.
int ReportRpcError(const grpc::Status& status);
// The server's `cuimg-timing` trailer, or "" when absent.
std::string ServerTiming(const grpc::ClientContext& context);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_CONNECTION_H_
