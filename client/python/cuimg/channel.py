"""How the Client reaches the server: the channel's options, the retry policy, TLS and the bearer
token (the Python side of the CLI's client/connection.cc)."""
from __future__ import annotations

import json
from typing import Any, NamedTuple

import grpc

from cuimg import _wire
from cuimg.errors import CuimgError

# Messages can be large (volumes); the server enforces its own limits.
CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", -1),
    ("grpc.max_send_message_length", -1),
    # gRPC retries a call only while what it sent fits this buffer (256 KiB by
    # default, less than a VGA frame); the cuimg CLI uses the same.
    ("grpc.per_rpc_retry_buffer_size", 64 << 20),
    # A failed connection is tried again after 100 ms, not gRPC's 1 s, within the
    # retry policy's span (Debian's gRPC 1.51 now and then fails a local connect()
    # that was only in progress, grpc/grpc#35064); the CLI does the same.
    ("grpc.initial_reconnect_backoff_ms", 100),
]


def retry_config(max_attempts: int) -> str | None:
    """The service config: UNAVAILABLE (a restarted or replaced server) and an overloaded
    server's RESOURCE_EXHAUSTED are retried, the latter after the delay the server pushes back
    (grpc-retry-pushback-ms; -1, never, for a request that cannot fit)."""
    if max_attempts == 1:
        return None
    return json.dumps(
        {
            "methodConfig": [
                {
                    "name": [{"service": "cuimg.v1.Imaging"}, {"service": "grpc.health.v1.Health"}],
                    "retryPolicy": {
                        "maxAttempts": max_attempts,
                        "initialBackoff": "0.05s",
                        "maxBackoff": "1s",
                        "backoffMultiplier": 2,
                        "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"],
                    },
                },
                {
                    # Streamed volumes are sent again by the client itself (cuimg.volume_stream):
                    # under gRPC 1.51's retry policy a stream whose server died mid-call waited for
                    # its deadline instead of failing (tests/e2e/test_python_volume_stream.py kills
                    # one). A DetectStream is never replayed: gRPC would keep every frame sent.
                    "name": [
                        {"service": "cuimg.v1.Imaging", "method": "ProcessVolumeStream"},
                        {"service": "cuimg.v1.Imaging", "method": "DetectStream"},
                    ]
                },
            ]
        }
    )


def _read(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


class ChannelSettings(NamedTuple):
    """A target and what every channel to it is made with."""

    target: str
    options: list[tuple[str, Any]]
    credentials: grpc.ChannelCredentials | None

    @staticmethod
    def of(
        target: str,
        *,
        tls: bool,
        ca_file: str | None,
        cert_file: str | None,
        key_file: str | None,
        server_name: str | None,
        token: str | None,
        token_file: str | None,
        max_attempts: int,
    ) -> ChannelSettings:
        """The Client's connection arguments checked and read (ValueError for a token without
        TLS, or a certificate without its key)."""
        if token_file is not None:
            with open(token_file) as f:
                token = f.read().strip()
        tls = tls or ca_file is not None or cert_file is not None
        if token is not None and not tls:
            raise ValueError("a token is sent only over TLS: pass tls=True or ca_file")
        if (cert_file is None) != (key_file is None):
            raise ValueError("cert_file and key_file go together")
        options: list[tuple[str, Any]] = list(CHANNEL_OPTIONS)
        retry = retry_config(max_attempts)
        if retry is not None:
            options.append(("grpc.service_config", retry))
        credentials = None
        if tls:
            credentials = grpc.ssl_channel_credentials(
                _read(ca_file), _read(key_file), _read(cert_file)
            )
            if token is not None:
                credentials = grpc.composite_channel_credentials(
                    credentials, grpc.access_token_call_credentials(token)
                )
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
        return ChannelSettings(target, options, credentials)

    def channel(self, index: int) -> grpc.Channel:
        """Channel `index` of the client: index > 0 has a connection of its own."""
        # A distinct argument per index keeps gRPC from sharing one connection between channels
        # (its subchannel pool pools equal targets and arguments); the CLI does the same.
        options = self.options + ([("cuimg.channel_index", index)] if index else [])
        if self.credentials is not None:
            return grpc.secure_channel(self.target, self.credentials, options=options)
        return grpc.insecure_channel(self.target, options=options)


def health(channel: grpc.Channel, service: str, timeout: float | None) -> str:
    """Client.health: grpc.health.v1 Check over `channel`, encoded by hand (cuimg._wire: the
    package carries no stubs of the health protocol)."""
    check = channel.unary_unary(
        "/grpc.health.v1.Health/Check",
        request_serializer=_wire.encode_health_request,
        response_deserializer=_wire.decode_health_response,
    )
    try:
        return check(service, timeout=timeout)
    except grpc.RpcError as e:
        raise CuimgError.of(e) from None
