"""Malformed and hostile requests over the wire, table-driven: every RPC that exists gets wrong byte
lengths, zero/negative/huge sizes, unknown enums, NaN/Inf values, out-of-range indices, truncated
or bomb-like PNG/JPEG, elements and meshes over the limits, foreign handles (another identity's),
streams that stop mid-object, shared-memory names, sizes and references out of bounds or of another
identity, and missing or unknown tokens. Each case asserts the status code and
that the message names the field; afterwards the server is still SERVING, still running, and a
valid request succeeds. The server runs with TLS and bearer tokens so that "another identity"
exists. Needs CUIMG_SERVER and the generated stubs on PYTHONPATH.

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
    gradient_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    pyramid_pb2,
    resident_pb2,
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

# A request field's path ("steps[2].element.width"), and the codes whose errors name one.
FIELD_PATH = re.compile(r"[a-z_][a-z0-9_]*(\[[0-9]+\])?(\.[a-z_][a-z0-9_]*(\[[0-9]+\])?)*")
CONTENT_CODES = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ALREADY_EXISTS,
}
INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED

# rpc: the Imaging method; build(fx) -> the request (for Upload: the list of messages);
# code: the expected status; field: a substring the message must contain; token: the caller's.
Case = collections.namedtuple("Case", "name rpc build code field token", defaults=(ALICE,))


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
        "input: one of",
    ),
    Case(
        "morphology/width 0",
        "Morphology",
        lambda fx: morph(u8_image(data=bytes(64), width=0)),
        INVALID,
        "input.image.width",
    ),
    Case(
        "morphology/height 0",
        "Morphology",
        lambda fx: morph(u8_image(data=bytes(64), height=0)),
        INVALID,
        "input.image.height",
    ),
    Case(
        "morphology/width over max_side",
        "Morphology",
        lambda fx: morph(u8_image(width=70000, height=1, data=b"")),
        INVALID,
        "input.image.width",
    ),
    Case(
        "morphology/depth over max_side",
        "Morphology",
        lambda fx: morph(u8_image(depth=70000, data=b"")),
        INVALID,
        "input.image.depth",
    ),
    Case(
        "morphology/5 channels",
        "Morphology",
        lambda fx: morph(u8_image(channels=5)),
        INVALID,
        "input.image.channels",
    ),
    Case(
        "morphology/3 channels",
        "Morphology",
        lambda fx: morph(u8_image(channels=3)),
        INVALID,
        "input.image: has 3 channels",
    ),
    Case(
        "morphology/data one byte short",
        "Morphology",
        lambda fx: morph(u8_image(data=bytes(63))),
        INVALID,
        "input.image.data",
    ),
    Case(
        "morphology/data one byte long",
        "Morphology",
        lambda fx: morph(u8_image(data=bytes(65))),
        INVALID,
        "input.image.data",
    ),
    Case(
        "morphology/u16 data of u8 length",
        "Morphology",
        lambda fx: morph(u8_image(pixel_type=types_pb2.PIXEL_TYPE_U16, data=bytes(64))),
        INVALID,
        "input.image.data",
    ),
    Case(
        "morphology/unknown pixel type",
        "Morphology",
        lambda fx: morph(u8_image(pixel_type=99)),
        INVALID,
        "input.image.pixel_type",
    ),
    Case(
        "morphology/unspecified pixel type",
        "Morphology",
        lambda fx: morph(u8_image(pixel_type=types_pb2.PIXEL_TYPE_UNSPECIFIED)),
        INVALID,
        "input.image.pixel_type",
    ),
    Case(
        "morphology/2^32 pixels",
        "Morphology",
        lambda fx: morph(u8_image(width=65536, height=65536, data=b"")),
        INVALID,
        "max_pixels",
    ),
    Case(
        "morphology/NaN spacing",
        "Morphology",
        lambda fx: morph(u8_image(spacing=types_pb2.Spacing(x_mm=math.nan))),
        INVALID,
        "input.image.spacing.x_mm",
    ),
    Case(
        "morphology/negative spacing",
        "Morphology",
        lambda fx: morph(u8_image(spacing=types_pb2.Spacing(y_mm=-1))),
        INVALID,
        "input.image.spacing.y_mm",
    ),
    Case(
        "morphology/infinite spacing",
        "Morphology",
        lambda fx: morph(u8_image(spacing=types_pb2.Spacing(z_mm=math.inf))),
        INVALID,
        "input.image.spacing.z_mm",
    ),
    Case(
        "morphology/no steps",
        "Morphology",
        lambda fx: morphology_pb2.MorphologyRequest(input=types_pb2.ImageSource(image=u8_image())),
        INVALID,
        "steps",
    ),
    Case(
        "morphology/65 steps",
        "Morphology",
        lambda fx: morph(steps=[step()] * 65),
        INVALID,
        "max_steps",
    ),
    Case(
        "morphology/unknown op", "Morphology", lambda fx: morph_step(op=77), INVALID, "steps[0].op"
    ),
    Case(
        "morphology/unspecified op",
        "Morphology",
        lambda fx: morph_step(op=morphology_pb2.MORPHOLOGY_OP_UNSPECIFIED),
        INVALID,
        "steps[0].op",
    ),
    Case(
        "morphology/unknown shape",
        "Morphology",
        lambda fx: morph_element(shape=42),
        INVALID,
        "steps[0].element.shape",
    ),
    Case(
        "morphology/element width over the limit",
        "Morphology",
        lambda fx: morph_element(width=1024),
        INVALID,
        "steps[0].element.width",
    ),
    Case(
        "morphology/element height 0",
        "Morphology",
        lambda fx: morph_element(height=0),
        INVALID,
        "steps[0].element.height",
    ),
    Case(
        "morphology/element depth over the limit",
        "Morphology",
        lambda fx: morph_element(depth=1024),
        INVALID,
        "steps[0].element.depth",
    ),
    Case(
        "morphology/huge element in a later step",
        "Morphology",
        lambda fx: morph(steps=[step(), step(element=element(width=4000000000))]),
        INVALID,
        "steps[1].element.width",
    ),
    Case(
        "morphology/anchor outside the element",
        "Morphology",
        lambda fx: morph_element(anchor_x=3),
        INVALID,
        "steps[0].element.anchor_x",
    ),
    Case(
        "morphology/custom mask of wrong size",
        "Morphology",
        lambda fx: morph_element(shape=morphology_pb2.ELEMENT_SHAPE_CUSTOM, mask=b"\x01" * 8),
        INVALID,
        "steps[0].element.mask",
    ),
    Case(
        "morphology/empty custom mask",
        "Morphology",
        lambda fx: morph_element(shape=morphology_pb2.ELEMENT_SHAPE_CUSTOM, mask=bytes(9)),
        INVALID,
        "steps[0].element.mask",
    ),
    Case(
        "morphology/mask on a rect",
        "Morphology",
        lambda fx: morph_element(mask=b"\x01" * 9),
        INVALID,
        "steps[0].element.mask",
    ),
    Case(
        "morphology/1001 iterations",
        "Morphology",
        lambda fx: morph_step(iterations=1001),
        INVALID,
        "steps[0].iterations",
    ),
    Case(
        "morphology/unknown border mode",
        "Morphology",
        lambda fx: morph_step(border_mode=9),
        INVALID,
        "steps[0].border_mode",
    ),
    Case(
        "morphology/NaN border on u8",
        "Morphology",
        lambda fx: morph_step(
            border_mode=morphology_pb2.BORDER_MODE_CONSTANT, border_value=math.nan
        ),
        INVALID,
        "steps[0].border_value",
    ),
    Case(
        "morphology/omit_data alone",
        "Morphology",
        lambda fx: morph(output=types_pb2.OutputOptions(omit_data=True)),
        INVALID,
        "output.omit_data",
    ),
    Case(
        "morphology/ttl without keep_resident",
        "Morphology",
        lambda fx: morph(output=types_pb2.OutputOptions(ttl_seconds=5)),
        INVALID,
        "output.ttl_seconds",
    ),
    Case(
        "morphology/ttl over the maximum",
        "Morphology",
        lambda fx: morph(output=types_pb2.OutputOptions(keep_resident=True, ttl_seconds=10**6)),
        INVALID,
        "ttl_seconds",
    ),
]

HANDLE_AND_ENCODED_CASES = [
    Case(
        "morphology/empty handle",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle="")),
        INVALID,
        "input.handle",
    ),
    Case(
        "morphology/200-character handle",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle="h" * 200)),
        INVALID,
        "input.handle",
    ),
    Case(
        "morphology/unknown handle",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle="img-0123456789abcdef")),
        NOT_FOUND,
        "input.handle",
    ),
    Case(
        "morphology/another identity's image",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle=fx["bob_image"])),
        NOT_FOUND,
        "input.handle",
    ),
    Case(
        "morphology/a mesh handle as image",
        "Morphology",
        lambda fx: morph(source=types_pb2.ImageSource(handle=fx["alice_mesh"])),
        INVALID,
        "input.handle",
    ),
    Case(
        "morphology/empty encoded", "Morphology", lambda fx: encoded(b""), INVALID, "input.encoded"
    ),
    Case(
        "morphology/not an image",
        "Morphology",
        lambda fx: encoded(b"GIF89a" + bytes(100)),
        INVALID,
        "input.encoded",
    ),
    Case(
        "morphology/truncated PNG",
        "Morphology",
        lambda fx: encoded(gray_png(np.arange(4096).reshape(64, 64) % 251)[:60]),
        INVALID,
        "input.encoded",
    ),
    Case(
        "morphology/PNG header without pixels",
        "Morphology",
        lambda fx: encoded(png_header_only(64, 64)),
        INVALID,
        "input.encoded",
    ),
    Case(
        "morphology/PNG bomb of 81 MP zeros",
        "Morphology",
        lambda fx: encoded(png(9000, 9000)),
        INVALID,
        "max_decoded_pixels",
    ),
    Case(
        "morphology/PNG header claiming 4 GP",
        "Morphology",
        lambda fx: encoded(png_header_only(65536, 65536)),
        INVALID,
        "input.encoded",
    ),
    Case(
        "morphology/PNG wider than max_side",
        "Morphology",
        lambda fx: encoded(png_header_only(100000, 1)),
        INVALID,
        "max_side",
    ),
    Case(
        "morphology/PNG with zero width",
        "Morphology",
        lambda fx: encoded(png_header_only(0, 16)),
        INVALID,
        "input.encoded",
    ),
    Case(
        "morphology/colour PNG",
        "Morphology",
        lambda fx: encoded(png(8, 8, color_type=2)),
        INVALID,
        "input.encoded: has 3 channels",
    ),
    Case(
        "morphology/truncated JPEG header",
        "Morphology",
        lambda fx: encoded(jpeg_bytes()[:40]),
        INVALID,
        "input.encoded",
    ),
    Case(
        "morphology/JPEG with corrupt header",
        "Morphology",
        lambda fx: encoded(b"\xff\xd8\xff" + bytes(2000)),
        INVALID,
        "input.encoded",
    ),
]

GRADIENT_PYRAMID_CASES = [
    Case(
        "gradient/no input", "Gradient", lambda fx: gradient_pb2.GradientRequest(), INVALID, "input"
    ),
    Case(
        "gradient/even kernel length",
        "Gradient",
        lambda fx: gradient(kernel_length=4),
        INVALID,
        "kernel_length",
    ),
    Case(
        "gradient/kernel length 33",
        "Gradient",
        lambda fx: gradient(kernel_length=33),
        INVALID,
        "kernel_length",
    ),
    Case("gradient/NaN sigma", "Gradient", lambda fx: gradient(sigma=math.nan), INVALID, "sigma"),
    Case("gradient/negative sigma", "Gradient", lambda fx: gradient(sigma=-1), INVALID, "sigma"),
    Case(
        "gradient/infinite sigma", "Gradient", lambda fx: gradient(sigma=math.inf), INVALID, "sigma"
    ),
    Case(
        "gradient/2 channels",
        "Gradient",
        lambda fx: gradient(u8_image(channels=2)),
        INVALID,
        "input.image",
    ),
    Case(
        "gradient/data short",
        "Gradient",
        lambda fx: gradient(u8_image(data=b"x")),
        INVALID,
        "input.image.data",
    ),
    Case(
        "gradient/another identity's image",
        "Gradient",
        lambda fx: gradient_pb2.GradientRequest(
            input=types_pb2.ImageSource(handle=fx["bob_image"])
        ),
        NOT_FOUND,
        "input.handle",
    ),
    Case(
        "gradient/results over the in-flight limit",
        "Gradient",
        lambda fx: gradient(u8_image(4096, 4096), magnitude=True, angle=True),
        EXHAUSTED,
        "max_inflight_bytes_per_device",
    ),
    Case("pyramid/65 levels", "Pyramid", lambda fx: pyramid(levels=65), INVALID, "levels"),
    Case("pyramid/ratio below 1", "Pyramid", lambda fx: pyramid(ratio=0.5), INVALID, "ratio"),
    Case("pyramid/NaN ratio", "Pyramid", lambda fx: pyramid(ratio=math.nan), INVALID, "ratio"),
    Case("pyramid/unknown mode", "Pyramid", lambda fx: pyramid(mode=9), INVALID, "mode"),
    Case(
        "pyramid/output type neither f32 nor the input's",
        "Pyramid",
        lambda fx: pyramid(output_type=types_pb2.PIXEL_TYPE_I16),
        INVALID,
        "output_type",
    ),
    Case(
        "pyramid/unknown output type",
        "Pyramid",
        lambda fx: pyramid(output_type=99),
        INVALID,
        "output_type",
    ),
    Case(
        "pyramid/volume input",
        "Pyramid",
        lambda fx: pyramid(u8_image(8, 8, depth=3)),
        INVALID,
        "input.image: is a volume",
    ),
    Case(
        "pyramid/min width over max_side",
        "Pyramid",
        lambda fx: pyramid(min_width=70000),
        INVALID,
        "min_width",
    ),
    Case(
        "pyramid/PNG bomb",
        "Pyramid",
        lambda fx: pyramid_pb2.PyramidRequest(input=types_pb2.ImageSource(encoded=png(9000, 9000))),
        INVALID,
        "max_decoded_pixels",
    ),
]

DEFORM_CASES = [
    Case(
        "deform/no mesh",
        "Deform",
        lambda fx: deform_pb2.DeformRequest(lattice=lattice()),
        INVALID,
        "mesh: one of",
    ),
    Case(
        "deform/no lattice",
        "Deform",
        lambda fx: deform_pb2.DeformRequest(mesh=deform_pb2.MeshSource(mesh=mesh())),
        INVALID,
        "lattice",
    ),
    Case(
        "deform/zero vertices",
        "Deform",
        lambda fx: deform(mesh(vertex_count=0)),
        INVALID,
        "mesh.mesh.vertex_count",
    ),
    Case(
        "deform/vertices over max_mesh_vertices",
        "Deform",
        lambda fx: deform(mesh(vertex_count=(1 << 24) + 1)),
        INVALID,
        "mesh.mesh.vertex_count",
    ),
    Case(
        "deform/positions one float short",
        "Deform",
        lambda fx: deform(mesh(positions=POS.tobytes()[:-4])),
        INVALID,
        "mesh.mesh.positions",
    ),
    Case(
        "deform/triangles one index long",
        "Deform",
        lambda fx: deform(mesh(triangles=TRIS.tobytes() + bytes(4))),
        INVALID,
        "mesh.mesh.triangles",
    ),
    Case(
        "deform/triangle count lies",
        "Deform",
        lambda fx: deform(mesh(triangle_count=1)),
        INVALID,
        "mesh.mesh.triangles",
    ),
    Case(
        "deform/NaN vertex",
        "Deform",
        lambda fx: deform(with_vertex(np.nan)),
        INVALID,
        "mesh.mesh.positions[10]",
    ),
    Case(
        "deform/infinite vertex",
        "Deform",
        lambda fx: deform(with_vertex(np.inf)),
        INVALID,
        "mesh.mesh.positions[10]",
    ),
    Case(
        "deform/index out of range",
        "Deform",
        lambda fx: deform(with_index(len(POS))),
        INVALID,
        "mesh.mesh.triangles[17]",
    ),
    Case(
        "deform/index 2^32-1",
        "Deform",
        lambda fx: deform(with_index(0xFFFFFFFF)),
        INVALID,
        "mesh.mesh.triangles[17]",
    ),
    Case(
        "deform/count_s 1",
        "Deform",
        lambda fx: deform(lat=lattice(count_s=1)),
        INVALID,
        "lattice.count_s",
    ),
    Case(
        "deform/count_u 10",
        "Deform",
        lambda fx: deform(lat=lattice(count_u=10)),
        INVALID,
        "lattice.count_u",
    ),
    Case(
        "deform/displacements short",
        "Deform",
        lambda fx: deform(lat=lattice(displacements=[0.0] * 5)),
        INVALID,
        "lattice.displacements",
    ),
    Case(
        "deform/NaN displacement",
        "Deform",
        lambda fx: deform(lat=lattice(displacements=[math.nan] + [0.0] * 23)),
        INVALID,
        "lattice.displacements[0]",
    ),
    Case(
        "deform/infinite origin",
        "Deform",
        lambda fx: deform(lat=lattice(origin=types_pb2.Vec3(x=math.inf))),
        INVALID,
        "lattice.origin.x",
    ),
    Case(
        "deform/flat lattice",
        "Deform",
        lambda fx: deform(lat=lattice(u=types_pb2.Vec3())),
        INVALID,
        "lattice: s, t and u must span",
    ),
    Case("deform/unknown outputs", "Deform", lambda fx: deform(outputs=9), INVALID, "outputs"),
    Case(
        "deform/unknown mesh handle",
        "Deform",
        lambda fx: deform(handle="mesh-00"),
        NOT_FOUND,
        "mesh.handle",
    ),
    Case(
        "deform/another identity's mesh",
        "Deform",
        lambda fx: deform(handle=fx["bob_mesh"]),
        NOT_FOUND,
        "mesh.handle",
    ),
    Case(
        "deform/an image handle as mesh",
        "Deform",
        lambda fx: deform(handle=fx["alice_image"]),
        INVALID,
        "mesh.handle",
    ),
    Case(
        "deform/empty mesh handle", "Deform", lambda fx: deform(handle=""), INVALID, "mesh.handle"
    ),
]

RESIDENT_CASES = [
    Case("upload/empty stream", "Upload", lambda fx: [], INVALID, "content"),
    Case(
        "upload/chunk first",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(chunk=b"abc")],
        INVALID,
        "chunk",
    ),
    Case(
        "upload/width 0",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(image=u8_image(data=b"", width=0))],
        INVALID,
        "image.width",
    ),
    Case(
        "upload/unknown pixel type",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(image=u8_image(pixel_type=7))],
        INVALID,
        "image.pixel_type",
    ),
    Case(
        "upload/more bytes than the image",
        "Upload",
        lambda fx: upload_image_messages(8, 8, 60, [10]),
        INVALID,
        "chunk",
    ),
    Case(
        "upload/stream stops mid-image",
        "Upload",
        lambda fx: upload_image_messages(100, 100, 500, [1000]),
        INVALID,
        "chunk",
    ),
    Case(
        "upload/image then a second header",
        "Upload",
        lambda fx: upload_image_messages(8, 8, 10) + [resident_pb2.UploadRequest(image=u8_image())],
        INVALID,
        "content",
    ),
    Case(
        "upload/ttl in a later message",
        "Upload",
        lambda fx: upload_image_messages(8, 8, 10)
        + [resident_pb2.UploadRequest(chunk=bytes(54), ttl_seconds=5)],
        INVALID,
        "ttl_seconds",
    ),
    Case(
        "upload/image over the resident budget",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(image=u8_image(8192, 4096, data=b""))],
        EXHAUSTED,
        "image",
    ),
    Case(
        "upload/mesh triangles before positions",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(mesh=mesh(positions=POS.tobytes()[:12]))],
        INVALID,
        "mesh.triangles",
    ),
    Case(
        "upload/mesh stream stops mid-positions",
        "Upload",
        lambda fx: [
            resident_pb2.UploadRequest(mesh=mesh(positions=POS.tobytes()[:100], triangles=b""))
        ],
        INVALID,
        "chunk",
    ),
    Case(
        "upload/mesh with an index out of range",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(mesh=with_index(10**6))],
        INVALID,
        "mesh.triangles[17]",
    ),
    Case(
        "upload/mesh with a NaN vertex",
        "Upload",
        lambda fx: [resident_pb2.UploadRequest(mesh=with_vertex(np.nan))],
        INVALID,
        "mesh.positions[10]",
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
        "mesh.vertex_count",
    ),
    Case(
        "download/chunk_bytes too small",
        "Download",
        lambda fx: resident_pb2.DownloadRequest(handle=fx["alice_image"], chunk_bytes=100),
        INVALID,
        "chunk_bytes",
    ),
    Case(
        "download/unknown handle",
        "Download",
        lambda fx: resident_pb2.DownloadRequest(handle="img-nope"),
        NOT_FOUND,
        "handle",
    ),
    Case(
        "download/another identity's image",
        "Download",
        lambda fx: resident_pb2.DownloadRequest(handle=fx["bob_image"]),
        NOT_FOUND,
        "handle",
    ),
    Case(
        "download/another identity's mesh",
        "Download",
        lambda fx: resident_pb2.DownloadRequest(handle=fx["bob_mesh"]),
        NOT_FOUND,
        "handle",
    ),
    Case(
        "release/unknown handle",
        "Release",
        lambda fx: resident_pb2.ReleaseRequest(handle="img-nope"),
        NOT_FOUND,
        "handle",
    ),
    Case(
        "release/another identity's image",
        "Release",
        lambda fx: resident_pb2.ReleaseRequest(handle=fx["bob_image"]),
        NOT_FOUND,
        "handle",
    ),
]

AUTH_CASES = [
    Case("auth/no token", "Morphology", lambda fx: morph(), UNAUTHENTICATED, "authorization", None),
    Case(
        "auth/unknown token",
        "Gradient",
        lambda fx: gradient(),
        UNAUTHENTICATED,
        "authorization",
        "an-unknown-token-of-some-length",
    ),
    Case(
        "auth/no token on upload",
        "Upload",
        lambda fx: upload_image_messages(8, 8, 64),
        UNAUTHENTICATED,
        "authorization",
        None,
    ),
    Case(
        "auth/unknown token on list",
        "ListResident",
        lambda fx: resident_pb2.ListResidentRequest(),
        UNAUTHENTICATED,
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
        "input",
    ),
    Case(
        "detect/unknown model",
        "DetectPedestrians",
        lambda fx: detect(model="no_such_model"),
        NOT_FOUND,
        "model",
    ),
    # A name no model can have is simply not loaded: nothing is looked up on disk per request.
    Case(
        "detect/model name with a path",
        "DetectPedestrians",
        lambda fx: detect(model="../etc/passwd"),
        NOT_FOUND,
        "model",
    ),
    Case(
        "detect/NaN hit threshold",
        "DetectPedestrians",
        lambda fx: detect(hit_threshold=math.nan),
        INVALID,
        "hit_threshold",
    ),
    Case(
        "detect/win stride not a multiple of 8",
        "DetectPedestrians",
        lambda fx: detect(win_stride=12),
        INVALID,
        "win_stride",
    ),
    Case(
        "detect/padding 257",
        "DetectPedestrians",
        lambda fx: detect(padding=257),
        INVALID,
        "padding",
    ),
    Case(
        "detect/scale below 1", "DetectPedestrians", lambda fx: detect(scale=0.5), INVALID, "scale"
    ),
    Case(
        "detect/65 levels",
        "DetectPedestrians",
        lambda fx: detect(max_levels=65),
        INVALID,
        "max_levels",
    ),
    Case(
        "detect/unknown grouping",
        "DetectPedestrians",
        lambda fx: detect(grouping=9),
        INVALID,
        "grouping",
    ),
    Case(
        "detect/NaN group eps",
        "DetectPedestrians",
        lambda fx: detect(group_eps=math.nan),
        INVALID,
        "group_eps",
    ),
    Case(
        "detect/u16 image",
        "DetectPedestrians",
        lambda fx: detect(
            u8_image(64, 128, pixel_type=types_pb2.PIXEL_TYPE_U16, data=bytes(64 * 128 * 2))
        ),
        INVALID,
        "input.image",
    ),
    Case(
        "detect/colour image one byte short",
        "DetectPedestrians",
        lambda fx: detect(u8_image(64, 128, channels=3, data=bytes(64 * 128 * 3 - 1))),
        INVALID,
        "input.image.data",
    ),
    Case(
        "detect/volume",
        "DetectPedestrians",
        lambda fx: detect(u8_image(64, 128, depth=2)),
        INVALID,
        "input.image",
    ),
    Case(
        "detect/PNG bomb",
        "DetectPedestrians",
        lambda fx: detection_pb2.DetectPedestriansRequest(
            input=types_pb2.ImageSource(encoded=png(9000, 9000))
        ),
        INVALID,
        "max_decoded_pixels",
    ),
    Case(
        "detect/another identity's image",
        "DetectPedestrians",
        lambda fx: detection_pb2.DetectPedestriansRequest(
            input=types_pb2.ImageSource(handle=fx["bob_image"])
        ),
        NOT_FOUND,
        "input.handle",
    ),
    Case(
        "detect/no token",
        "DetectPedestrians",
        lambda fx: detect(),
        UNAUTHENTICATED,
        "authorization",
        None,
    ),
    Case(
        "models/unknown token",
        "ListModels",
        lambda fx: detection_pb2.ListModelsRequest(),
        UNAUTHENTICATED,
        "authorization",
        "an-unknown-token-of-some-length",
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
    Case("stream/empty stream", "ProcessVolumeStream", lambda fx: [], INVALID, "header"),
    Case(
        "stream/slab before the header",
        "ProcessVolumeStream",
        lambda fx: [slab(256)],
        INVALID,
        "header",
    ),
    Case(
        "stream/header twice",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), stream_header()],
        INVALID,
        "header",
    ),
    Case(
        "stream/stops mid-volume",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(128)],
        INVALID,
        "slab: the stream ended after 2 of 4",
    ),
    Case(
        "stream/slab not whole slices",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(100)],
        INVALID,
        "slab",
    ),
    Case(
        "stream/empty slab",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(0)],
        INVALID,
        "slab",
    ),
    Case(
        "stream/more slices than the volume",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(192), slab(128)],
        INVALID,
        "slab",
    ),
    Case(
        "stream/header with pixels",
        "ProcessVolumeStream",
        lambda fx: [stream_header(image=u8_image(8, 8, 4))],
        INVALID,
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
        "header.operation",
    ),
    Case(
        "stream/morphology input set",
        "ProcessVolumeStream",
        lambda fx: [stream_header(morphology=morph())],
        INVALID,
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
        "header.morphology.steps[0].element.width",
    ),
    Case(
        "stream/gradient even kernel",
        "ProcessVolumeStream",
        lambda fx: [stream_header(gradient=gradient_pb2.GradientRequest(kernel_length=4))],
        INVALID,
        "header.gradient.kernel_length",
    ),
    Case(
        "stream/two channels",
        "ProcessVolumeStream",
        lambda fx: [stream_header(image=u8_image(8, 8, 4, channels=2, data=b""))],
        INVALID,
        "header.volume.channels",
    ),
    Case(
        "stream/no token",
        "ProcessVolumeStream",
        lambda fx: [stream_header(), slab(256)],
        UNAUTHENTICATED,
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
        "key",
    ),
    Case(
        "shm/register key without a slash",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"][1:]),
        INVALID,
        "key",
    ),
    Case(
        "shm/register key with a space",
        "RegisterSharedMemory",
        lambda fx: register("/a b"),
        INVALID,
        "key",
    ),
    Case(
        "shm/register missing object",
        "RegisterSharedMemory",
        lambda fx: register("/alice.cuimg-e2e-no-such-object"),
        NOT_FOUND,
        "key",
    ),
    Case(
        "shm/register byte_size 0",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"], 0),
        INVALID,
        "byte_size",
    ),
    Case(
        "shm/register more than the object holds",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"], SHM_BYTES + 1),
        INVALID,
        "byte_size",
    ),
    Case(
        "shm/register over the identity's budget",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"], SHM_BUDGET),
        EXHAUSTED,
        "shared_memory_max_bytes_per_identity",
    ),
    Case(
        "shm/register another identity's object",
        "RegisterSharedMemory",
        lambda fx: register(fx["bob_key"]),
        grpc.StatusCode.PERMISSION_DENIED,
        'key: "/bob.cuimg-bad-',
    ),
    Case(
        "shm/register another identity's object, naming the caller's prefix",
        "RegisterSharedMemory",
        lambda fx: register(fx["bob_key"]),
        grpc.StatusCode.PERMISSION_DENIED,
        'names start with "/alice."',
    ),
    Case(
        "shm/register an object registered already",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"]),
        grpc.StatusCode.ALREADY_EXISTS,
        "key: the object",
    ),
    Case(
        "shm/register without a token",
        "RegisterSharedMemory",
        lambda fx: register(fx["alice_key"]),
        UNAUTHENTICATED,
        "authorization",
        None,
    ),
    Case(
        "shm/unregister unknown handle",
        "UnregisterSharedMemory",
        lambda fx: shared_memory_pb2.UnregisterSharedMemoryRequest(handle="shm-nope"),
        NOT_FOUND,
        "handle",
    ),
    Case(
        "shm/unregister another identity's region",
        "UnregisterSharedMemory",
        lambda fx: shared_memory_pb2.UnregisterSharedMemoryRequest(handle=fx["bob_region"]),
        NOT_FOUND,
        "handle",
    ),
    Case(
        "shm/unregister 200-character handle",
        "UnregisterSharedMemory",
        lambda fx: shared_memory_pb2.UnregisterSharedMemoryRequest(handle="h" * 200),
        INVALID,
        "handle: must be 1 to 128",
    ),
    Case(
        "shm/list with an unknown token",
        "ListSharedMemory",
        lambda fx: shared_memory_pb2.ListSharedMemoryRequest(),
        UNAUTHENTICATED,
        "authorization",
        "an-unknown-token-of-some-length",
    ),
    Case(
        "shm/input from another identity's region",
        "Morphology",
        lambda fx: shm_morph(fx["bob_region"]),
        NOT_FOUND,
        "input.shared_memory.region",
    ),
    Case(
        "shm/input from an unknown region",
        "Morphology",
        lambda fx: shm_morph("shm-nope"),
        NOT_FOUND,
        "input.shared_memory.region",
    ),
    Case(
        "shm/input with no region",
        "Morphology",
        lambda fx: shm_morph(""),
        INVALID,
        "input.shared_memory.region",
    ),
    Case(
        "shm/input one byte past the end",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], SHM_BYTES - 63),
        INVALID,
        "input.shared_memory.offset",
    ),
    Case(
        "shm/input offset 2^64-1",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], 2**64 - 1),
        INVALID,
        "input.shared_memory.offset",
    ),
    Case(
        "shm/input with inline data too",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], image=u8_image()),
        INVALID,
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
        "input.shared_memory.image",
    ),
    Case(
        "shm/input width 0",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], image=u8_image(width=0, data=b"")),
        INVALID,
        "input.shared_memory.image.width",
    ),
    Case(
        "shm/output overlapping the input",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], 0, out_region=fx["alice_region"], out_offset=32),
        INVALID,
        "output.shared_memory.offset",
    ),
    Case(
        "shm/output past the end",
        "Morphology",
        lambda fx: shm_morph(
            fx["alice_region"], 0, out_region=fx["alice_region"], out_offset=SHM_BYTES - 1
        ),
        INVALID,
        "output.shared_memory.offset",
    ),
    Case(
        "shm/output to another identity's region",
        "Morphology",
        lambda fx: shm_morph(fx["alice_region"], 0, out_region=fx["bob_region"], out_offset=64),
        NOT_FOUND,
        "output.shared_memory.region",
    ),
    Case(
        "shm/output with keep_resident",
        "Morphology",
        lambda fx: shm_morph(
            fx["alice_region"], 0, out_region=fx["alice_region"], out_offset=64, keep_resident=True
        ),
        INVALID,
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
            },
        )
        self.assertEqual(len({c.name for c in CASES}), len(CASES), "case names must be unique")

    def test_every_error_carries_error_info_naming_its_field(self):
        """AIP-193: each refusal's status details hold a google.rpc.ErrorInfo (decoded here with
        protobuf's generated modules, and with the client's own wire_contract, which must agree)
        whose reason is the code's name and whose metadata "field" is the field the message
        names."""
        named = 0
        for case in CASES:
            with self.subTest(case.name):
                with self.assertRaises(grpc.RpcError) as caught:
                    invoke(self.stub, case.rpc, case.build(self.fx), case.token)
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
                self.assertEqual(info.reason, error.code().name)
                self.assertEqual(info.domain, "cuimg.io")
                field = info.metadata.get("field", "")
                prefix = error.details().split(": ", 1)[0] if ": " in error.details() else ""
                if error.code() in CONTENT_CODES and FIELD_PATH.fullmatch(prefix):
                    self.assertEqual(field, prefix)
                    named += 1
                else:
                    self.assertEqual(field, "", error.details())
                self.assertEqual(
                    wire_contract.error_info(error.trailing_metadata()),
                    wire_contract.ErrorInfo(info.reason, info.domain, field),
                )
        self.assertGreaterEqual(named, len(CASES) // 2)

    def test_shared_memory_key_prefix_is_the_callers(self):
        for who, token in (("alice", ALICE), ("bob", BOB)):
            listed = invoke(
                self.stub, "ListSharedMemory", shared_memory_pb2.ListSharedMemoryRequest(), token
            )
            self.assertEqual(listed.key_prefix, f"/{who}.")

    def test_every_case_gets_its_code_and_names_its_field(self):
        for case in CASES:
            with self.subTest(case.name):
                with self.assertRaises(grpc.RpcError) as caught:
                    invoke(self.stub, case.rpc, case.build(self.fx), case.token)
                self.assertEqual(caught.exception.code(), case.code, caught.exception.details())
                self.assertIn(case.field, caught.exception.details())
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
