"""What the RPCs take as inputs and outputs: image sources (arrays, resident handles, arrays in
shared memory), output options, and results (arrays, or Resident when kept on the server)."""
from __future__ import annotations

from typing import Any, NamedTuple, Union

import numpy as np

from cuimg.messages import Spacing, from_image, to_image
from cuimg.shared_region import ShmArray
from cuimg.v1 import types_pb2

# What the RPCs accept as an image: an array, a resident handle, or an array in shared memory.
ImageLike = Union[np.ndarray, str, ShmArray]


class Resident(NamedTuple):
    """A result kept on the server (keep_resident=True): its `handle`, usable in place of an
    array by any RPC and by download(), and `data`, what the call returns without keep_resident
    (None when return_data=False)."""
    handle: str
    data: Any


def _source(array_or_handle: ImageLike, spacing: Spacing | None = None,
            colour: bool = False) -> types_pb2.ImageSource:
    if isinstance(array_or_handle, str):
        return types_pb2.ImageSource(handle=array_or_handle)
    if isinstance(array_or_handle, ShmArray):
        return types_pb2.ImageSource(shared_memory=array_or_handle.reference(spacing))
    return types_pb2.ImageSource(image=to_image(array_or_handle, spacing, colour))


def _frame_source(image: ImageLike) -> types_pb2.ImageSource:
    """A detection input: an (H, W, C) array is a colour image."""
    return _source(image, colour=not isinstance(image, str) and np.ndim(image) == 3)


def _output_options(keep_resident: bool, return_data: bool,
                    ttl_seconds: int) -> types_pb2.OutputOptions | None:
    if not return_data and not keep_resident:
        raise ValueError("return_data=False needs keep_resident=True")
    if not keep_resident:
        return None
    return types_pb2.OutputOptions(keep_resident=True, omit_data=not return_data,
                                   ttl_seconds=ttl_seconds)


def _result(result: types_pb2.ImageResult, keep_resident: bool, return_data: bool) -> Any:
    data = from_image(result.image) if return_data else None
    return Resident(result.handle, data) if keep_resident else data
