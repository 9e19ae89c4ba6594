// The gRPC transport settings of a cuimg server, in one place so that the echo baseline
// (benchmarks/echo_server.cc) runs with exactly the same ones.
#ifndef CUIMG_SERVER_TRANSPORT_SETTINGS_H_
#define CUIMG_SERVER_TRANSPORT_SETTINGS_H_

#include <grpcpp/grpcpp.h>

namespace cuimg {

struct TransportSettings {
  // Largest request message accepted, bytes; responses are unlimited.
  int max_receive_message_bytes = 1 << 30;
  // HTTP/2 per-stream flow-control window the transport offers ahead of the reader
  // (grpc.http2.lookahead_bytes); 0 keeps gRPC's default (64 KiB, grown by BDP probing). Large
  // messages over a fast link wait less for window updates with a larger one.
  int http2_lookahead_bytes = 0;
};

// Applies `settings` to a server about to be built.
void ApplyTransportSettings(const TransportSettings& settings, grpc::ServerBuilder* builder);

// The same settings for a client channel's arguments (the lookahead applies to responses).
void ApplyTransportSettings(const TransportSettings& settings, grpc::ChannelArguments* args);

}  // namespace cuimg

#endif  // CUIMG_SERVER_TRANSPORT_SETTINGS_H_
