"""Resident objects: whole images, volumes and meshes uploaded in chunks and downloaded back
(Client.upload, Client.download), and the handles made from one-slice volumes (OneSliceHandles).
A result kept on the server (Resident) is messages.py's."""
from __future__ import annotations

from typing import Any, Iterable

import grpc
import numpy as np

from cuimg.errors import CuimgError
from cuimg.messages import (
    DTYPES,
    Spacing,
    _image_header,
    _image_shape,
    _mesh,
    _result,
    little_endian,
)
from cuimg.shared_region import ShmArray
from cuimg.v1 import resident_pb2, types_pb2


class OneSliceHandles:
    """Resident handles a Client made from one-slice volumes (1, H, W). The server keeps them as
    2D images (a depth of 1 is 2D on the wire), so their results and downloads get the leading
    axis back here; a handle made by another client comes back (H, W)."""

    def __init__(self) -> None:
        self._handles: set[str] = set()

    def __contains__(self, handle: object) -> bool:
        return handle in self._handles

    def of(self, image: Any) -> bool:
        """Whether `image` is a one-slice volume (1, H, W): an array, a ShmArray, or a handle
        made from one."""
        if isinstance(image, str):
            return image in self._handles
        shape = image.array.shape if isinstance(image, ShmArray) else np.shape(image)
        return len(shape) == 3 and shape[0] == 1

    def results(
        self,
        image: Any,
        results: list[types_pb2.ImageResult],
        keep_resident: bool,
        return_data: bool,
    ) -> list[Any]:
        """The arrays (or Residents) of `results`, of `image`'s dimensionality."""
        one_slice = self.of(image)
        if one_slice and keep_resident:
            self._handles.update(r.handle for r in results)
        return [_result(r, keep_resident, return_data, one_slice) for r in results]

    def add(self, handle: str) -> None:
        self._handles.add(handle)

    def discard(self, handle: str) -> None:
        self._handles.discard(handle)


def upload(
    stub: Any,
    image: Any,
    mesh: tuple[Any, Any] | None,
    spacing: Spacing | None,
    ttl_seconds: int,
    chunk_bytes: int,
    timeout: float | None,
) -> str:
    """Client.upload over `stub` (an ImagingStub): the new object's handle."""
    if (image is None) == (mesh is None):
        raise ValueError("upload: pass an image or mesh=, not both")
    if mesh is not None:
        body = _mesh(*mesh)
        split = len(body.positions)  # the stream's bytes: positions, then triangles
        data = memoryview(body.positions + body.triangles)
        body.positions = bytes(data[: min(chunk_bytes, split)])
        body.triangles = bytes(data[split : max(chunk_bytes, split)])
        first = resident_pb2.UploadRequest(mesh=body, ttl_seconds=ttl_seconds)
    else:
        array = little_endian(image)
        body = _image_header(array, spacing, colour=False)
        data = array.data.cast("B")
        body.data = bytes(data[:chunk_bytes])
        first = resident_pb2.UploadRequest(image=body, ttl_seconds=ttl_seconds)

    def messages() -> Iterable[resident_pb2.UploadRequest]:
        yield first
        for at in range(chunk_bytes, len(data), chunk_bytes):
            yield resident_pb2.UploadRequest(chunk=bytes(data[at : at + chunk_bytes]))

    try:
        response = stub.Upload(messages(), timeout=timeout)
    except grpc.RpcError as e:
        raise CuimgError.of(e) from None
    return response.object.handle


def download(stub: Any, handle: str, timeout: float | None, one_slice: bool = False) -> Any:
    """Client.download over `stub` (an ImagingStub). `one_slice`: the handle was made from a
    one-slice volume (1, H, W), which the server keeps as an (H, W) image: the axis comes back."""
    try:
        replies = stub.Download(resident_pb2.DownloadRequest(handle=handle), timeout=timeout)
        first = next(replies, None)
        if first is None:
            raise CuimgError(grpc.StatusCode.INTERNAL, "Download: the server sent nothing")
        if first.HasField("mesh"):
            sizes = (first.mesh.vertex_count * 12, first.mesh.triangle_count * 12)
            flat = np.empty(sum(sizes), np.uint8)
            head = first.mesh.positions + first.mesh.triangles
        elif first.HasField("image"):
            shape = _image_shape(first.image)
            dtype = DTYPES[first.image.pixel_type]
            flat = np.empty(int(np.prod(shape)) * dtype.itemsize, np.uint8)
            head = first.image.data
        else:
            raise CuimgError(grpc.StatusCode.INTERNAL, "Download: no object in the first reply")
        filled = 0
        for chunk in [head] + [r.chunk for r in replies]:
            if filled + len(chunk) > flat.size:
                raise CuimgError(grpc.StatusCode.INTERNAL, "Download: more bytes than the object")
            flat[filled : filled + len(chunk)] = np.frombuffer(chunk, np.uint8)
            filled += len(chunk)
    except grpc.RpcError as e:
        raise CuimgError.of(e) from None
    if filled != flat.size:
        raise CuimgError(grpc.StatusCode.INTERNAL, f"Download: {filled} of {flat.size} bytes")
    if first.HasField("mesh"):
        return (
            flat[: sizes[0]].view("<f4").reshape(-1, 3).astype(np.float32, copy=False),
            flat[sizes[0] :].view("<u4").reshape(-1, 3).astype(np.uint32, copy=False),
        )
    if one_slice and len(shape) == 2:
        shape = (1,) + shape
    return flat.view(dtype.newbyteorder("<")).reshape(shape).astype(dtype, copy=False)
