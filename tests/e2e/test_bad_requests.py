"""Malformed and hostile requests over the wire, table-driven: every RPC that exists gets wrong byte
lengths, zero/negative/huge sizes, unknown enums, NaN/Inf values, out-of-range indices, truncated
or bomb-like PNG/JPEG, elements and meshes over the limits, foreign handles (another identity's),
streams that stop mid-object, shared-memory names, sizes and references out of bounds or of another
identity, and missing or unknown tokens. Each case asserts the status code, the ErrorInfo's
reason and field (hard-coded per case: the field the request itself has, never derived from the
message), that the field resolves in the request message's descriptor and the reason is one
error_reason.proto lists, and that the message starts with the field and holds the case's text;
afterwards the server is still SERVING, still running, and a valid request succeeds. The server
runs with TLS and bearer tokens so that "another identity" exists. Needs CUIMG_SERVER and the
generated stubs on PYTHONPATH.

To add cases for a new RPC, append Case rows to CASES (DETECT_CASES shows the shape) and, if it
is not unary, teach `invoke` its call shape."""
import collections
import math
import os
import re
import unittest

import grpc
import numpy as np

from bad_inputs import gray_png, png, png_header_only, torus
from cuimg import wire_contract
from cuimg.v1 import (
    deform_pb2,
    detection_pb2,
    error_reason_pb2,
    gradient_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    pyramid_pb2,
    resident_pb2,
    server_info_pb2,
    shared_memory_pb2,
    streaming_pb2,
    types_pb2,
)
from google.rpc import error_details_pb2, status_pb2
from grpc_protocols import health_pb2, health_pb2_grpc
from server_process import ServerProcess
from shm_objects import ShmObject
from tls_material import TlsMaterial

SERVER = os.environ["CUIMG_SERVER"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
ALICE = "alice-token-for-bad-requests-0001"
BOB = "bob-token-for-bad-requests-00002"
RESIDENT_BUDGET = 16 << 20
INFLIGHT_PER_DEVICE = 256 << 20
SHM_BUDGET = 1 << 20
SHM_BYTES = 4096

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED

# rpc: the Imaging method; build(fx) -> the request (for the streams: the list of messages);
# code: the expected status; reason and field: the ErrorInfo's ("" when the error is about no one
# field); text: a part of the message; token: the caller's.
Case = collections.namedtuple(
    "Case", "name rpc build code reason field text token", defaults=(ALICE,)
)
# The message type each RPC's fields are paths of (a stream's: its message type).
REQUEST_TYPES = {
    "Upload": resident_pb2.UploadRequest,
    "ProcessVolumeStream": streaming_pb2.VolumeStreamRequest,
}
REASONS = {
    v.name[len("ERROR_REASON_") :]
    for v in error_reason_pb2.ErrorReason.DESCRIPTOR.values
    if v.number != 0
}


def field_path_error(message, path):
    """ "" when `path` names a field of `message` (names joined by '.', an index only on a
    repeated field and below its size, a oneof's name as the last name), else why not."""
    names = path.split(".")
    for i, part in enumerate(names):
        last = i + 1 == len(names)
        match = re.fullmatch(r"([a-z_][a-z0-9_]*)(?:\[([0-9]+)\])?", part)
        if not match:
            return f"{part!r} is not a field name"
        name, index = match.group(1), match.group(2)
        field = message.DESCRIPTOR.fields_by_name.get(name)
        if field is None:
            if last and index is None and name in message.DESCRIPTOR.oneofs_by_name:
                return ""
            return f"{message.DESCRIPTOR.full_name} has no field {name!r}"
        repeated = field.label == field.LABEL_REPEATED
        if index is not None:
            if not repeated:
                return f"{name!r} is not repeated"
            if int(index) >= len(getattr(message, name)):
                return f"{name!r} has no element {index}"
        elif repeated and not last:
            return f"{name!r} is repeated: the path needs an index"
        if last:
            return ""
        if field.message_type is None:
            return f"{name!r} is not a message"
        value = getattr(message, name)
        message = value[int(index)] if index is not None else value
    return ""


def request_of(case, request):
    """The message a case's field is a path of: the request, or a stream's first message."""
    if isinstance(request, list):
        return request[0] if request else REQUEST_TYPES[case.rpc]()
    return request


# --- request builders -------------------------------------------------------------------------


def u8_image(width=8, height=8, depth=0, channels=0, data=None, **kwargs):
    n = width * height * max(depth, 1) * max(channels, 1)
    return types_pb2.Image(
        pixel_type=kwargs.pop("pixel_type", types_pb2.PIXEL_TYPE_U8),
        width=width,
        height=height,
        depth=depth,
        channels=channels,
        data=bytes(n) if data is None else data,
        **kwargs,
    )


def element(shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=3, height=3, **kwargs):
    return morphology_pb2.StructuringElement(shape=shape, width=width, height=height, **kwargs)


def step(op=morphology_pb2.MORPHOLOGY_OP_DILATE, **kwargs):
    kwargs.setdefault("element", element())
    return morphology_pb2.MorphologyStep(op=op, **kwargs)


def morph(image=None, steps=None, source=None, **kwargs):
    if source is None:
        source = types_pb2.ImageSource(image=image if image is not None else u8_image())
    return morphology_pb2.MorphologyRequest(input=source, steps=steps or [step()], **kwargs)


def morph_step(**kwargs):
    return morph(steps=[step(**kwargs)])


def morph_element(**kwargs):
    return morph(steps=[step(element=element(**kwargs))])


def rle_frame(segment):
    """An RLE frame of one segment (8-bit samples)."""
    return (1).to_bytes(4, "little") + (64).to_bytes(4, "little") + bytes(56) + segment


def dicom_frames(uid="1.2.840.10008.1.2.5", rows=8, samples=1, photometric=2, data=None, slope=1.0):
    """An 8x8 u8 frame source: by default an RLE frame of 64 zeros."""
    module = types_pb2.DicomPixelModule(
        rows=rows,
        columns=8,
        samples_per_pixel=samples,
        bits_allocated=8,
        photometric_interpretation=photometric,
    )
    frames = [
        types_pb2.DicomFrame(data=d, rescale_slope=slope)
        for d in (data or [rle_frame(bytes([0xC1, 0]))])
    ]
    return types_pb2.ImageSource(
        dicom_frames=types_pb2.DicomFrames(
            transfer_syntax_uid=uid, pixel_module=module, frames=frames
        )
    )


def encoded(data):
    return morph(source=types_pb2.ImageSource(encoded=data))


def gradient(image=None, **kwargs):
    return gradient_pb2.GradientRequest(
        input=types_pb2.ImageSource(image=image if image is not None else u8_image()), **kwargs
    )


def pyramid(image=None, **kwargs):
    return pyramid_pb2.PyramidRequest(
        input=types_pb2.ImageSource(image=image if image is not None else u8_image(64, 64)),
        **kwargs,
    )


POS, TRIS = torus()


def mesh(
    pos=POS, tris=TRIS, vertex_count=None, triangle_count=None, positions=None, triangles=None
):
    return deform_pb2.Mesh(
        vertex_count=len(pos) if vertex_count is None else vertex_count,
        triangle_count=len(tris) if triangle_count is None else triangle_count,
        positions=pos.tobytes() if positions is None else positions,
        triangles=tris.tobytes() if triangles is None else triangles,
    )


def lattice(counts=(2, 2, 2), **overrides):
    lo = POS.min(0) - 0.1
    size = POS.max(0) + 0.1 - lo
    fields = dict(
        origin=types_pb2.Vec3(x=lo[0], y=lo[1], z=lo[2]),
        s=types_pb2.Vec3(x=size[0]),
        t=types_pb2.Vec3(y=size[1]),
        u=types_pb2.Vec3(z=size[2]),
        count_s=counts[0],
        count_t=counts[1],
        count_u=counts[2],
        displacements=[0.0] * (3 * int(np.prod(counts))),
    )
    fields.update(overrides)
    return deform_pb2.Lattice(**fields)


def deform(m=None, handle=None, lat=None, **kwargs):
    source = (
        deform_pb2.MeshSource(handle=handle)
        if handle is not None
        else deform_pb2.MeshSource(mesh=m if m is not None else mesh())
    )
    return deform_pb2.DeformRequest(
        mesh=source, lattice=lat if lat is not None else lattice(), **kwargs
    )


def with_vertex(value):
    pos = POS.copy()
    pos[3, 1] = value
    return mesh(pos=pos)


def with_index(value):
    tris = TRIS.copy()
    tris[5, 2] = value
    return mesh(tris=tris)


def upload_image_messages(width, height, sent, chunks=()):
    first = resident_pb2.UploadRequest(image=u8_image(width, height, data=bytes(sent)))
    return [first] + [resident_pb2.UploadRequest(chunk=bytes(n)) for n in chunks]


def jpeg_bytes():
    """A real baseline JPEG, from Debian's opencv-doc samples (the GPU bundle carries it)."""
    with open(os.path.join(DATA, "fruits.jpg"), "rb") as f:
        return f.read()


# --- the table --------------------------------------------------------------------------------

INLINE_STEP_CASES = [
    Case(
        "morphology/no input",
        "Morphology",
        lambda fx: morphology_pb2.MorphologyRequest(steps=[step()]),
        INVALID,
        "FIELD_REQUIRED",
        "input.source",
        "input.source: one of",
    ),
    Case(
        "morphology/width 0",
        "Morphology",
        lambda fx: morph(u8_image(data=bytes(64), width=0)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "input.image.width",
        "input.image.width",
    ),
    Case(
        "morphology/height 0",
        "Morphology",
        lambda fx: morph(u8_image(data=bytes(64), height=0)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "input.image.height",
        "input.image.height",
    ),
    Case(
        "morphology/width over max_side",
        "Morphology",
        lambda fx: morph(u8_image(width=70000, height=1, data=b"")),
        INVALID,
        "LIMIT_EXCEEDED",
        "input.image.width",
        "input.image.width",
    ),
    Case(
        "morphology/depth over max_side",
        "Morphology",
        lambda fx: morph(u8_image(depth=70000, data=b"")),
        INVALID,
        "LIMIT_EXCEEDED",
        "input.image.depth",
        "input.image.depth",
    ),
    Case(
        "morphology/5 channels",
        "Morphology",
        lambda fx: morph(u8_image(channels=5)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "input.image.channels",
        "input.image.channels",
    ),
    Case(
        "morphology/3 channels",
        "Morphology",
        lambda fx: morph(u8_image(channels=3)),
        INVALID,
        "UNSUPPORTED_IMAGE_SHAPE",
        "input.image",
        "input.image: has 3 channels",
    ),
    Case(
        "morphology/data one byte short",
        "Morphology",
        lambda fx: morph(u8_image(data=bytes(63))),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "input.image.data",
        "input.image.data",
    ),
    Case(
        "morphology/data one byte long",
        "Morphology",
        lambda fx: morph(u8_image(data=bytes(65))),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "input.image.data",
        "input.image.data",
    ),
    Case(
        "morphology/u16 data of u8 length",
        "Morphology",
        lambda fx: morph(u8_image(pixel_type=types_pb2.PIXEL_TYPE_U16, data=bytes(64))),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "input.image.data",
        "input.image.data",
    ),
    Case(
        "morphology/unknown pixel type",
        "Morphology",
        lambda fx: morph(u8_image(pixel_type=99)),
        INVALID,
        "UNKNOWN_ENUM_VALUE",
        "input.image.pixel_type",
        "input.image.pixel_type",
    ),
    Case(
        "morphology/unspecified pixel type",
        "Morphology",
        lambda fx: morph(u8_image(pixel_type=types_pb2.PIXEL_TYPE_UNSPECIFIED)),
        INVALID,
        "FIELD_REQUIRED",
        "input.image.pixel_type",
        "input.image.pixel_type",
    ),
    Case(
        "morphology/2^32 pixels",
        "Morphology",
        lambda fx: morph(u8_image(width=65536, height=65536, data=b"")),
        INVALID,
        "LIMIT_EXCEEDED",
        "input.image",
        "max_pixels",
    ),
    Case(
        "morphology/NaN spacing",
        "Morphology",
        lambda fx: morph(u8_image(spacing=types_pb2.Spacing(x_mm=math.nan))),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "input.image.spacing.x_mm",
        "input.image.spacing.x_mm",
    ),
    Case(
        "morphology/negative spacing",
        "Morphology",
        lambda fx: morph(u8_image(spacing=types_pb2.Spacing(y_mm=-1))),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "input.image.spacing.y_mm",
        "input.image.spacing.y_mm",
    ),
    Case(
        "morphology/infinite spacing",
        "Morphology",
        lambda fx: morph(u8_image(spacing=types_pb2.Spacing(z_mm=math.inf))),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "input.image.spacing.z_mm",
        "input.image.spacing.z_mm",
    ),
    Case(
        "morphology/no steps",
        "Morphology",
        lambda fx: morphology_pb2.MorphologyRequest(input=types_pb2.ImageSource(image=u8_image())),
        INVALID,
        "FIELD_REQUIRED",
        "steps",
        "steps",
    ),
    Case(
        "morphology/65 steps",
        "Morphology",
        lambda fx: morph(steps=[step()] * 65),
        INVALID,
        "LIMIT_EXCEEDED",
        "steps",
        "max_steps",
    ),
    Case(
        "morphology/unknown op",
        "Morphology",
        lambda fx: morph_step(op=77),
        INVALID,
        "UNKNOWN_ENUM_VALUE",
        "steps[0].op",
        "steps[0].op",
    ),
    Case(
        "morphology/unspecified op",
        "Morphology",
        lambda fx: morph_step(op=morphology_pb2.MORPHOLOGY_OP_UNSPECIFIED),
        INVALID,
        "FIELD_REQUIRED",
        "steps[0].op",
        "steps[0].op",
    ),
    Case(
        "morphology/unknown shape",
        "Morphology",
        lambda fx: morph_element(shape=42),
        INVALID,
        "UNKNOWN_ENUM_VALUE",
        "steps[0].element.shape",
        "steps[0].element.shape",
    ),
    Case(
        "morphology/element width over the limit",
        "Morphology",
        lambda fx: morph_element(width=1024),
        INVALID,
        "ELEMENT_TOO_LARGE",
        "steps[0].element.width",
        "steps[0].element.width",
    ),
    Case(
        "morphology/element height 0",
        "Morphology",
        lambda fx: morph_element(height=0),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "steps[0].element.height",
        "steps[0].element.height",
    ),
    Case(
        "morphology/element depth over the limit",
        "Morphology",
        lambda fx: morph_element(depth=1024),
        INVALID,
        "ELEMENT_TOO_LARGE",
        "steps[0].element.depth",
        "steps[0].element.depth",
    ),
    Case(
        "morphology/huge element in a later step",
        "Morphology",
        lambda fx: morph(steps=[step(), step(element=element(width=4000000000))]),
        INVALID,
        "ELEMENT_TOO_LARGE",
        "steps[1].element.width",
        "steps[1].element.width",
    ),
    Case(
        "morphology/anchor outside the element",
        "Morphology",
        lambda fx: morph_element(anchor_x=3),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "steps[0].element.anchor_x",
        "steps[0].element.anchor_x",
    ),
    Case(
        "morphology/custom mask of wrong size",
        "Morphology",
        lambda fx: morph_element(shape=morphology_pb2.ELEMENT_SHAPE_CUSTOM, mask=b"\x01" * 8),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "steps[0].element.mask",
        "steps[0].element.mask",
    ),
    Case(
        "morphology/empty custom mask",
        "Morphology",
        lambda fx: morph_element(shape=morphology_pb2.ELEMENT_SHAPE_CUSTOM, mask=bytes(9)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "steps[0].element.mask",
        "steps[0].element.mask",
    ),
    Case(
        "morphology/mask on a rect",
        "Morphology",
        lambda fx: morph_element(mask=b"\x01" * 9),
        INVALID,
        "INVALID_COMBINATION",
        "steps[0].element.mask",
        "steps[0].element.mask",
    ),
    Case(
        "morphology/1001 iterations",
        "Morphology",
        lambda fx: morph_step(iterations=1001),
        INVALID,
        "LIMIT_EXCEEDED",
        "steps[0].iterations",
        "steps[0].iterations",
    ),
    Case(
        "morphology/unknown border mode",
        "Morphology",
        lambda fx: morph_step(border_mode=9),
        INVALID,
        "UNKNOWN_ENUM_VALUE",
        "steps[0].border_mode",
        "steps[0].border_mode",
    ),
    Case(
        "morphology/NaN border on u8",
        "Morphology",
        lambda fx: morph_step(
            border_mode=morphology_pb2.BORDER_MODE_CONSTANT, border_value=math.nan
        ),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "steps[0].border_value",
        "steps[0].border_value",
    ),
    Case(
        "morphology/omit_data alone",
        "Morphology",
        lambda fx: morph(output=types_pb2.OutputOptions(omit_data=True)),
        INVALID,
        "INVALID_COMBINATION",
        "output.omit_data",
        "output.omit_data",
    ),
    Case(
        "morphology/ttl without keep_resident",
        "Morphology",
        lambda fx: morph(output=types_pb2.OutputOptions(ttl_seconds=5)),
        INVALID,
        "INVALID_COMBINATION",
        "output.ttl_seconds",
        "output.ttl_seconds",
    ),
    Case(
        "morphology/ttl over the maximum",
        "Morphology",
        lambda fx: morph(output=types_pb2.OutputOptions(keep_resident=True, ttl_seconds=10**6)),
        INVALID,
        "LIMIT_EXCEEDED",
        "output.ttl_seconds",
        "ttl_seconds",
    ),
]

HANDLE_AND_ENCODED_CASES = [
    Case(
        "morphology/empty handle",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle="")),
        INVALID,
        "INVALID_FORMAT",
        "input.handle",
        "input.handle",
    ),
    Case(
        "morphology/200-character handle",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle="h" * 200)),
        INVALID,
        "INVALID_FORMAT",
        "input.handle",
        "input.handle",
    ),
    Case(
        "morphology/unknown handle",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle="img-0123456789abcdef")),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "input.handle",
        "input.handle",
    ),
    Case(
        "morphology/another identity's image",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle=fx["bob_image"])),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "input.handle",
        "input.handle",
    ),
    Case(
        "morphology/a mesh handle as image",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle=fx["alice_mesh"])),
        INVALID,
        "OBJECT_KIND_MISMATCH",
        "input.handle",
        "input.handle",
    ),
    Case(
        "morphology/empty encoded",
        "Morphology",
        lambda fx: encoded(b""),
        INVALID,
        "FIELD_REQUIRED",
        "input.encoded",
        "input.encoded",
    ),
    Case(
        "morphology/not an image",
        "Morphology",
        lambda fx: encoded(b"GIF89a" + bytes(100)),
        INVALID,
        "UNSUPPORTED_ENCODING",
        "input.encoded",
        "input.encoded",
    ),
    Case(
        "morphology/truncated PNG",
        "Morphology",
        lambda fx: encoded(gray_png(np.arange(4096).reshape(64, 64) % 251)[:60]),
        INVALID,
        "CORRUPT_ENCODED_DATA",
        "input.encoded",
        "input.encoded",
    ),
    Case(
        "morphology/PNG header without pixels",
        "Morphology",
        lambda fx: encoded(png_header_only(64, 64)),
        INVALID,
        "CORRUPT_ENCODED_DATA",
        "input.encoded",
        "input.encoded",
    ),
    Case(
        "morphology/PNG bomb of 81 MP zeros",
        "Morphology",
        lambda fx: encoded(png(9000, 9000)),
        INVALID,
        "LIMIT_EXCEEDED",
        "input.encoded",
        "max_decoded_pixels",
    ),
    Case(
        "morphology/PNG header claiming 4 GP",
        "Morphology",
        lambda fx: encoded(png_header_only(65536, 65536)),
        INVALID,
        "LIMIT_EXCEEDED",
        "input.encoded",
        "input.encoded",
    ),
    Case(
        "morphology/PNG wider than max_side",
        "Morphology",
        lambda fx: encoded(png_header_only(100000, 1)),
        INVALID,
        "LIMIT_EXCEEDED",
        "input.encoded",
        "max_side",
    ),
    Case(
        "morphology/PNG with zero width",
        "Morphology",
        lambda fx: encoded(png_header_only(0, 16)),
        INVALID,
        "CORRUPT_ENCODED_DATA",
        "input.encoded",
        "input.encoded",
    ),
    Case(
        "morphology/colour PNG",
        "Morphology",
        lambda fx: encoded(png(8, 8, color_type=2)),
        INVALID,
        "UNSUPPORTED_IMAGE_SHAPE",
        "input.encoded",
        "input.encoded: has 3 channels",
    ),
    Case(
        "morphology/truncated JPEG header",
        "Morphology",
        lambda fx: encoded(jpeg_bytes()[:40]),
        INVALID,
        "CORRUPT_ENCODED_DATA",
        "input.encoded",
        "input.encoded",
    ),
    Case(
        "morphology/JPEG with corrupt header",
        "Morphology",
        lambda fx: encoded(b"\xff\xd8\xff" + bytes(2000)),
        INVALID,
        "CORRUPT_ENCODED_DATA",
        "input.encoded",
        "input.encoded",
    ),
]

GRADIENT_PYRAMID_CASES = [
    Case(
        "gradient/no input",
        "Gradient",
        lambda fx: gradient_pb2.GradientRequest(),
        INVALID,
        "FIELD_REQUIRED",
        "input.source",
        "input",
    ),
    Case(
        "gradient/even kernel length",
        "Gradient",
        lambda fx: gradient(kernel_length=4),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "kernel_length",
        "kernel_length",
    ),
    Case(
        "gradient/kernel length 33",
        "Gradient",
        lambda fx: gradient(kernel_length=33),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "kernel_length",
        "kernel_length",
    ),
    Case(
        "gradient/NaN sigma",
        "Gradient",
        lambda fx: gradient(sigma=math.nan),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "sigma",
        "sigma",
    ),
    Case(
        "gradient/negative sigma",
        "Gradient",
        lambda fx: gradient(sigma=-1),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "sigma",
        "sigma",
    ),
    Case(
        "gradient/infinite sigma",
        "Gradient",
        lambda fx: gradient(sigma=math.inf),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "sigma",
        "sigma",
    ),
    Case(
        "gradient/2 channels",
        "Gradient",
        lambda fx: gradient(u8_image(channels=2)),
        INVALID,
        "UNSUPPORTED_IMAGE_SHAPE",
        "input.image",
        "input.image",
    ),
    Case(
        "gradient/data short",
        "Gradient",
        lambda fx: gradient(u8_image(data=b"x")),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "input.image.data",
        "input.image.data",
    ),
    Case(
        "gradient/another identity's image",
        "Gradient",
        lambda fx: gradient_pb2.GradientRequest(
            input=types_pb2.ImageSource(handle=fx["bob_image"])
        ),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "input.handle",
        "input.handle",
    ),
    Case(
        "gradient/results over the in-flight limit",
        "Gradient",
        lambda fx: gradient(u8_image(4096, 4096), magnitude=True, angle=True),
        EXHAUSTED,
        "LIMIT_EXCEEDED",
        "",
        "max_inflight_bytes_per_device",
    ),
    Case(
        "pyramid/65 levels",
        "Pyramid",
        lambda fx: pyramid(levels=65),
        INVALID,
        "LIMIT_EXCEEDED",
        "levels",
        "levels",
    ),
    Case(
        "pyramid/ratio below 1",
        "Pyramid",
        lambda fx: pyramid(ratio=0.5),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "ratio",
        "ratio",
    ),
    Case(
        "pyramid/NaN ratio",
        "Pyramid",
        lambda fx: pyramid(ratio=math.nan),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "ratio",
        "ratio",
    ),
    Case(
        "pyramid/unknown mode",
        "Pyramid",
        lambda fx: pyramid(mode=9),
        INVALID,
        "UNKNOWN_ENUM_VALUE",
        "mode",
        "mode",
    ),
    Case(
        "pyramid/output type neither f32 nor the input's",
        "Pyramid",
        lambda fx: pyramid(output_type=types_pb2.PIXEL_TYPE_I16),
        INVALID,
        "UNSUPPORTED_PIXEL_TYPE",
        "output_type",
        "output_type",
    ),
    Case(
        "pyramid/unknown output type",
        "Pyramid",
        lambda fx: pyramid(output_type=99),
        INVALID,
        "UNKNOWN_ENUM_VALUE",
        "output_type",
        "output_type",
    ),
    Case(
        "pyramid/volume input",
        "Pyramid",
        lambda fx: pyramid(u8_image(8, 8, depth=3)),
        INVALID,
        "UNSUPPORTED_IMAGE_SHAPE",
        "input.image",
        "input.image: is a volume",
    ),
    Case(
        "pyramid/min width over max_side",
        "Pyramid",
        lambda fx: pyramid(min_width=70000),
        INVALID,
        "LIMIT_EXCEEDED",
        "min_width",
        "min_width",
    ),
    Case(
        "pyramid/PNG bomb",
        "Pyramid",
        lambda fx: pyramid_pb2.PyramidRequest(input=types_pb2.ImageSource(encoded=png(9000, 9000))),
        INVALID,
        "LIMIT_EXCEEDED",
        "input.encoded",
        "max_decoded_pixels",
    ),
]

DEFORM_CASES = [
    Case(
        "deform/no mesh",
        "Deform",
        lambda fx: deform_pb2.DeformRequest(lattice=lattice()),
        INVALID,
        "FIELD_REQUIRED",
        "mesh.source",
        "mesh.source: one of",
    ),
    Case(
        "deform/no lattice",
        "Deform",
        lambda fx: deform_pb2.DeformRequest(mesh=deform_pb2.MeshSource(mesh=mesh())),
        INVALID,
        "FIELD_REQUIRED",
        "lattice",
        "lattice",
    ),
    Case(
        "deform/zero vertices",
        "Deform",
        lambda fx: deform(mesh(vertex_count=0)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "mesh.mesh.vertex_count",
        "mesh.mesh.vertex_count",
    ),
    Case(
        "deform/vertices over max_mesh_vertices",
        "Deform",
        lambda fx: deform(mesh(vertex_count=(1 << 24) + 1)),
        INVALID,
        "LIMIT_EXCEEDED",
        "mesh.mesh.vertex_count",
        "mesh.mesh.vertex_count",
    ),
    Case(
        "deform/positions one float short",
        "Deform",
        lambda fx: deform(mesh(positions=POS.tobytes()[:-4])),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "mesh.mesh.positions",
        "mesh.mesh.positions",
    ),
    Case(
        "deform/triangles one index long",
        "Deform",
        lambda fx: deform(mesh(triangles=TRIS.tobytes() + bytes(4))),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "mesh.mesh.triangles",
        "mesh.mesh.triangles",
    ),
    Case(
        "deform/triangle count lies",
        "Deform",
        lambda fx: deform(mesh(triangle_count=1)),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "mesh.mesh.triangles",
        "mesh.mesh.triangles",
    ),
    Case(
        "deform/NaN vertex",
        "Deform",
        lambda fx: deform(with_vertex(np.nan)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "mesh.mesh.positions",
        "float 10 (vertex 3)",
    ),
    Case(
        "deform/infinite vertex",
        "Deform",
        lambda fx: deform(with_vertex(np.inf)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "mesh.mesh.positions",
        "float 10 (vertex 3)",
    ),
    Case(
        "deform/index out of range",
        "Deform",
        lambda fx: deform(with_index(len(POS))),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "mesh.mesh.triangles",
        "index 17 (triangle 5)",
    ),
    Case(
        "deform/index 2^32-1",
        "Deform",
        lambda fx: deform(with_index(0xFFFFFFFF)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "mesh.mesh.triangles",
        "index 17 (triangle 5)",
    ),
    Case(
        "deform/count_s 1",
        "Deform",
        lambda fx: deform(lat=lattice(count_s=1)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "lattice.count_s",
        "lattice.count_s",
    ),
    Case(
        "deform/count_u 10",
        "Deform",
        lambda fx: deform(lat=lattice(count_u=10)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "lattice.count_u",
        "lattice.count_u",
    ),
    Case(
        "deform/displacements short",
        "Deform",
        lambda fx: deform(lat=lattice(displacements=[0.0] * 5)),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "lattice.displacements",
        "lattice.displacements",
    ),
    Case(
        "deform/NaN displacement",
        "Deform",
        lambda fx: deform(lat=lattice(displacements=[math.nan] + [0.0] * 23)),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "lattice.displacements[0]",
        "lattice.displacements[0]",
    ),
    Case(
        "deform/infinite origin",
        "Deform",
        lambda fx: deform(lat=lattice(origin=types_pb2.Vec3(x=math.inf))),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "lattice.origin.x",
        "lattice.origin.x",
    ),
    Case(
        "deform/flat lattice",
        "Deform",
        lambda fx: deform(lat=lattice(u=types_pb2.Vec3())),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "lattice",
        "lattice: s, t and u must span",
    ),
    Case(
        "deform/unknown outputs",
        "Deform",
        lambda fx: deform(outputs=9),
        INVALID,
        "UNKNOWN_ENUM_VALUE",
        "outputs",
        "outputs",
    ),
    Case(
        "deform/unknown mesh handle",
        "Deform",
        lambda fx: deform(handle="mesh-00"),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "mesh.handle",
        "mesh.handle",
    ),
    Case(
        "deform/another identity's mesh",
        "Deform",
        lambda fx: deform(handle=fx["bob_mesh"]),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "mesh.handle",
        "mesh.handle",
    ),
    Case(
        "deform/an image handle as mesh",
        "Deform",
        lambda fx: deform(handle=fx["alice_image"]),
        INVALID,
        "OBJECT_KIND_MISMATCH",
        "mesh.handle",
        "mesh.handle",
    ),
    Case(
        "deform/empty mesh handle",
        "Deform",
        lambda fx: deform(handle=""),
        INVALID,
        "INVALID_FORMAT",
        "mesh.handle",
        "mesh.handle",
    ),
]

RESIDENT_CASES = [
    Case(
        "upload/empty stream",
        "Upload",
        lambda fx: [],
        INVALID,
        "FIELD_REQUIRED",
        "content",
        "content",
    ),
    Case(
        "upload/chunk first",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(chunk=b"abc")],
        INVALID,
        "MESSAGE_OUT_OF_ORDER",
        "chunk",
        "chunk",
    ),
    Case(
        "upload/width 0",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(image=u8_image(data=b"", width=0))],
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "image.width",
        "image.width",
    ),
    Case(
        "upload/unknown pixel type",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(image=u8_image(pixel_type=7))],
        INVALID,
        "UNKNOWN_ENUM_VALUE",
        "image.pixel_type",
        "image.pixel_type",
    ),
    Case(
        "upload/more bytes than the image",
        "Upload",
        lambda fx: upload_image_messages(8, 8, 60, [10]),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "chunk",
        "chunk",
    ),
    Case(
        "upload/stream stops mid-image",
        "Upload",
        lambda fx: upload_image_messages(100, 100, 500, [1000]),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "chunk",
        "chunk",
    ),
    Case(
        "upload/image then a second header",
        "Upload",
        lambda fx: upload_image_messages(8, 8, 10) + [resident_pb2.UploadRequest(image=u8_image())],
        INVALID,
        "MESSAGE_OUT_OF_ORDER",
        "image",
        "image: only the first message",
    ),
    Case(
        "upload/ttl in a later message",
        "Upload",
        lambda fx: upload_image_messages(8, 8, 10)
        + [resident_pb2.UploadRequest(chunk=bytes(54), ttl_seconds=5)],
        INVALID,
        "MESSAGE_OUT_OF_ORDER",
        "ttl_seconds",
        "ttl_seconds",
    ),
    Case(
        "upload/image over the resident budget",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(image=u8_image(8192, 4096, data=b""))],
        EXHAUSTED,
        "LIMIT_EXCEEDED",
        "image",
        "image",
    ),
    Case(
        "upload/mesh triangles before positions",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(mesh=mesh(positions=POS.tobytes()[:12]))],
        INVALID,
        "MESSAGE_OUT_OF_ORDER",
        "mesh.triangles",
        "mesh.triangles",
    ),
    Case(
        "upload/mesh stream stops mid-positions",
        "Upload",
        lambda fx: [
            resident_pb2.UploadRequest(mesh=mesh(positions=POS.tobytes()[:100], triangles=b""))
        ],
        INVALID,
        "DATA_SIZE_MISMATCH",
        "chunk",
        "chunk",
    ),
    Case(
        "upload/mesh with an index out of range",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(mesh=with_index(10**6))],
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "mesh.triangles",
        "index 17 (triangle 5)",
    ),
    Case(
        "upload/mesh with a NaN vertex",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(mesh=with_vertex(np.nan))],
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "mesh.positions",
        "float 10 (vertex 3)",
    ),
    Case(
        "upload/mesh over max_mesh_vertices",
        "Upload",
        lambda fx: [
            resident_pb2.UploadRequest(
                mesh=mesh(vertex_count=1 << 25, positions=b"", triangles=b"")
            )
        ],
        INVALID,
        "LIMIT_EXCEEDED",
        "mesh.vertex_count",
        "mesh.vertex_count",
    ),
    Case(
        "download/chunk_bytes too small",
        "Download",
        lambda fx: resident_pb2.DownloadRequest(handle=fx["alice_image"], chunk_bytes=100),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "chunk_bytes",
        "chunk_bytes",
    ),
    Case(
        "download/unknown handle",
        "Download",
        lambda fx: resident_pb2.DownloadRequest(handle="img-nope"),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "handle",
        "handle",
    ),
    Case(
        "download/another identity's image",
        "Download",
        lambda fx: resident_pb2.DownloadRequest(handle=fx["bob_image"]),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "handle",
        "handle",
    ),
    Case(
        "download/another identity's mesh",
        "Download",
        lambda fx: resident_pb2.DownloadRequest(handle=fx["bob_mesh"]),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "handle",
        "handle",
    ),
    Case(
        "release/unknown handle",
        "Release",
        lambda fx: resident_pb2.ReleaseRequest(handle="img-nope"),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "handle",
        "handle",
    ),
    Case(
        "release/another identity's image",
        "Release",
        lambda fx: resident_pb2.ReleaseRequest(handle=fx["bob_image"]),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "handle",
        "handle",
    ),
]

AUTH_CASES = [
    Case(
        "auth/no token",
        "Morphology",
        lambda fx: morph(),
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        None,
    ),
    Case(
        "auth/unknown token",
        "Gradient",
        lambda fx: gradient(),
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        "an-unknown-token-of-some-length",
    ),
    Case(
        "auth/no token on upload",
        "Upload",
        lambda fx: upload_image_messages(8, 8, 64),
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        None,
    ),
    Case(
        "auth/unknown token on list",
        "ListResident",
        lambda fx: resident_pb2.ListResidentRequest(),
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        "an-unknown-token-of-some-length",
    ),
]


def detect(image=None, **kwargs):
    return detection_pb2.DetectPedestriansRequest(
        input=types_pb2.ImageSource(image=image if image is not None else u8_image(64, 128)),
        **kwargs,
    )


# --- DetectPedestrians (and ListModels): more rows for the detector go here. ----------------------
DETECT_CASES = [
    Case(
        "detect/no input",
        "DetectPedestrians",
        lambda fx: detection_pb2.DetectPedestriansRequest(),
        INVALID,
        "FIELD_REQUIRED",
        "input.source",
        "input",
    ),
    Case(
        "detect/unknown model",
        "DetectPedestrians",
        lambda fx: detect(model="no_such_model"),
        NOT_FOUND,
        "MODEL_NOT_FOUND",
        "model",
        "model",
    ),
    # A name no model can have is simply not loaded: nothing is looked up on disk per request.
    Case(
        "detect/model name with a path",
        "DetectPedestrians",
        lambda fx: detect(model="../etc/passwd"),
        NOT_FOUND,
        "MODEL_NOT_FOUND",
        "model",
        "model",
    ),
    Case(
        "detect/NaN hit threshold",
        "DetectPedestrians",
        lambda fx: detect(hit_threshold=math.nan),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "hit_threshold",
        "hit_threshold",
    ),
    Case(
        "detect/win stride not a multiple of 8",
        "DetectPedestrians",
        lambda fx: detect(win_stride=12),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "win_stride",
        "win_stride",
    ),
    Case(
        "detect/padding 257",
        "DetectPedestrians",
        lambda fx: detect(padding=257),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "padding",
        "padding",
    ),
    Case(
        "detect/scale below 1",
        "DetectPedestrians",
        lambda fx: detect(scale=0.5),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "scale",
        "scale",
    ),
    Case(
        "detect/65 levels",
        "DetectPedestrians",
        lambda fx: detect(max_levels=65),
        INVALID,
        "LIMIT_EXCEEDED",
        "max_levels",
        "max_levels",
    ),
    Case(
        "detect/unknown grouping",
        "DetectPedestrians",
        lambda fx: detect(grouping=9),
        INVALID,
        "UNKNOWN_ENUM_VALUE",
        "grouping",
        "grouping",
    ),
    Case(
        "detect/NaN group eps",
        "DetectPedestrians",
        lambda fx: detect(group_eps=math.nan),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "group_eps",
        "group_eps",
    ),
    Case(
        "detect/u16 image",
        "DetectPedestrians",
        lambda fx: detect(
            u8_image(64, 128, pixel_type=types_pb2.PIXEL_TYPE_U16, data=bytes(64 * 128 * 2))
        ),
        INVALID,
        "UNSUPPORTED_PIXEL_TYPE",
        "input.image",
        "input.image",
    ),
    Case(
        "detect/colour image one byte short",
        "DetectPedestrians",
        lambda fx: detect(u8_image(64, 128, channels=3, data=bytes(64 * 128 * 3 - 1))),
        INVALID,
        "DATA_SIZE_MISMATCH",
        "input.image.data",
        "input.image.data",
    ),
    Case(
        "detect/volume",
        "DetectPedestrians",
        lambda fx: detect(u8_image(64, 128, depth=2)),
        INVALID,
        "UNSUPPORTED_IMAGE_SHAPE",
        "input.image",
        "input.image",
    ),
    Case(
        "detect/PNG bomb",
        "DetectPedestrians",
        lambda fx: detection_pb2.DetectPedestriansRequest(
            input=types_pb2.ImageSource(encoded=png(9000, 9000))
        ),
        INVALID,
        "LIMIT_EXCEEDED",
        "input.encoded",
        "max_decoded_pixels",
    ),
    Case(
        "detect/another identity's image",
        "DetectPedestrians",
        lambda fx: detection_pb2.DetectPedestriansRequest(
            input=types_pb2.ImageSource(handle=fx["bob_image"])
        ),
        NOT_FOUND,
        "HANDLE_NOT_FOUND",
        "input.handle",
        "input.handle",
    ),
    Case(
        "detect/no token",
        "DetectPedestrians",
        lambda fx: detect(),
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        None,
    ),
    Case(
        "models/unknown token",
        "ListModels",
        lambda fx: detection_pb2.ListModelsRequest(),
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        "an-unknown-token-of-some-length",
    ),
    Case(
        "server info/unknown token",
        "GetServerInfo",
        lambda fx: server_info_pb2.GetServerInfoRequest(),
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        "an-unknown-token-of-some-length",
    ),
    # DICOM frames (types.proto's DicomFrames).
    Case(
        "frames/unknown transfer syntax",
        "Morphology",
        lambda fx: morph(source=dicom_frames(uid="1.2.840.10008.1.2.4.100")),
        INVALID,
        "UNSUPPORTED_ENCODING",
        "input.dicom_frames.transfer_syntax_uid",
        "not one this server decodes",
    ),
    Case(
        "frames/colour",
        "Morphology",
        lambda fx: morph(source=dicom_frames(samples=3)),
        INVALID,
        "UNSUPPORTED_PIXEL_TYPE",
        "input.dicom_frames.pixel_module.samples_per_pixel",
        "grayscale",
    ),
    Case(
        "frames/no photometric interpretation",
        "Morphology",
        lambda fx: morph(source=dicom_frames(photometric=0)),
        INVALID,
        "FIELD_REQUIRED",
        "input.dicom_frames.pixel_module.photometric_interpretation",
        "MONOCHROME",
    ),
    Case(
        "frames/an RLE segment one byte short",
        "Morphology",
        lambda fx: morph(source=dicom_frames(data=[rle_frame(bytes([62]) + bytes(63))])),
        INVALID,
        "CORRUPT_ENCODED_DATA",
        "input.dicom_frames.frames[0]",
        "63 bytes for 64",
    ),
    Case(
        "frames/rows over max_side",
        "Morphology",
        lambda fx: morph(source=dicom_frames(rows=70000)),
        INVALID,
        "LIMIT_EXCEEDED",
        "input.dicom_frames.pixel_module.rows",
        "max_side",
    ),
    Case(
        "frames/an f32 result as HTJ2K",
        "Morphology",
        lambda fx: morph(
            source=dicom_frames(slope=0.5),
            output=types_pb2.OutputOptions(frame_encoding=types_pb2.FRAME_ENCODING_HTJ2K_LOSSLESS),
        ),
        INVALID,
        "INVALID_COMBINATION",
        "output.frame_encoding",
        "f32",
    ),
]


# --- ProcessVolumeStream: a header, then slabs of whole 8x8 u8 slices (64 bytes each). -----------
def stream_header(depth=4, image=None, **operation):
    if not operation:
        operation = {"morphology": morphology_pb2.MorphologyRequest(steps=[step()])}
    volume = image if image is not None else u8_image(8, 8, depth, data=b"")
    return streaming_pb2.VolumeStreamRequest(
        header=streaming_pb2.VolumeStreamHeader(volume=volume, **operation)
    )


def slab(n_bytes):
    return streaming_pb2.VolumeStreamRequest(slab=bytes(n_bytes))


STREAM_CASES = [
    Case(
        "stream/empty stream",
        "ProcessVolumeStream",
        lambda fx: [],
        INVALID,
        "FIELD_REQUIRED",
        "header",
        "header",
    ),
    Case(
        "stream/slab before the header",
        "ProcessVolumeStream",
        lambda fx: [slab(256)],
        INVALID,
        "MESSAGE_OUT_OF_ORDER",
        "header",
        "header",
    ),
    Case(
        "stream/header twice",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), stream_header()],
        INVALID,
        "MESSAGE_OUT_OF_ORDER",
        "header",
        "header",
    ),
    Case(
        "stream/stops mid-volume",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(128)],
        INVALID,
        "DATA_SIZE_MISMATCH",
        "slab",
        "slab: the stream ended after 2 of 4",
    ),
    Case(
        "stream/slab not whole slices",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(100)],
        INVALID,
        "DATA_SIZE_MISMATCH",
        "slab",
        "slab",
    ),
    Case(
        "stream/empty slab",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(0)],
        INVALID,
        "DATA_SIZE_MISMATCH",
        "slab",
        "slab",
    ),
    Case(
        "stream/more slices than the volume",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(192), slab(128)],
        INVALID,
        "DATA_SIZE_MISMATCH",
        "slab",
        "slab",
    ),
    Case(
        "stream/header with pixels",
        "ProcessVolumeStream",
        lambda fx: [stream_header(image=u8_image(8, 8, 4))],
        INVALID,
        "INVALID_COMBINATION",
        "header.volume.data",
        "header.volume.data",
    ),
    Case(
        "stream/no operation",
        "ProcessVolumeStream",
        lambda fx: [
            streaming_pb2.VolumeStreamRequest(
                header=streaming_pb2.VolumeStreamHeader(volume=u8_image(8, 8, 4, data=b""))
            )
        ],
        INVALID,
        "FIELD_REQUIRED",
        "header.operation",
        "header.operation",
    ),
    Case(
        "stream/morphology input set",
        "ProcessVolumeStream",
        lambda fx: [stream_header(morphology=morph())],
        INVALID,
        "INVALID_COMBINATION",
        "header.morphology.input",
        "header.morphology.input",
    ),
    Case(
        "stream/element over the limit",
        "ProcessVolumeStream",
        lambda fx: [
            stream_header(
                morphology=morphology_pb2.MorphologyRequest(
                    steps=[step(element=element(width=5000))]
                )
            )
        ],
        INVALID,
        "ELEMENT_TOO_LARGE",
        "header.morphology.steps[0].element.width",
        "header.morphology.steps[0].element.width",
    ),
    Case(
        "stream/gradient even kernel",
        "ProcessVolumeStream",
        lambda fx: [stream_header(gradient=gradient_pb2.GradientRequest(kernel_length=4))],
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "header.gradient.kernel_length",
        "header.gradient.kernel_length",
    ),
    Case(
        "stream/two channels",
        "ProcessVolumeStream",
        lambda fx: [stream_header(image=u8_image(8, 8, 4, channels=2, data=b""))],
        INVALID,
        "UNSUPPORTED_IMAGE_SHAPE",
        "header.volume.channels",
        "header.volume.channels",
    ),
    Case(
        "stream/no token",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(256)],
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        None,
    ),
]


# --- Shared memory: alice's and bob's 4 KiB regions (fx["alice_region"], fx["bob_region"]). ----
def shm_morph(region, offset=0, image=None, out_region=None, out_offset=0, **output):
    shape = image if image is not None else u8_image(data=b"")
    request = morph(
        source=types_pb2.ImageSource(
            shared_memory=types_pb2.SharedMemoryImage(region=region, offset=offset, image=shape)
        )
    )
    if out_region is not None:
        output["shared_memory"] = types_pb2.SharedMemoryTarget(region=out_region, offset=out_offset)
    if output:
        request.output.CopyFrom(types_pb2.OutputOptions(**output))
    return request


def register(key, byte_size=SHM_BYTES):
    return shared_memory_pb2.RegisterSharedMemoryRequest(key=key, byte_size=byte_size)


SHM_CASES = [
    Case(
        "shm/register key with a second slash",
        "RegisterSharedMemory",
        lambda fx: register("/a/b"),
        INVALID,
        "INVALID_FORMAT",
        "key",
        "key",
    ),
    Case(
        "shm/register key without a slash",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"][1:]),
        INVALID,
        "INVALID_FORMAT",
        "key",
        "key",
    ),
    Case(
        "shm/register key with a space",
        "RegisterSharedMemory",
        lambda fx: register("/a b"),
        INVALID,
        "INVALID_FORMAT",
        "key",
        "key",
    ),
    Case(
        "shm/register missing object",
        "RegisterSharedMemory",
        lambda fx: register("/alice.cuimg-e2e-no-such-object"),
        NOT_FOUND,
        "SHARED_MEMORY_NOT_FOUND",
        "key",
        "key",
    ),
    Case(
        "shm/register byte_size 0",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"], 0),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "byte_size",
        "byte_size",
    ),
    Case(
        "shm/register more than the object holds",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"], SHM_BYTES + 1),
        INVALID,
        "SHARED_MEMORY_TOO_SMALL",
        "byte_size",
        "byte_size",
    ),
    Case(
        "shm/register over the identity's budget",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"], SHM_BUDGET),
        EXHAUSTED,
        "QUOTA_EXCEEDED",
        "byte_size",
        "shared_memory_max_bytes_per_identity",
    ),
    Case(
        "shm/register another identity's object",
        "RegisterSharedMemory",
        lambda fx: register(fx["bob_key"]),
        grpc.StatusCode.PERMISSION_DENIED,
        "PERMISSION_DENIED",
        "key",
        'key: "/bob.cuimg-bad-',
    ),
    Case(
        "shm/register another identity's object, naming the caller's prefix",
        "RegisterSharedMemory",
        lambda fx: register(fx["bob_key"]),
        grpc.StatusCode.PERMISSION_DENIED,
        "PERMISSION_DENIED",
        "key",
        'names start with "/alice."',
    ),
    Case(
        "shm/register an object registered already",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"]),
        grpc.StatusCode.ALREADY_EXISTS,
        "ALREADY_REGISTERED",
        "key",
        "key: the object",
    ),
    Case(
        "shm/register without a token",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"]),
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        None,
    ),
    Case(
        "shm/unregister unknown handle",
        "UnregisterSharedMemory",
        lambda fx: shared_memory_pb2.UnregisterSharedMemoryRequest(handle="shm-nope"),
        NOT_FOUND,
        "SHARED_MEMORY_NOT_FOUND",
        "handle",
        "handle",
    ),
    Case(
        "shm/unregister another identity's region",
        "UnregisterSharedMemory",
        lambda fx: shared_memory_pb2.UnregisterSharedMemoryRequest(handle=fx["bob_region"]),
        NOT_FOUND,
        "SHARED_MEMORY_NOT_FOUND",
        "handle",
        "handle",
    ),
    Case(
        "shm/unregister 200-character handle",
        "UnregisterSharedMemory",
        lambda fx: shared_memory_pb2.UnregisterSharedMemoryRequest(handle="h" * 200),
        INVALID,
        "INVALID_FORMAT",
        "handle",
        "handle: must be 1 to 128",
    ),
    Case(
        "shm/list with an unknown token",
        "ListSharedMemory",
        lambda fx: shared_memory_pb2.ListSharedMemoryRequest(),
        UNAUTHENTICATED,
        "UNAUTHENTICATED",
        "",
        "authorization",
        "an-unknown-token-of-some-length",
    ),
    Case(
        "shm/input from another identity's region",
        "Morphology",
        lambda fx: shm_morph(fx["bob_region"]),
        NOT_FOUND,
        "SHARED_MEMORY_NOT_FOUND",
        "input.shared_memory.region",
        "input.shared_memory.region",
    ),
    Case(
        "shm/input from an unknown region",
        "Morphology",
        lambda fx: shm_morph("shm-nope"),
        NOT_FOUND,
        "SHARED_MEMORY_NOT_FOUND",
        "input.shared_memory.region",
        "input.shared_memory.region",
    ),
    Case(
        "shm/input with no region",
        "Morphology",
        lambda fx: shm_morph(""),
        INVALID,
        "INVALID_FORMAT",
        "input.shared_memory.region",
        "input.shared_memory.region",
    ),
    Case(
        "shm/input one byte past the end",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], SHM_BYTES - 63),
        INVALID,
        "SHARED_MEMORY_TOO_SMALL",
        "input.shared_memory.offset",
        "input.shared_memory.offset",
    ),
    Case(
        "shm/input offset 2^64-1",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], 2**64 - 1),
        INVALID,
        "SHARED_MEMORY_TOO_SMALL",
        "input.shared_memory.offset",
        "input.shared_memory.offset",
    ),
    Case(
        "shm/input with inline data too",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], image=u8_image()),
        INVALID,
        "INVALID_COMBINATION",
        "input.shared_memory.image.data",
        "input.shared_memory.image.data",
    ),
    Case(
        "shm/input without a shape",
        "Morphology",
        lambda fx: morph(
            source=types_pb2.ImageSource(
                shared_memory=types_pb2.SharedMemoryImage(region=fx["alice_region"])
            )
        ),
        INVALID,
        "FIELD_REQUIRED",
        "input.shared_memory.image",
        "input.shared_memory.image",
    ),
    Case(
        "shm/input width 0",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], image=u8_image(width=0, data=b"")),
        INVALID,
        "VALUE_OUT_OF_RANGE",
        "input.shared_memory.image.width",
        "input.shared_memory.image.width",
    ),
    Case(
        "shm/output overlapping the input",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], 0, out_region=fx["alice_region"], out_offset=32),
        INVALID,
        "INVALID_COMBINATION",
        "output.shared_memory.offset",
        "output.shared_memory.offset",
    ),
    Case(
        "shm/output past the end",
        "Morphology",
        lambda fx: shm_morph(
            fx["alice_region"], 0, out_region=fx["alice_region"], out_offset=SHM_BYTES - 1
        ),
        INVALID,
        "SHARED_MEMORY_TOO_SMALL",
        "output.shared_memory.offset",
        "output.shared_memory.offset",
    ),
    Case(
        "shm/output to another identity's region",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], 0, out_region=fx["bob_region"], out_offset=64),
        NOT_FOUND,
        "SHARED_MEMORY_NOT_FOUND",
        "output.shared_memory.region",
        "output.shared_memory.region",
    ),
    Case(
        "shm/output with keep_resident",
        "Morphology",
        lambda fx: shm_morph(
            fx["alice_region"], 0, out_region=fx["alice_region"], out_offset=64, keep_resident=True
        ),
        INVALID,
        "INVALID_COMBINATION",
        "output.shared_memory",
        "output.shared_memory",
    ),
    Case(
        "shm/gradient into shared memory",
        "Gradient",
        lambda fx: gradient(
            output=types_pb2.OutputOptions(
                shared_memory=types_pb2.SharedMemoryTarget(region=fx["alice_region"])
            )
        ),
        INVALID,
        "INVALID_COMBINATION",
        "output.shared_memory",
        "output.shared_memory",
    ),
    Case(
        "shm/pyramid into shared memory",
        "Pyramid",
        lambda fx: pyramid(
            output=types_pb2.OutputOptions(
                shared_memory=types_pb2.SharedMemoryTarget(region=fx["alice_region"])
            )
        ),
        INVALID,
        "INVALID_COMBINATION",
        "output.shared_memory",
        "output.shared_memory",
    ),
]

CASES = (
    INLINE_STEP_CASES
    + HANDLE_AND_ENCODED_CASES
    + GRADIENT_PYRAMID_CASES
    + DEFORM_CASES
    + RESIDENT_CASES
    + AUTH_CASES
    + DETECT_CASES
    + STREAM_CASES
    + SHM_CASES
)


def invoke(stub, rpc, request, token, timeout=30):
    metadata = [("authorization", f"Bearer {token}")] if token else None
    method = getattr(stub, rpc)
    if rpc == "Upload":
        return method(iter(request), metadata=metadata, timeout=timeout)
    if rpc == "Download":
        return list(method(request, metadata=metadata, timeout=timeout))
    if rpc == "ProcessVolumeStream":
        return list(method(iter(request), metadata=metadata, timeout=timeout))
    return method(request, metadata=metadata, timeout=timeout)


class BadRequests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tls = TlsMaterial(clients=())
        tokens = cls.tls.write_tokens([f"alice {ALICE}", f"bob {BOB}"])
        cls.server = ServerProcess(
            SERVER,
            f"--backend={BACKEND}",
            f"--resident_budget_bytes={RESIDENT_BUDGET}",
            f"--max_inflight_bytes_per_device={INFLIGHT_PER_DEVICE}",
            "--shared_memory",
            f"--shared_memory_max_bytes_per_identity={SHM_BUDGET}",
            *cls.tls.server_flags(tokens=tokens),
        )
        cls.channel = grpc.secure_channel(
            cls.server.target,
            cls.tls.channel_credentials(),
            options=[("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)],
        )
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)
        fx = {}
        for who, token in (("alice", ALICE), ("bob", BOB)):
            fx[f"{who}_image"] = invoke(
                cls.stub, "Upload", upload_image_messages(8, 8, 64), token
            ).object.handle
            fx[f"{who}_mesh"] = invoke(
                cls.stub, "Upload", [resident_pb2.UploadRequest(mesh=mesh())], token
            ).object.handle
        # Named under each identity's key prefix ("/<identity>.", ListSharedMemory's key_prefix).
        cls.shm = {who: ShmObject(SHM_BYTES, f"{who}.cuimg-bad") for who in ("alice", "bob")}
        for who, token in (("alice", ALICE), ("bob", BOB)):
            fx[f"{who}_key"] = cls.shm[who].key
            fx[f"{who}_region"] = invoke(
                cls.stub, "RegisterSharedMemory", register(cls.shm[who].key), token
            ).region.handle
        cls.fx = fx

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        code = cls.server.terminate()
        cls.tls.close()
        for shm in cls.shm.values():
            shm.close()
        assert code == 0, cls.server.log()

    def test_at_least_fifty_cases_across_every_rpc(self):
        self.assertGreaterEqual(len(CASES), 50)
        self.assertEqual(
            {c.rpc for c in CASES},
            {
                "Morphology",
                "Gradient",
                "Pyramid",
                "Deform",
                "Upload",
                "Download",
                "Release",
                "ListResident",
                "DetectPedestrians",
                "ListModels",
                "ProcessVolumeStream",
                "RegisterSharedMemory",
                "UnregisterSharedMemory",
                "ListSharedMemory",
                "GetServerInfo",
            },
        )
        self.assertEqual(len({c.name for c in CASES}), len(CASES), "case names must be unique")

    def test_every_error_carries_error_info_with_its_reason_and_field(self):
        """AIP-193: each refusal's status details hold a google.rpc.ErrorInfo (decoded here with
        protobuf's generated modules, and with the client's own wire_contract, which must agree)
        whose reason and metadata "field" are the case's, the field one the request message
        has and the reason one error_reason.proto lists."""
        for case in CASES:
            with self.subTest(case.name):
                request = case.build(self.fx)
                with self.assertRaises(grpc.RpcError) as caught:
                    invoke(self.stub, case.rpc, request, case.token)
                error = caught.exception
                details = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
                if error.code() == grpc.StatusCode.UNAUTHENTICATED and details is None:
                    continue  # refused by gRPC's auth processor, before any handler
                self.assertIsNotNone(details, error.details())
                status = status_pb2.Status.FromString(details)
                self.assertEqual(status.code, error.code().value[0])
                infos = [d for d in status.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
                self.assertEqual(len(infos), 1)
                info = error_details_pb2.ErrorInfo()
                infos[0].Unpack(info)
                field = info.metadata.get("field", "")
                self.assertEqual((info.reason, field), (case.reason, case.field), error.details())
                self.assertIn(info.reason, REASONS)
                self.assertEqual(info.domain, "cuimg.io")
                if field:
                    self.assertEqual(field_path_error(request_of(case, request), field), "")
                    self.assertTrue(error.details().startswith(field + ": "), error.details())
                self.assertEqual(
                    wire_contract.error_info(error.trailing_metadata()),
                    wire_contract.ErrorInfo(info.reason, info.domain, field),
                )

    def test_the_field_checker_refuses_what_a_request_does_not_have(self):
        request = morph(steps=[step()])
        self.assertEqual(field_path_error(request, "steps[0].element.width"), "")
        self.assertEqual(field_path_error(request, "input.source"), "")
        self.assertNotEqual(field_path_error(request, "steps[1].op"), "")
        self.assertNotEqual(field_path_error(request, "steps.op"), "")
        self.assertNotEqual(field_path_error(request, "extent"), "")
        self.assertNotEqual(field_path_error(request, "input[0]"), "")

    def test_shared_memory_key_prefix_is_the_callers(self):
        for who, token in (("alice", ALICE), ("bob", BOB)):
            listed = invoke(
                self.stub, "ListSharedMemory", shared_memory_pb2.ListSharedMemoryRequest(), token
            )
            self.assertEqual(listed.key_prefix, f"/{who}.")

    def test_every_case_gets_its_code_and_message(self):
        for case in CASES:
            with self.subTest(case.name):
                with self.assertRaises(grpc.RpcError) as caught:
                    invoke(self.stub, case.rpc, case.build(self.fx), case.token)
                self.assertEqual(caught.exception.code(), case.code, caught.exception.details())
                self.assertIn(case.text, caught.exception.details())
        self.assertIsNone(self.server.process.poll(), "the server died")

    def test_server_stays_healthy_and_serves_a_valid_request_afterwards(self):
        for case in CASES:  # again, in one burst, then a valid request
            try:
                invoke(self.stub, case.rpc, case.build(self.fx), case.token)
            except grpc.RpcError:
                pass
        health = health_pb2_grpc.HealthStub(self.channel).Check(
            health_pb2.HealthCheckRequest(service="cuimg.v1.Imaging"), timeout=10
        )
        self.assertEqual(health.status, health_pb2.HealthCheckResponse.SERVING)
        image = np.arange(64, dtype=np.uint8).reshape(8, 8)
        reply = invoke(self.stub, "Morphology", morph(u8_image(data=image.tobytes())), ALICE)
        got = np.frombuffer(reply.result.image.data, np.uint8).reshape(8, 8)
        self.assertEqual(got[0, 0], image[:2, :2].max())
        self.assertEqual(got[7, 7], 63)
        # The fixtures survived: nothing above released or replaced them.
        listed = invoke(self.stub, "ListResident", resident_pb2.ListResidentRequest(), BOB)
        self.assertEqual(
            {o.handle for o in listed.objects}, {self.fx["bob_image"], self.fx["bob_mesh"]}
        )
        regions = invoke(
            self.stub, "ListSharedMemory", shared_memory_pb2.ListSharedMemoryRequest(), BOB
        )
        self.assertEqual([r.handle for r in regions.regions], [self.fx["bob_region"]])
        self.assertIsNone(self.server.process.poll(), "the server died")


if __name__ == "__main__":
    unittest.main(verbosity=2)
