"""NumPy arrays, meshes and the CLI's step strings as cuimg API messages, and back.

Arrays: (H, W) images, (D, H, W) volumes, (H, W, C) colour images; dtypes uint8, uint16, int16,
float32 in either byte order (others are refused, never converted silently). Results are writable
arrays in native byte order.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from cuimg.v1 import deform_pb2, morphology_pb2, types_pb2

PIXEL_TYPES = {np.dtype(np.uint8): types_pb2.PIXEL_TYPE_U8,
               np.dtype(np.uint16): types_pb2.PIXEL_TYPE_U16,
               np.dtype(np.int16): types_pb2.PIXEL_TYPE_I16,
               np.dtype(np.float32): types_pb2.PIXEL_TYPE_F32}
DTYPES = {v: k for k, v in PIXEL_TYPES.items()}
OPS = {"erode": morphology_pb2.MORPHOLOGY_OP_ERODE, "dilate": morphology_pb2.MORPHOLOGY_OP_DILATE,
       "open": morphology_pb2.MORPHOLOGY_OP_OPEN, "close": morphology_pb2.MORPHOLOGY_OP_CLOSE,
       "gradient": morphology_pb2.MORPHOLOGY_OP_GRADIENT,
       "tophat": morphology_pb2.MORPHOLOGY_OP_TOP_HAT,
       "blackhat": morphology_pb2.MORPHOLOGY_OP_BLACK_HAT}
SHAPES = {name: getattr(morphology_pb2, f"ELEMENT_SHAPE_{name.upper()}")
          for name in ("rect", "ellipse", "cross")}

Spacing = Sequence[float]


def parse_steps(text: str) -> list[morphology_pb2.MorphologyStep]:
    """"op:shape:WxH[xD][:iterations],..." (the cuimg CLI's --steps) -> MorphologyStep list.
    ValueError names the step that does not parse."""
    steps = []
    for part in text.split(","):
        fields = part.split(":")
        if len(fields) not in (3, 4) or fields[0] not in OPS or fields[1] not in SHAPES:
            raise ValueError(f"step {part!r}: expected op:shape:WxH[xD][:iterations] with op in "
                             f"{sorted(OPS)} and shape in {sorted(SHAPES)}")
        size = [int(v) for v in fields[2].split("x")]
        if len(size) not in (2, 3):
            raise ValueError(f"step {part!r}: size must be WxH or WxHxD")
        steps.append(morphology_pb2.MorphologyStep(
            op=OPS[fields[0]], iterations=int(fields[3]) if len(fields) == 4 else 1,
            element=morphology_pb2.StructuringElement(
                shape=SHAPES[fields[1]], width=size[0], height=size[1],
                depth=size[2] if len(size) == 3 else 0)))
    return steps


def pixel_type(dtype: np.dtype) -> int:
    """The cuimg.v1.PixelType of a NumPy dtype in either byte order; TypeError for others."""
    dtype = np.dtype(dtype)
    found = PIXEL_TYPES.get(dtype.newbyteorder("="))
    if found is None:
        raise TypeError(f"dtype {dtype}: cuimg takes uint8, uint16, int16 or float32")
    return found


def little_endian(array: Any) -> np.ndarray:
    """`array` as a C-contiguous little-endian array of a cuimg pixel type: the array itself when
    it already is one (no copy), else one converting copy (byte swapped for big-endian input)."""
    array = np.asarray(array)
    pixel_type(array.dtype)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))


def _set_spacing(image: types_pb2.Image, spacing: Spacing | None) -> None:
    if spacing is not None:
        image.spacing.x_mm, image.spacing.y_mm, image.spacing.z_mm = (float(v) for v in spacing)


def _image_header(array: np.ndarray, spacing: Spacing | None, colour: bool) -> types_pb2.Image:
    """The cuimg.v1.Image describing `array` (a cuimg pixel type), with no data."""
    if array.ndim == 2:
        depth, channels = 0, 1
    elif array.ndim == 3 and colour:
        depth, channels = 0, array.shape[2]
    elif array.ndim == 3:
        depth, channels = array.shape[0], 1
    else:
        raise ValueError(f"shape {array.shape}: expected (H, W), (D, H, W) or (H, W, C)")
    height, width = (array.shape[0], array.shape[1]) if depth == 0 else array.shape[1:]
    image = types_pb2.Image(pixel_type=pixel_type(array.dtype), width=width, height=height,
                            depth=depth, channels=channels)
    _set_spacing(image, spacing)
    return image


def to_image(array: Any, spacing: Spacing | None = None, colour: bool = False) -> types_pb2.Image:
    """A NumPy array as a cuimg.v1.Image: (H, W), (D, H, W), or with colour=True (H, W, C);
    big-endian arrays are byte swapped. `spacing`: (x, y, z) mm per pixel, carried to the
    server (cuimg works in pixels)."""
    array = little_endian(array)
    image = _image_header(array, spacing, colour)
    image.data = array.tobytes()  # one copy: protobuf takes only bytes
    return image


def _image_shape(image: types_pb2.Image) -> tuple[int, ...]:
    shape: tuple[int, ...] = (image.height, image.width) if image.depth <= 1 else \
        (image.depth, image.height, image.width)
    return shape + ((image.channels,) if image.channels > 1 else ())


def from_image(image: types_pb2.Image) -> np.ndarray:
    """A cuimg.v1.Image as a writable NumPy array of its shape, in native byte order (a copy:
    the message's bytes are immutable)."""
    dtype = DTYPES[image.pixel_type]
    view = np.frombuffer(image.data, dtype=dtype.newbyteorder("<")).reshape(_image_shape(image))
    return np.array(view, dtype=dtype)


def _mesh(vertices: Any, triangles: Any) -> deform_pb2.Mesh:
    vertices = np.ascontiguousarray(vertices, dtype="<f4").reshape(-1, 3)
    triangles = np.ascontiguousarray(triangles, dtype="<u4").reshape(-1, 3)
    return deform_pb2.Mesh(vertex_count=len(vertices), triangle_count=len(triangles),
                           positions=vertices.tobytes(), triangles=triangles.tobytes())


def _floats(data: bytes) -> np.ndarray:
    return np.frombuffer(data, "<f4").reshape(-1, 3).astype(np.float32)
