"""NumPy arrays, meshes and the CLI's step strings as cuimg API messages, and results back.

Arrays: (H, W) images, (D, H, W) volumes, (H, W, C) colour images; dtypes uint8, uint16, int16,
float32, and uint32 for label images, in either byte order (others are refused, never converted
silently). Results are writable arrays in native byte order.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from cuimg.v1 import deform_pb2, morphology_pb2, types_pb2

PIXEL_TYPES: dict[np.dtype[Any], int] = {
    np.dtype(np.uint8): types_pb2.PIXEL_TYPE_U8,
    np.dtype(np.uint16): types_pb2.PIXEL_TYPE_U16,
    np.dtype(np.int16): types_pb2.PIXEL_TYPE_I16,
    np.dtype(np.float32): types_pb2.PIXEL_TYPE_F32,
    np.dtype(np.uint32): types_pb2.PIXEL_TYPE_U32,
}
DTYPES: dict[int, np.dtype[Any]] = {v: k for k, v in PIXEL_TYPES.items()}
OPS = {
    "erode": morphology_pb2.MORPHOLOGY_OP_ERODE,
    "dilate": morphology_pb2.MORPHOLOGY_OP_DILATE,
    "open": morphology_pb2.MORPHOLOGY_OP_OPEN,
    "close": morphology_pb2.MORPHOLOGY_OP_CLOSE,
    "gradient": morphology_pb2.MORPHOLOGY_OP_GRADIENT,
    "tophat": morphology_pb2.MORPHOLOGY_OP_TOP_HAT,
    "blackhat": morphology_pb2.MORPHOLOGY_OP_BLACK_HAT,
}
# The segmentation steps; all but threshold are global (a pixel's result may depend on any pixel
# of the image), so a streamed volume with one is never split over connections.
SEGMENTATION_OPS = {
    name: getattr(morphology_pb2, f"MORPHOLOGY_OP_{name.upper()}")
    for name in (
        "fill_holes",
        "reconstruct_dilate",
        "reconstruct_erode",
        "open_rec",
        "close_rec",
        "hmax",
        "hmin",
        "threshold",
        "remove_small",
        "keep_largest",
    )
}
CONNECTIVITIES = {c: getattr(types_pb2, f"CONNECTIVITY_{c}") for c in (4, 8, 6, 18, 26)}
SHAPES = {
    name: getattr(morphology_pb2, f"ELEMENT_SHAPE_{name.upper()}")
    for name in ("rect", "ellipse", "cross")
}
# The CLI's other names for them.
SHAPES.update(box=SHAPES["rect"], disk=SHAPES["ellipse"], ball=SHAPES["ellipse"])

Spacing = Sequence[float]


def element_mm(
    shape: str, x_mm: float, y_mm: float | None = None, z_mm: float | None = None
) -> morphology_pb2.StructuringElement:
    """A structuring element given by its semi-axes in millimetres ("rect", "ellipse" or
    "cross"; y_mm and z_mm default to x_mm). The server turns it into voxels from the input's
    spacing (so pass spacing= with the array): k = round-half-up(radius / spacing) voxels either
    side, extent 2k + 1 per axis; z_mm = 0, or a 2D input, gives a 2D element. The elements it
    ran come back in Client.last_elements."""
    if shape not in SHAPES:
        raise ValueError(f"shape {shape!r}: expected one of {sorted(SHAPES)}")
    y_mm = x_mm if y_mm is None else y_mm
    z_mm = x_mm if z_mm is None else z_mm
    return morphology_pb2.StructuringElement(
        shape=SHAPES[shape], radius=morphology_pb2.ElementRadius(x_mm=x_mm, y_mm=y_mm, z_mm=z_mm)
    )


def _element(size: str, shape: str, step: str) -> morphology_pb2.StructuringElement:
    """ "WxH[xD]" in voxels, or "Rmm", "RXxRYmm", "RXxRYxRZmm" in millimetres (as the CLI)."""
    if size.endswith("mm"):
        try:
            radii = [float(v) for v in size[:-2].split("x")]
        except ValueError:
            radii = []
        if len(radii) not in (1, 2, 3) or not all(0 <= r < float("inf") for r in radii):
            raise ValueError(
                f"step {step!r}: radius must be Rmm, RXxRYmm or RXxRYxRZmm "
                f"(non-negative millimetres)"
            )
        if len(radii) == 2:
            radii.append(0.0)  # two radii: a 2D element
        return element_mm(shape, *radii)
    dims = [int(v) for v in size.split("x")]
    if len(dims) not in (2, 3):
        raise ValueError(f"step {step!r}: size must be WxH or WxHxD")
    return morphology_pb2.StructuringElement(
        shape=SHAPES[shape], width=dims[0], height=dims[1], depth=dims[2] if len(dims) == 3 else 0
    )


def connectivity(value: int | None) -> int:
    """The cuimg.v1.Connectivity of 4 or 8 (2D), 6, 18 or 26 (3D); None is the server's default,
    face connectivity (4 in 2D, 6 in 3D). ValueError for anything else."""
    if value is None:
        return types_pb2.CONNECTIVITY_UNSPECIFIED
    if value not in CONNECTIVITIES:
        raise ValueError(f"connectivity {value!r}: expected 4 or 8 (2D), 6, 18 or 26 (3D)")
    return CONNECTIVITIES[value]


def _number(text: str, what: str, step: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value != value:
        raise ValueError(f"step {step!r}: {what} {text!r} is not a number")
    return value


def _segmentation_step(name: str, fields: list[str], part: str) -> morphology_pb2.MorphologyStep:
    """One of SEGMENTATION_OPS: "fill_holes[:C]", "open_rec:SHAPE:SIZE[:C]", "hmax:H[:C]",
    "threshold:LO:HI", "remove_small:N[:C]", ... (C: the connectivity)."""
    step = morphology_pb2.MorphologyStep(op=SEGMENTATION_OPS[name])
    rest = fields[1:]
    if name in ("open_rec", "close_rec"):
        if len(rest) < 2 or rest[0] not in SHAPES:
            raise ValueError(
                f"step {part!r}: expected {name}:SHAPE:SIZE[:C] with shape in " f"{sorted(SHAPES)}"
            )
        step.element.CopyFrom(_element(rest[1], rest[0], part))
        rest = rest[2:]
    elif name in ("hmax", "hmin"):
        if not rest:
            raise ValueError(f"step {part!r}: expected {name}:H[:C]")
        step.h = _number(rest[0], "H", part)
        rest = rest[1:]
    elif name == "threshold":
        if len(rest) != 2:
            raise ValueError(f"step {part!r}: expected threshold:LO:HI")
        step.lo, step.hi = _number(rest[0], "LO", part), _number(rest[1], "HI", part)
        return step
    elif name == "remove_small":
        if not rest or not rest[0].isdigit():
            raise ValueError(f"step {part!r}: expected remove_small:N[:C] (N voxels)")
        step.min_voxels = int(rest[0])
        rest = rest[1:]
    if len(rest) > 1:
        raise ValueError(f"step {part!r}: too many fields")
    if rest:
        if not rest[0].isdigit():
            raise ValueError(f"step {part!r}: connectivity {rest[0]!r} is not 4, 8, 6, 18 or 26")
        step.connectivity = connectivity(int(rest[0]))
    return step


def parse_steps(text: str) -> list[morphology_pb2.MorphologyStep]:
    """ "op:shape:SIZE[:iterations],..." (the cuimg CLI's --steps) -> MorphologyStep list. SIZE
    is WxH or WxHxD in voxels, or a radius in millimetres: Rmm (every axis), RXxRYmm (2D) or
    RXxRYxRZmm, e.g. "dilate:ellipse:5mm" (see element_mm). The segmentation steps, C being a
    connectivity (4 or 8 in 2D, 6, 18 or 26 in 3D; face connectivity when left out):
    fill_holes[:C], reconstruct_dilate[:C] and reconstruct_erode[:C] (with morphology's
    marker=), open_rec:SHAPE:SIZE[:C], close_rec:SHAPE:SIZE[:C], hmax:H[:C], hmin:H[:C],
    threshold:LO:HI, remove_small:N[:C], keep_largest[:C]. ValueError names the step that does
    not parse."""
    steps = []
    for part in text.split(","):
        fields = part.split(":")
        if fields[0] in SEGMENTATION_OPS:
            steps.append(_segmentation_step(fields[0], fields, part))
            continue
        if len(fields) not in (3, 4) or fields[0] not in OPS or fields[1] not in SHAPES:
            raise ValueError(
                f"step {part!r}: expected op:shape:WxH[xD][:iterations] or "
                f"op:shape:Rmm[:iterations] with op in {sorted(OPS)} and shape in "
                f"{sorted(SHAPES)}, or a segmentation step "
                f"({', '.join(sorted(SEGMENTATION_OPS))})"
            )
        steps.append(
            morphology_pb2.MorphologyStep(
                op=OPS[fields[0]],
                iterations=int(fields[3]) if len(fields) == 4 else 1,
                element=_element(fields[2], fields[1], part),
            )
        )
    return steps


def pixel_type(dtype: np.dtype) -> int:
    """The cuimg.v1.PixelType of a NumPy dtype in either byte order; TypeError for others."""
    dtype = np.dtype(dtype)
    found = PIXEL_TYPES.get(dtype.newbyteorder("="))
    if found is None:
        raise TypeError(
            f"dtype {dtype}: cuimg takes uint8, uint16, int16, uint32 (label images) " f"or float32"
        )
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
    image = types_pb2.Image(
        pixel_type=pixel_type(array.dtype),
        width=width,
        height=height,
        depth=depth,
        channels=channels,
    )
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
    shape: tuple[int, ...] = (
        (image.height, image.width)
        if image.depth <= 1
        else (image.depth, image.height, image.width)
    )
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
    return deform_pb2.Mesh(
        vertex_count=len(vertices),
        triangle_count=len(triangles),
        positions=vertices.tobytes(),
        triangles=triangles.tobytes(),
    )


def _floats(data: bytes) -> np.ndarray:
    return np.frombuffer(data, "<f4").reshape(-1, 3).astype(np.float32)


class Resident(NamedTuple):
    """A result kept on the server (keep_resident=True): its `handle`, usable in place of an
    array by any RPC and by download(), and `data`, what the call returns without keep_resident
    (None when return_data=False)."""

    handle: str
    data: Any


def _output_options(
    keep_resident: bool, return_data: bool, ttl_seconds: int
) -> types_pb2.OutputOptions | None:
    if not return_data and not keep_resident:
        raise ValueError("return_data=False needs keep_resident=True")
    if not keep_resident:
        return None
    return types_pb2.OutputOptions(
        keep_resident=True, omit_data=not return_data, ttl_seconds=ttl_seconds
    )


def _result(
    result: types_pb2.ImageResult, keep_resident: bool, return_data: bool, one_slice: bool = False
) -> Any:
    data = from_image(result.image) if return_data else None
    if one_slice and data is not None and data.ndim == 2:
        data = data[np.newaxis]
    return Resident(result.handle, data) if keep_resident else data
