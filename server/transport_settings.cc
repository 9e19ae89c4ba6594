#include "server/transport_settings.h"

namespace cuimg {

void ApplyTransportSettings(const TransportSettings& settings, grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(settings.max_receive_message_bytes);
  builder->SetMaxSendMessageSize(-1);
  if (settings.http2_lookahead_bytes > 0) {
    builder->AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
                                settings.http2_lookahead_bytes);
  }
}

void ApplyTransportSettings(const TransportSettings& settings, grpc::ChannelArguments* args) {
  args->SetMaxReceiveMessageSize(-1);
  args->SetMaxSendMessageSize(-1);
  if (settings.http2_lookahead_bytes > 0) {
    args->SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, settings.http2_lookahead_bytes);
  }
}

}  // namespace cuimg
