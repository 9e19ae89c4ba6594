"""The error every cuimg call raises when the server refuses or fails it."""
from __future__ import annotations

import grpc

from cuimg import wire_contract


class CuimgError(Exception):
    """An RPC failed: `code` is the grpc.StatusCode, `details` the server's message, `field` the
    request field at fault that the error's details name ("" when none; wire_contract.py)."""

    def __init__(self, code: grpc.StatusCode, details: str, field: str = ""):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details
        self.field = field

    @classmethod
    def of(cls, error: grpc.RpcError) -> "CuimgError":
        """The CuimgError of a failed call."""
        info = wire_contract.error_info(error.trailing_metadata())
        return cls(error.code(), error.details(), info.field if info else "")

    @classmethod
    def of_status(cls, status) -> "CuimgError":
        """The CuimgError of a batch entry that failed: its EntryStatus (google.rpc.Status's
        fields, so its bytes decode as one)."""
        codes = {c.value[0]: c for c in grpc.StatusCode}
        code = codes.get(status.code, grpc.StatusCode.UNKNOWN)
        try:
            info = wire_contract.decode_error_info(status.SerializeToString())
        except ValueError:
            info = None
        return cls(code, status.message, info.field if info else "")
