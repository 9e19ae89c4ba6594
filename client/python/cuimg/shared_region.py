"""Shared memory on the server's host: a SharedRegion this process creates and registers, and
ShmArray, an array placed in it that travels by reference (region, offset, shape) instead of bytes.
"""
from __future__ import annotations

import os
from multiprocessing import shared_memory
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from cuimg.messages import PIXEL_TYPES, Spacing, _set_spacing
from cuimg.v1 import shared_memory_pb2, types_pb2

if TYPE_CHECKING:
    from cuimg.client import Client


class ShmArray:
    """An array living in a SharedRegion at `offset`: `.array` is the NumPy view (read and write
    it in place); pass the ShmArray itself to a Client method to send it by reference."""

    def __init__(self, region: "SharedRegion", offset: int, shape: tuple[int, ...], dtype: Any):
        self.region, self.offset = region, offset
        self.array: np.ndarray = np.ndarray(
            shape, np.dtype(dtype), buffer=region.buffer, offset=offset
        )

    def reference(self, spacing: Spacing | None = None) -> types_pb2.SharedMemoryImage:
        """The cuimg.v1.SharedMemoryImage naming this array (native little-endian dtypes only:
        the server reads the bytes as they lie)."""
        a = self.array
        if a.dtype not in PIXEL_TYPES:
            raise TypeError(f"dtype {a.dtype}: cuimg takes uint8, uint16, int16 or float32")
        if a.ndim not in (2, 3):
            raise ValueError(f"shape {a.shape}: expected (H, W) or (D, H, W)")
        image = types_pb2.Image(
            pixel_type=PIXEL_TYPES[a.dtype],
            width=a.shape[-1],
            height=a.shape[-2],
            depth=a.shape[0] if a.ndim == 3 else 0,
        )
        _set_spacing(image, spacing)
        return types_pb2.SharedMemoryImage(
            region=self.region.handle, offset=self.offset, image=image
        )


class SharedRegion:
    """A POSIX shared-memory object this process created and registered with the server (which
    must run on this host with --shared_memory). close() unregisters and unlinks it."""

    _count = 0

    def __init__(self, client: "Client", size: int):
        SharedRegion._count += 1
        # Where the server tells callers apart, a caller's names must start with its key prefix
        # ("/<identity>."); the Python name is the key without its leading "/".
        prefix = client._call(
            "ListSharedMemory", shared_memory_pb2.ListSharedMemoryRequest()
        ).key_prefix
        self._shm = shared_memory.SharedMemory(
            name=f"{prefix[1:]}cuimg-py-{os.getpid()}-{SharedRegion._count}", create=True, size=size
        )
        self._client = client
        self.size = size
        try:
            region = client._call(
                "RegisterSharedMemory",
                shared_memory_pb2.RegisterSharedMemoryRequest(
                    key="/" + self._shm.name, byte_size=size
                ),
            ).region
        except Exception:
            self._shm.close()
            self._shm.unlink()
            raise
        self.handle, self.device_mapped = region.handle, region.device_mapped

    @property
    def buffer(self) -> memoryview:
        """The mapped bytes."""
        return self._shm.buf

    def array(self, shape: Sequence[int], dtype: Any, offset: int = 0) -> ShmArray:
        """A ShmArray of `shape` and `dtype` at byte `offset` (which must fit the region)."""
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if offset < 0 or offset + nbytes > self.size:
            raise ValueError(f"{nbytes} bytes at offset {offset} do not fit {self.size}")
        return ShmArray(self, offset, tuple(shape), dtype)

    def close(self) -> None:
        """Unregisters the region, then unmaps and unlinks the object."""
        try:
            self._client._call(
                "UnregisterSharedMemory",
                shared_memory_pb2.UnregisterSharedMemoryRequest(handle=self.handle),
            )
        finally:
            try:
                self._shm.close()
            except BufferError:
                pass  # ShmArray views still exist: the mapping goes with the last of them
            self._shm.unlink()

    def __enter__(self) -> "SharedRegion":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
