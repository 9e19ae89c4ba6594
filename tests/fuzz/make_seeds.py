"""Writes the fuzzers' seed corpus (tests/fuzz/corpus/<fuzzer>/): small valid inputs of every kind
each fuzzer reads, so that mutation starts from real structure. Run once after changing the
formats (needs the generated Python stubs on PYTHONPATH, numpy and PIL); the output is committed:
  PYTHONPATH=build/proto/python python3 tests/fuzz/make_seeds.py"""
import io
import os

import numpy as np
from PIL import Image

from cuimg.v1 import (deform_pb2, detection_pb2, gradient_pb2, morphology_pb2, pyramid_pb2,
                      resident_pb2, streaming_pb2, types_pb2)

HERE = os.path.dirname(os.path.abspath(__file__))


def write(fuzzer, name, data):
    d = os.path.join(HERE, "corpus", fuzzer)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def saved(image, fmt, **kwargs):
    out = io.BytesIO()
    image.save(out, fmt, **kwargs)
    return out.getvalue()


def image_bytes(fmt, array, mode=None, **kwargs):
    return saved(Image.fromarray(array, mode), fmt, **kwargs)


rng = np.random.default_rng(7)
gray = rng.integers(0, 256, (12, 10), np.uint8)
rgb = rng.integers(0, 256, (6, 9, 3), np.uint8)
png_gray = image_bytes("PNG", gray)

# --- image_decode: PNG and JPEG variants.
write("image_decode", "gray8.png", png_gray)
write("image_decode", "rgb8.png", image_bytes("PNG", rgb))
write("image_decode", "rgba8.png", image_bytes("PNG", np.dstack([rgb, rgb[..., :1]])))
write("image_decode", "gray16.png", image_bytes("PNG", (gray.astype(np.uint16) * 257), "I;16"))
write("image_decode", "palette.png", saved(Image.fromarray(rgb).convert("P"), "PNG"))
write("image_decode", "bits1.png", saved(Image.fromarray(gray > 127), "PNG"))
write("image_decode", "interlaced.png", image_bytes("PNG", rgb, optimize=False, interlace=1))
write("image_decode", "gray.jpg", image_bytes("JPEG", gray, quality=80))
write("image_decode", "rgb.jpg", image_bytes("JPEG", rgb, quality=80))
write("image_decode", "progressive.jpg", image_bytes("JPEG", rgb, quality=80, progressive=True))
write("image_decode", "cmyk.jpg", saved(Image.fromarray(rgb).convert("CMYK"), "JPEG"))

# --- tiff_reader: the sample formats the client reads, and a two-page volume.
for name, array in {"u8.tiff": gray, "u16.tiff": gray.astype(np.uint16) * 257,
                    "i16.tiff": gray.astype(np.int16) - 128,
                    "f32.tiff": gray.astype(np.float32) / 7}.items():
    write("tiff_reader", name, image_bytes("TIFF", array))
write("tiff_reader", "volume2.tiff", saved(Image.fromarray(gray), "TIFF", save_all=True,
                                           append_images=[Image.fromarray(255 - gray)]))
write("tiff_reader", "deflate.tiff", image_bytes("TIFF", gray, compression="tiff_adobe_deflate"))

# --- mesh_reader: the first byte picks the format (0 obj, 1 ply, 2 stl).
obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvn 0 0 1\nf 1 2 3\nf 1 3 4\nf 1//1 2//1 4//1\n"
write("mesh_reader", "tetra.obj", b"\x00" + obj.encode())
write("mesh_reader", "quad.obj", b"\x00" + b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n")
ply = ("ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
       "property float z\nelement face 2\nproperty list uchar int vertex_indices\nend_header\n"
       "0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n3 0 2 3\n")
write("mesh_reader", "tetra_ascii.ply", b"\x01" + ply.encode())
vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], "<f4").tobytes()
faces = b"\x03" + np.array([0, 1, 2], "<i4").tobytes()
ply_bin = ("ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n"
           "property float y\nproperty float z\nelement face 1\n"
           "property list uchar int vertex_indices\nend_header\n").encode() + vertices + faces
write("mesh_reader", "triangle_binary.ply", b"\x01" + ply_bin)
stl = "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid t\n"
write("mesh_reader", "triangle.stl", b"\x02" + stl.encode())

# --- lattice_json.
write("lattice_json", "identity.json",
      '{"origin":[0,0,0],"s":[1,0,0],"t":[0,1,0],"u":[0,0,1],"counts":[2,2,2]}')
write("lattice_json", "displaced.json",
      '{"origin":[-1,-1,-1],"s":[2,0,0],"t":[0,2,0],"u":[0,0,2],"counts":[2,2,3],'
      '"displacements":[' + ",".join(["0.5", "0", "-0.25"] * 12) + "]}")

# --- request_validation: the first byte picks the request (0 Morphology, 1 Gradient, 2 Pyramid,
# 3 Deform, 4 Upload image header, 5 Upload mesh header, 6 DetectPedestrians, 7 a
# ProcessVolumeStream header).
def image_proto(w, h, d=0, pixel=types_pb2.PIXEL_TYPE_U8, size=1):
    return types_pb2.Image(pixel_type=pixel, width=w, height=h, depth=d,
                           data=bytes(w * h * max(d, 1) * size))


step = morphology_pb2.MorphologyStep(
    op=morphology_pb2.MORPHOLOGY_OP_OPEN, iterations=2,
    element=morphology_pb2.StructuringElement(shape=morphology_pb2.ELEMENT_SHAPE_ELLIPSE,
                                              width=5, height=3, depth=3, anchor_x=1))
custom = morphology_pb2.MorphologyStep(
    op=morphology_pb2.MORPHOLOGY_OP_DILATE, border_mode=morphology_pb2.BORDER_MODE_CONSTANT,
    border_value=3, element=morphology_pb2.StructuringElement(
        shape=morphology_pb2.ELEMENT_SHAPE_CUSTOM, width=3, height=3, mask=b"\x01\x00\x01" * 3))
requests = {
    "morph_inline": (0, morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(image=image_proto(8, 6, 2, types_pb2.PIXEL_TYPE_I16, 2)),
        steps=[step, custom], output=types_pb2.OutputOptions(keep_resident=True, ttl_seconds=5))),
    "morph_png": (0, morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(encoded=png_gray), steps=[custom])),
    "morph_handle": (0, morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(handle="img-0123"), steps=[step])),
    "gradient": (1, gradient_pb2.GradientRequest(
        input=types_pb2.ImageSource(image=image_proto(9, 7, 0, types_pb2.PIXEL_TYPE_F32, 4)),
        kernel_length=5, sigma=1.2, magnitude=True, angle=True)),
    "pyramid": (2, pyramid_pb2.PyramidRequest(
        input=types_pb2.ImageSource(image=image_proto(40, 30)), levels=5, ratio=1.3,
        min_width=4, mode=pyramid_pb2.PYRAMID_MODE_CASCADED,
        output_type=types_pb2.PIXEL_TYPE_U8)),
}
pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
tris = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]], np.uint32)
mesh = deform_pb2.Mesh(vertex_count=4, triangle_count=4, positions=pos.tobytes(),
                       triangles=tris.tobytes())
lattice = deform_pb2.Lattice(origin=types_pb2.Vec3(x=-0.1, y=-0.1, z=-0.1),
                             s=types_pb2.Vec3(x=1.2), t=types_pb2.Vec3(y=1.2),
                             u=types_pb2.Vec3(z=1.2), count_s=2, count_t=2, count_u=2,
                             displacements=[0.1] * 24)
requests["deform"] = (3, deform_pb2.DeformRequest(mesh=deform_pb2.MeshSource(mesh=mesh),
                                                  lattice=lattice))
requests["deform_handle"] = (3, deform_pb2.DeformRequest(
    mesh=deform_pb2.MeshSource(handle="mesh-1"), lattice=lattice,
    outputs=deform_pb2.DEFORM_OUTPUTS_NORMALS))
requests["upload_image"] = (4, resident_pb2.UploadRequest(image=image_proto(16, 16), ttl_seconds=9))
requests["upload_mesh"] = (5, resident_pb2.UploadRequest(mesh=mesh))
requests["detect"] = (6, detection_pb2.DetectPedestriansRequest(
    input=types_pb2.ImageSource(image=image_proto(64, 128)), model="opencv_people_64x128",
    hit_threshold=0.5, win_stride=16, padding=8, scale=1.1, max_levels=4, group_threshold=2,
    group_eps=0.3, gamma_correction=False))
requests["detect_png"] = (6, detection_pb2.DetectPedestriansRequest(
    input=types_pb2.ImageSource(encoded=png_gray), grouping=detection_pb2.GROUPING_NONE))
requests["stream_morph"] = (7, streaming_pb2.VolumeStreamHeader(
    volume=image_proto(12, 10, 9, types_pb2.PIXEL_TYPE_U16, 0),
    morphology=morphology_pb2.MorphologyRequest(steps=[step, custom])))
requests["stream_gradient"] = (7, streaming_pb2.VolumeStreamHeader(
    volume=image_proto(9, 7, 5, types_pb2.PIXEL_TYPE_F32, 0),
    gradient=gradient_pb2.GradientRequest(kernel_length=5, magnitude=True)))
requests["morph_shm"] = (0, morphology_pb2.MorphologyRequest(
    input=types_pb2.ImageSource(shared_memory=types_pb2.SharedMemoryImage(
        region="shm-0123", offset=17, image=image_proto(8, 6, 2, types_pb2.PIXEL_TYPE_U16, 0))),
    steps=[step], output=types_pb2.OutputOptions(shared_memory=types_pb2.SharedMemoryTarget(
        region="shm-0123", offset=4096))))
requests["gradient_shm"] = (1, gradient_pb2.GradientRequest(
    input=types_pb2.ImageSource(shared_memory=types_pb2.SharedMemoryImage(
        region="shm-1", image=image_proto(9, 7, 0, types_pb2.PIXEL_TYPE_F32, 0))),
    kernel_length=5))
for name, (kind, message) in requests.items():
    write("request_validation", name, bytes([kind]) + message.SerializeToString())
