// gRPC's own log lines (gpr_log: bind failures, TLS handshake errors, ...) written as the
// server's logfmt lines, so that a log shipper parses one format and a line from gRPC cannot
// break the stream with its own layout.
#ifndef CUIMG_SERVER_GRPC_LOG_SINK_H_
#define CUIMG_SERVER_GRPC_LOG_SINK_H_

namespace cuimg {

// Routes every gRPC log line through LogEvent (event=grpc, with gRPC's severity as the level and
// its file, line and message as fields). Call once in main, before gRPC starts.
void RouteGrpcLogsThroughLog();

}  // namespace cuimg

#endif  // CUIMG_SERVER_GRPC_LOG_SINK_H_
