"""Protobuf wire format for the few messages the client encodes or decodes itself.

Python's protobuf copies a `bytes` field in and out of a message (a message takes only `bytes`,
not a memoryview, and each read of the field makes a new `bytes`). For streamed volumes these
copies cost more than the transfer, so slab messages are encoded straight from a memoryview of
the caller's array and results are decoded into memoryviews of the received buffer. The health
messages are encoded here too, so that the package needs no generated `grpc.health.v1` module (a
second top-level package beside `cuimg`). Tests hold every function equal to protobuf's own
encoding of the same message.
"""
from __future__ import annotations

from typing import Any, Iterator

# Wire types (https://protobuf.dev/programming-guides/encoding/).
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def encode_varint(value: int) -> bytes:
    """`value` (0 <= value < 2**64) as a base-128 varint, least significant group first."""
    if value < 0:
        raise ValueError("varints here are unsigned")
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def encode_bytes_field(field: int, data: bytes | memoryview) -> bytes:
    """One length-delimited field (`bytes`, `string` or an embedded message) holding `data`: the
    only copy of `data` is the one into the returned bytes."""
    return b"".join((encode_varint(field << 3 | _LEN), encode_varint(len(data)), data))


def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift >= 64:
            raise ValueError("varint longer than 10 bytes")


def iter_fields(data: bytes | memoryview) -> Iterator[tuple[int, int | memoryview]]:
    """The fields of one serialized message in order, repeated ones each time: (field number,
    the varint's value or a memoryview of the length-delimited field's bytes, no copy).
    Fixed-width fields are skipped. ValueError on malformed input."""
    buf = memoryview(data).cast("B")
    pos = 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        field, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            value, pos = _read_varint(buf, pos)
            yield field, value
        elif wire_type == _LEN:
            size, pos = _read_varint(buf, pos)
            if pos + size > len(buf):
                raise ValueError("truncated length-delimited field")
            yield field, buf[pos : pos + size]
            pos += size
        elif wire_type == _I64:
            pos += 8
        elif wire_type == _I32:
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        if pos > len(buf):
            raise ValueError("truncated fixed-width field")


def decode_fields(
    data: bytes | memoryview, repeated: frozenset[int] = frozenset()
) -> dict[int, Any]:
    """The fields of one serialized message (iter_fields): field number -> the varint's value or
    a memoryview of the length-delimited field's bytes (no copy). A field given twice keeps its
    last value, as protobuf does for scalars, except the numbers in `repeated`, whose values are
    collected in a list. ValueError on malformed input."""
    fields: dict[int, Any] = {number: [] for number in repeated}
    for field, value in iter_fields(data):
        if field in repeated:
            fields[field].append(value)
        else:
            fields[field] = value
    return fields


def encode_slab(slab: memoryview) -> bytes:
    """A cuimg.v1.VolumeStreamRequest whose `slab` (field 2) holds `slab`'s bytes."""
    return encode_bytes_field(2, slab)


def decode_volume_stream_response(data: bytes) -> tuple[int, int, memoryview, list[memoryview]]:
    """A cuimg.v1.VolumeStreamResponse as (z_begin, slices, data, resolved_elements), `data` a
    view of `data`, resolved_elements the serialized StructuringElements (field 4; usually
    none)."""
    fields = decode_fields(data, frozenset({4}))
    payload = fields.get(3, memoryview(b""))
    z_begin, slices = fields.get(1, 0), fields.get(2, 0)
    if (
        not isinstance(payload, memoryview)
        or isinstance(z_begin, memoryview)
        or isinstance(slices, memoryview)
    ):
        raise ValueError("VolumeStreamResponse: a field of the wrong wire type")
    elements = fields[4]
    if not all(isinstance(e, memoryview) for e in elements):
        raise ValueError("VolumeStreamResponse: resolved_elements of the wrong wire type")
    return z_begin, slices, payload, elements


# grpc.health.v1.HealthCheckResponse.ServingStatus names by value.
HEALTH_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def encode_health_request(service: str) -> bytes:
    """A grpc.health.v1.HealthCheckRequest for `service` ("" is the whole server)."""
    return encode_bytes_field(1, service.encode()) if service else b""


def decode_health_response(data: bytes) -> str:
    """A grpc.health.v1.HealthCheckResponse's status name ("SERVING", "NOT_SERVING", ...)."""
    status = decode_fields(data).get(1, 0)
    if isinstance(status, memoryview):
        raise ValueError("HealthCheckResponse: status of the wrong wire type")
    return HEALTH_STATUS.get(status, f"STATUS_{status}")
