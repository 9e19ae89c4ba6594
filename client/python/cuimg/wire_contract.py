"""What travels beside cuimg's messages, read here only (proto/wire_contract.h is the same
contract in C++, where the server writes it):

- the `cuimg-timing` trailer: the server's stage times of the call, "queue_us=1.0 ... device=0
  decode_device=-1" (decode_device: the GPU that decoded a JPEG input, -1 for the CPU or none);
  DetectStream's per-frame `timing` has the same format;
- the retry hints of a refusal: `cuimg-retry-after-ms` (ms to wait; only when retrying soon can
  succeed) and gRPC's own `grpc-retry-pushback-ms` (gRFC A6; -1: never retry);
- the error details: a google.rpc.Status in `grpc-status-details-bin` whose google.rpc.ErrorInfo
  (AIP-193, domain "cuimg.io") carries the error's reason and names the request field at fault
  in its metadata ("field").

The status details are decoded with the package's own wire decoder (_wire.py), so that the
package needs no generated google.rpc modules; tests hold it equal to protobuf's decoding.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple, Optional, Tuple, Union

from cuimg import _wire

TIMING_TRAILER = "cuimg-timing"
RETRY_AFTER_TRAILER = "cuimg-retry-after-ms"
RETRY_PUSHBACK_TRAILER = "grpc-retry-pushback-ms"
STATUS_DETAILS_TRAILER = "grpc-status-details-bin"
ERROR_DOMAIN = "cuimg.io"
ERROR_FIELD_KEY = "field"
_ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"

Metadata = Optional[Iterable[Tuple[str, Union[str, bytes]]]]


def trailer(metadata: Metadata, key: str) -> str | bytes | None:
    """The value of `key` in a call's (trailing) metadata, None when absent."""
    for k, value in metadata or ():
        if k == key:
            return value
    return None


def timing_text(metadata: Metadata) -> str:
    """The `cuimg-timing` trailer's text, "" when the server sent none."""
    value = trailer(metadata, TIMING_TRAILER)
    return value if isinstance(value, str) else ""


def parse_timing(text: str) -> dict[str, float]:
    """A timing trailer's fields by key ("queue_us", ..., "device", "decode_device"); unknown keys
    are kept, malformed fields skipped (a newer or older server's trailer still reads)."""
    fields: dict[str, float] = {}
    for part in text.split():
        key, eq, value = part.partition("=")
        if not eq:
            continue
        try:
            fields[key] = float(value)
        except ValueError:
            continue
    return fields


def timing(metadata: Metadata) -> dict[str, float]:
    """parse_timing of a call's timing trailer ({} when absent)."""
    return parse_timing(timing_text(metadata))


def retry_after_ms(metadata: Metadata) -> int | None:
    """The server's `cuimg-retry-after-ms`, None when it sent none."""
    value = trailer(metadata, RETRY_AFTER_TRAILER)
    try:
        return int(value) if isinstance(value, str) else None
    except ValueError:
        return None


def retry_pushback_ms(metadata: Metadata) -> int | None:
    """gRPC's `grpc-retry-pushback-ms` (-1: retrying cannot help), None when absent."""
    value = trailer(metadata, RETRY_PUSHBACK_TRAILER)
    try:
        return int(value) if isinstance(value, str) else None
    except ValueError:
        return None


class ErrorInfo(NamedTuple):
    """An error's google.rpc.ErrorInfo: `reason` (the documented cause, one of
    proto/cuimg/v1/error_reason.proto's names, e.g. "VALUE_OUT_OF_RANGE"), `domain`
    ("cuimg.io"), and `field`, the request field at fault ("" when the error is not about one
    field)."""

    reason: str
    domain: str
    field: str


def _text(value: int | memoryview) -> str:
    return bytes(value).decode("utf-8") if isinstance(value, memoryview) else ""


def decode_error_info(status_details: bytes) -> ErrorInfo | None:
    """The first ErrorInfo in a serialized google.rpc.Status; None when it holds none.
    ValueError when the bytes are not a message."""
    for number, any_bytes in _wire.iter_fields(status_details):
        if number != 3 or not isinstance(any_bytes, memoryview):  # Status.details (Any)
            continue
        any_fields = _wire.decode_fields(any_bytes)
        if _text(any_fields.get(1, 0)) != _ERROR_INFO_TYPE:  # Any.type_url
            continue
        reason = domain = field = ""
        for n, value in _wire.iter_fields(any_fields.get(2, b"")):  # Any.value: the ErrorInfo
            if n == 1:
                reason = _text(value)
            elif n == 2:
                domain = _text(value)
            elif n == 3 and isinstance(value, memoryview):  # a metadata entry: key 1, value 2
                entry = _wire.decode_fields(value)
                if _text(entry.get(1, 0)) == ERROR_FIELD_KEY:
                    field = _text(entry.get(2, 0))
        return ErrorInfo(reason, domain, field)
    return None


def error_info(metadata: Metadata) -> ErrorInfo | None:
    """The ErrorInfo of a failed call's trailing metadata (`grpc.RpcError.trailing_metadata()`);
    None when the status carries none (an error made by gRPC itself)."""
    value = trailer(metadata, STATUS_DETAILS_TRAILER)
    if not isinstance(value, bytes):
        return None
    try:
        return decode_error_info(value)
    except ValueError:
        return None
