"""What the RPCs take as an image: an array, a resident handle, an array in shared memory, or a
DICOM series as its stored frames (dicom_frames.StoredFrames), as the ImageSource messages that
carry them."""
from __future__ import annotations

from typing import Union

import numpy as np

from cuimg.messages import Spacing, to_image
from cuimg.shared_region import ShmArray
from cuimg.v1 import types_pb2

# What the RPCs accept as an image: an array, a resident handle, or an array in shared memory.
ImageLike = Union[np.ndarray, str, ShmArray]


def _source(
    array_or_handle: ImageLike, spacing: Spacing | None = None, colour: bool = False
) -> types_pb2.ImageSource:
    if isinstance(array_or_handle, str):
        return types_pb2.ImageSource(handle=array_or_handle)
    if hasattr(array_or_handle, "dicom_frames_source"):  # dicom_frames.StoredFrames
        return array_or_handle.dicom_frames_source(spacing)
    if isinstance(array_or_handle, ShmArray):
        return types_pb2.ImageSource(shared_memory=array_or_handle.reference(spacing))
    return types_pb2.ImageSource(image=to_image(array_or_handle, spacing, colour))


def _frame_source(image: ImageLike) -> types_pb2.ImageSource:
    """A detection input: an (H, W, C) array is a colour image."""
    return _source(image, colour=not isinstance(image, (str, ShmArray)) and np.ndim(image) == 3)
