"""Writes the fuzzers' seed corpus (tests/fuzz/corpus/<fuzzer>/): small valid inputs of every kind
each fuzzer reads, so that mutation starts from real structure. Run once after changing the
formats (needs the generated Python stubs on PYTHONPATH, numpy, PIL, pydicom, nibabel and the
dcmtk and libgdcm-tools programs for the compressed DICOM seeds); the output is
committed, beside regression_* files (inputs the fuzzers found, kept as seeds; not written here).
Names of fuzzers as arguments write only their corpora (the others stay as they are):
  PYTHONPATH=build/proto/python python3 tests/fuzz/make_seeds.py [FUZZER...]"""
import gzip
import io
import os
import struct
import sys

import numpy as np
from PIL import Image

from cuimg.v1 import (
    deform_pb2,
    detection_pb2,
    gradient_pb2,
    label_pb2,
    morphology_pb2,
    pyramid_pb2,
    resident_pb2,
    streaming_pb2,
    types_pb2,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ONLY = set(sys.argv[1:])


def write(fuzzer, name, data):
    if ONLY and fuzzer not in ONLY:
        return
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
for name, array in {
    "u8.tiff": gray,
    "u16.tiff": gray.astype(np.uint16) * 257,
    "i16.tiff": gray.astype(np.int16) - 128,
    "f32.tiff": gray.astype(np.float32) / 7,
}.items():
    write("tiff_reader", name, image_bytes("TIFF", array))
write(
    "tiff_reader",
    "volume2.tiff",
    saved(
        Image.fromarray(gray), "TIFF", save_all=True, append_images=[Image.fromarray(255 - gray)]
    ),
)
write("tiff_reader", "deflate.tiff", image_bytes("TIFF", gray, compression="tiff_adobe_deflate"))

# --- mesh_reader: the first byte picks the format (0 obj, 1 ply, 2 stl).
obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvn 0 0 1\nf 1 2 3\nf 1 3 4\nf 1//1 2//1 4//1\n"
write("mesh_reader", "tetra.obj", b"\x00" + obj.encode())
write("mesh_reader", "quad.obj", b"\x00" + b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n")
ply = (
    "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\n"
    "property float z\nelement face 2\nproperty list uchar int vertex_indices\nend_header\n"
    "0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n3 0 2 3\n"
)
write("mesh_reader", "tetra_ascii.ply", b"\x01" + ply.encode())
vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], "<f4").tobytes()
faces = b"\x03" + np.array([0, 1, 2], "<i4").tobytes()
ply_bin = (
    (
        "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n"
        "property float y\nproperty float z\nelement face 1\n"
        "property list uchar int vertex_indices\nend_header\n"
    ).encode()
    + vertices
    + faces
)
write("mesh_reader", "triangle_binary.ply", b"\x01" + ply_bin)
stl = (
    "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n"
    "endloop\nendfacet\nendsolid t\n"
)
write("mesh_reader", "triangle.stl", b"\x02" + stl.encode())

# --- lattice_json.
write(
    "lattice_json",
    "identity.json",
    '{"origin":[0,0,0],"s":[1,0,0],"t":[0,1,0],"u":[0,0,1],"counts":[2,2,2]}',
)
write(
    "lattice_json",
    "displaced.json",
    '{"origin":[-1,-1,-1],"s":[2,0,0],"t":[0,2,0],"u":[0,0,2],"counts":[2,2,3],'
    '"displacements":[' + ",".join(["0.5", "0", "-0.25"] * 12) + "]}",
)


# --- request_validation: the first byte picks the request (0 Morphology, 1 Gradient, 2 Pyramid,
# 3 Deform, 4 Upload image header, 5 Upload mesh header, 6 DetectPedestrians, 7 a
# ProcessVolumeStream header, 8 Label).
def image_proto(w, h, d=0, pixel=types_pb2.PIXEL_TYPE_U8, size=1):
    return types_pb2.Image(
        pixel_type=pixel, width=w, height=h, depth=d, data=bytes(w * h * max(d, 1) * size)
    )


step = morphology_pb2.MorphologyStep(
    op=morphology_pb2.MORPHOLOGY_OP_OPEN,
    iterations=2,
    element=morphology_pb2.StructuringElement(
        shape=morphology_pb2.ELEMENT_SHAPE_ELLIPSE, width=5, height=3, depth=3, anchor_x=1
    ),
)
custom = morphology_pb2.MorphologyStep(
    op=morphology_pb2.MORPHOLOGY_OP_DILATE,
    border_mode=morphology_pb2.BORDER_MODE_CONSTANT,
    border_value=3,
    element=morphology_pb2.StructuringElement(
        shape=morphology_pb2.ELEMENT_SHAPE_CUSTOM, width=3, height=3, mask=b"\x01\x00\x01" * 3
    ),
)
requests = {
    "morph_inline": (
        0,
        morphology_pb2.MorphologyRequest(
            input=types_pb2.ImageSource(image=image_proto(8, 6, 2, types_pb2.PIXEL_TYPE_I16, 2)),
            steps=[step, custom],
            output=types_pb2.OutputOptions(keep_resident=True, ttl_seconds=5),
        ),
    ),
    "morph_png": (
        0,
        morphology_pb2.MorphologyRequest(
            input=types_pb2.ImageSource(encoded=png_gray), steps=[custom]
        ),
    ),
    "morph_handle": (
        0,
        morphology_pb2.MorphologyRequest(
            input=types_pb2.ImageSource(handle="img-0123"), steps=[step]
        ),
    ),
    # DICOM frames: a 2-frame RLE volume of 8-bit values with a CT rescale, returned as HTJ2K.
    "morph_dicom_frames": (
        0,
        morphology_pb2.MorphologyRequest(
            input=types_pb2.ImageSource(
                dicom_frames=types_pb2.DicomFrames(
                    transfer_syntax_uid="1.2.840.10008.1.2.5",
                    pixel_module=types_pb2.DicomPixelModule(
                        rows=4,
                        columns=6,
                        bits_allocated=8,
                        bits_stored=7,
                        photometric_interpretation=types_pb2.PHOTOMETRIC_INTERPRETATION_MONOCHROME2,
                    ),
                    frames=[
                        types_pb2.DicomFrame(
                            data=struct.pack("<16I", 1, 64, *[0] * 14) + bytes([0xE9, 5]),
                            rescale_intercept=-1024,
                        )
                    ]
                    * 2,
                    spacing=types_pb2.Spacing(x_mm=0.5, y_mm=0.5, z_mm=1.0),
                )
            ),
            steps=[step],
            output=types_pb2.OutputOptions(frame_encoding=types_pb2.FRAME_ENCODING_HTJ2K_LOSSLESS),
        ),
    ),
    "gradient": (
        1,
        gradient_pb2.GradientRequest(
            input=types_pb2.ImageSource(image=image_proto(9, 7, 0, types_pb2.PIXEL_TYPE_F32, 4)),
            kernel_length=5,
            sigma=1.2,
            magnitude=True,
            angle=True,
        ),
    ),
    "pyramid": (
        2,
        pyramid_pb2.PyramidRequest(
            input=types_pb2.ImageSource(image=image_proto(40, 30)),
            levels=5,
            ratio=1.3,
            min_width=4,
            mode=pyramid_pb2.PYRAMID_MODE_CASCADED,
            output_type=types_pb2.PIXEL_TYPE_U8,
        ),
    ),
}
pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
tris = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]], np.uint32)
mesh = deform_pb2.Mesh(
    vertex_count=4, triangle_count=4, positions=pos.tobytes(), triangles=tris.tobytes()
)
lattice = deform_pb2.Lattice(
    origin=types_pb2.Vec3(x=-0.1, y=-0.1, z=-0.1),
    s=types_pb2.Vec3(x=1.2),
    t=types_pb2.Vec3(y=1.2),
    u=types_pb2.Vec3(z=1.2),
    count_s=2,
    count_t=2,
    count_u=2,
    displacements=[0.1] * 24,
)
requests["deform"] = (
    3,
    deform_pb2.DeformRequest(mesh=deform_pb2.MeshSource(mesh=mesh), lattice=lattice),
)
requests["deform_handle"] = (
    3,
    deform_pb2.DeformRequest(
        mesh=deform_pb2.MeshSource(handle="mesh-1"),
        lattice=lattice,
        outputs=deform_pb2.DEFORM_OUTPUTS_NORMALS,
    ),
)
requests["upload_image"] = (4, resident_pb2.UploadRequest(image=image_proto(16, 16), ttl_seconds=9))
requests["upload_mesh"] = (5, resident_pb2.UploadRequest(mesh=mesh))
requests["detect"] = (
    6,
    detection_pb2.DetectPedestriansRequest(
        input=types_pb2.ImageSource(image=image_proto(64, 128)),
        model="opencv_people_64x128",
        hit_threshold=0.5,
        win_stride=16,
        padding=8,
        scale=1.1,
        max_levels=4,
        group_threshold=2,
        group_eps=0.3,
        gamma_correction=False,
    ),
)
requests["detect_png"] = (
    6,
    detection_pb2.DetectPedestriansRequest(
        input=types_pb2.ImageSource(encoded=png_gray), grouping=detection_pb2.GROUPING_NONE
    ),
)
requests["stream_morph"] = (
    7,
    streaming_pb2.VolumeStreamHeader(
        volume=image_proto(12, 10, 9, types_pb2.PIXEL_TYPE_U16, 0),
        morphology=morphology_pb2.MorphologyRequest(steps=[step, custom]),
    ),
)
requests["stream_gradient"] = (
    7,
    streaming_pb2.VolumeStreamHeader(
        volume=image_proto(9, 7, 5, types_pb2.PIXEL_TYPE_F32, 0),
        gradient=gradient_pb2.GradientRequest(kernel_length=5, magnitude=True),
    ),
)
requests["morph_shm"] = (
    0,
    morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(
            shared_memory=types_pb2.SharedMemoryImage(
                region="shm-0123",
                offset=17,
                image=image_proto(8, 6, 2, types_pb2.PIXEL_TYPE_U16, 0),
            )
        ),
        steps=[step],
        output=types_pb2.OutputOptions(
            shared_memory=types_pb2.SharedMemoryTarget(region="shm-0123", offset=4096)
        ),
    ),
)
requests["gradient_shm"] = (
    1,
    gradient_pb2.GradientRequest(
        input=types_pb2.ImageSource(
            shared_memory=types_pb2.SharedMemoryImage(
                region="shm-1", image=image_proto(9, 7, 0, types_pb2.PIXEL_TYPE_F32, 0)
            )
        ),
        kernel_length=5,
    ),
)
# Elements in millimetres: inline with anisotropic spacing, a resident handle, a stream.
ct_spacing = types_pb2.Spacing(x_mm=0.7, y_mm=0.7, z_mm=2.5)
mm_step = morphology_pb2.MorphologyStep(
    op=morphology_pb2.MORPHOLOGY_OP_CLOSE,
    element=morphology_pb2.StructuringElement(
        shape=morphology_pb2.ELEMENT_SHAPE_ELLIPSE,
        radius=morphology_pb2.ElementRadius(x_mm=1.75, y_mm=0.3, z_mm=5),
    ),
)
mm_volume = image_proto(8, 6, 3, types_pb2.PIXEL_TYPE_I16, 2)
mm_volume.spacing.CopyFrom(ct_spacing)
requests["morph_mm"] = (
    0,
    morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(image=mm_volume), steps=[step, mm_step]
    ),
)
requests["morph_mm_handle"] = (
    0,
    morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(handle="img-0123"), steps=[mm_step]
    ),
)
mm_header = image_proto(12, 10, 9, types_pb2.PIXEL_TYPE_U16, 0)
mm_header.spacing.CopyFrom(ct_spacing)
requests["stream_mm"] = (
    7,
    streaming_pb2.VolumeStreamHeader(
        volume=mm_header, morphology=morphology_pb2.MorphologyRequest(steps=[mm_step, custom])
    ),
)
# The segmentation steps (issue 48): every op with its parameters, a marker inline and resident,
# U32 label images, a stream whose chain has a global step, and Label with every field.
M = morphology_pb2
seg_steps = [
    M.MorphologyStep(op=M.MORPHOLOGY_OP_THRESHOLD, lo=-5, hi=float("inf")),
    M.MorphologyStep(op=M.MORPHOLOGY_OP_FILL_HOLES, connectivity=types_pb2.CONNECTIVITY_26),
    M.MorphologyStep(op=M.MORPHOLOGY_OP_HMAX, h=2.5, connectivity=types_pb2.CONNECTIVITY_18),
    M.MorphologyStep(op=M.MORPHOLOGY_OP_HMIN, h=1),
    M.MorphologyStep(op=M.MORPHOLOGY_OP_OPEN_REC, element=step.element, iterations=2),
    M.MorphologyStep(op=M.MORPHOLOGY_OP_CLOSE_REC, element=mm_step.element),
    M.MorphologyStep(op=M.MORPHOLOGY_OP_REMOVE_SMALL, min_voxels=12),
    M.MorphologyStep(op=M.MORPHOLOGY_OP_KEEP_LARGEST, connectivity=types_pb2.CONNECTIVITY_6),
]
marker_steps = [
    M.MorphologyStep(op=M.MORPHOLOGY_OP_RECONSTRUCT_DILATE),
    M.MorphologyStep(op=M.MORPHOLOGY_OP_RECONSTRUCT_ERODE, connectivity=types_pb2.CONNECTIVITY_6),
]
requests["morph_segmentation"] = (
    0,
    M.MorphologyRequest(input=types_pb2.ImageSource(image=mm_volume), steps=seg_steps),
)
requests["morph_marker"] = (
    0,
    M.MorphologyRequest(
        input=types_pb2.ImageSource(image=image_proto(8, 6, 3, types_pb2.PIXEL_TYPE_U16, 2)),
        steps=marker_steps,
        marker=types_pb2.ImageSource(image=image_proto(8, 6, 3, types_pb2.PIXEL_TYPE_U16, 2)),
    ),
)
requests["morph_marker_handle"] = (
    0,
    M.MorphologyRequest(
        input=types_pb2.ImageSource(handle="img-0123"),
        steps=marker_steps + seg_steps[:2],
        marker=types_pb2.ImageSource(handle="img-4567"),
    ),
)
requests["morph_u32"] = (
    0,
    M.MorphologyRequest(
        input=types_pb2.ImageSource(image=image_proto(7, 5, 0, types_pb2.PIXEL_TYPE_U32, 4)),
        steps=[
            seg_steps[6],
            M.MorphologyStep(
                op=M.MORPHOLOGY_OP_KEEP_LARGEST, connectivity=types_pb2.CONNECTIVITY_8
            ),
        ],
    ),
)
requests["stream_global"] = (
    7,
    streaming_pb2.VolumeStreamHeader(
        volume=image_proto(12, 10, 9, types_pb2.PIXEL_TYPE_U16, 0),
        morphology=M.MorphologyRequest(
            steps=[step, seg_steps[1], custom, marker_steps[0]],
            marker=types_pb2.ImageSource(handle="img-4567"),
        ),
    ),
)
requests["label"] = (
    8,
    label_pb2.LabelRequest(
        input=types_pb2.ImageSource(image=image_proto(9, 7, 4, types_pb2.PIXEL_TYPE_I16, 2)),
        connectivity=types_pb2.CONNECTIVITY_18,
        threshold=label_pb2.LabelThreshold(lo=-3, hi=40),
        min_voxels=2,
        intensity=types_pb2.ImageSource(image=image_proto(9, 7, 4, types_pb2.PIXEL_TYPE_F32, 4)),
        output=types_pb2.OutputOptions(keep_resident=True, omit_data=True),
    ),
)
requests["label_handle"] = (
    8,
    label_pb2.LabelRequest(
        input=types_pb2.ImageSource(handle="img-0123"),
        connectivity=types_pb2.CONNECTIVITY_8,
        intensity=types_pb2.ImageSource(encoded=png_gray),
    ),
)
requests["upload_u32"] = (
    4,
    resident_pb2.UploadRequest(image=image_proto(6, 5, 3, types_pb2.PIXEL_TYPE_U32, 4)),
)
for name, (kind, message) in requests.items():
    write("request_validation", name, bytes([kind]) + message.SerializeToString())


# --- npy_reader: what np.save writes (both byte orders, every rank and dtype we read), a
# version 2.0 header, and a Fortran-order file (refused, but its header is real structure).
def npy(array, version=None):
    out = io.BytesIO()
    if version is None:
        np.save(out, array)
    else:
        np.lib.format.write_array(out, array, version=version)
    return out.getvalue()


write("npy_reader", "u1_2d.npy", npy(gray))
write("npy_reader", "i2_3d.npy", npy((gray.astype(np.int16) - 128).reshape(2, 6, 10)))
write("npy_reader", "u2_big_endian.npy", npy(gray.astype(">u2") * 257))
write("npy_reader", "f4_3d.npy", npy((gray.astype("<f4") / 7).reshape(3, 4, 10)))
write("npy_reader", "v2_header.npy", npy(gray.astype("<u2"), version=(2, 0)))
write("npy_reader", "fortran.npy", npy(np.asfortranarray(gray)))


# --- nrrd_reader: attached headers in the encodings and layouts Teem reads.
def nrrd(fields, data):
    return ("NRRD0004\n" + "".join(f"{k}: {v}\n" for k, v in fields) + "\n").encode() + data


write(
    "nrrd_reader",
    "u8_2d_raw.nrrd",
    nrrd(
        [("type", "uchar"), ("dimension", 2), ("sizes", "10 12"), ("encoding", "raw")],
        gray.tobytes(),
    ),
)
volume = (gray.astype("<i2") - 128).reshape(2, 6, 10)
write(
    "nrrd_reader",
    "short_3d_spacings.nrrd",
    nrrd(
        [
            ("type", "short"),
            ("dimension", 3),
            ("sizes", "10 6 2"),
            ("endian", "little"),
            ("encoding", "raw"),
            ("spacings", "0.5 0.5 2.5"),
        ],
        volume.tobytes(),
    ),
)
write(
    "nrrd_reader",
    "ushort_3d_gzip.nrrd",
    nrrd(
        [
            ("type", "ushort"),
            ("dimension", 3),
            ("sizes", "10 6 2"),
            ("endian", "little"),
            ("encoding", "gzip"),
        ],
        gzip.compress(volume.astype("<u2").tobytes(), mtime=0),
    ),
)
write(
    "nrrd_reader",
    "float_space_directions.nrrd",
    nrrd(
        [
            ("type", "float"),
            ("dimension", 3),
            ("space", "left-posterior-superior"),
            ("sizes", "10 6 2"),
            ("space directions", "(0.7,0,0) (0,0.7,0) (0,0,3)"),
            ("endian", "big"),
            ("encoding", "raw"),
            ("space origin", "(1,2,3)"),
        ],
        (volume.astype(">f4") / 3).tobytes(),
    ),
)
write(
    "nrrd_reader",
    "u8_ascii.nrrd",
    nrrd(
        [("type", "uchar"), ("dimension", 2), ("sizes", "3 2"), ("encoding", "ascii")],
        b"1 2 3\n4 5 6\n",
    ),
)


# --- dicom_series: byte 0 picks the slice count (1 + byte % 3); every slice but the last is a
# 4-byte little-endian length and its bytes, the last slice the rest. Small CT slices made with
# pydicom: a two-slice series with rescale, one 12-bit signed slice, three oblique slices.
def dicom_slice(
    series_uid,
    index,
    pixels,
    position,
    orientation=(1, 0, 0, 0, 1, 0),
    signed=False,
    bits_stored=16,
    slope=1.0,
    intercept=0.0,
):
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
    meta.MediaStorageSOPInstanceUID = generate_uid(entropy_srcs=[series_uid, str(index)])
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(None, {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.SeriesInstanceUID = series_uid
    ds.Modality = "CT"
    ds.Rows, ds.Columns = pixels.shape
    ds.PixelSpacing = [0.8, 0.6]
    ds.ImageOrientationPatient = list(orientation)
    ds.ImagePositionPatient = list(position)
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.BitsAllocated = 16
    ds.BitsStored = bits_stored
    ds.HighBit = bits_stored - 1
    ds.PixelRepresentation = 1 if signed else 0
    ds.RescaleSlope = slope
    ds.RescaleIntercept = intercept
    ds.PixelData = pixels.astype("<i2" if signed else "<u2").tobytes()
    out = io.BytesIO()
    ds.save_as(out, write_like_original=False)
    return out.getvalue()


def series_seed(slices):
    data = bytes([len(slices) - 1])
    for s in slices[:-1]:
        data += struct.pack("<I", len(s)) + s
    return data + slices[-1]


ct = rng.integers(0, 2000, (4, 5))
write(
    "dicom_series",
    "two_slices_rescaled.bin",
    series_seed(
        [
            dicom_slice(
                "1.2.826.0.1.3680043.8.498.1",
                z,
                ct + z,
                (0, 0, 2.5 * z),
                slope=1.0,
                intercept=-1024.0,
            )
            for z in (1, 0)
        ]
    ),
)
write(
    "dicom_series",
    "one_signed_12bit.bin",
    series_seed(
        [
            dicom_slice(
                "1.2.826.0.1.3680043.8.498.2", 0, ct - 1000, (5, 5, 5), signed=True, bits_stored=12
            )
        ]
    ),
)
c, s_ = np.cos(0.3), np.sin(0.3)
write(
    "dicom_series",
    "three_oblique.bin",
    series_seed(
        [
            dicom_slice(
                "1.2.826.0.1.3680043.8.498.3",
                z,
                ct,
                (0, -s_ * 3 * z, c * 3 * z),
                orientation=(1, 0, 0, 0, c, s_),
                slope=0.5,
            )
            for z in (2, 0, 1)
        ]
    ),
)
# Rows x Columns far larger than the pixel data: refused before the volume is allocated.
big = dicom_slice("1.2.826.0.1.3680043.8.498.4", 0, ct, (0, 0, 0))
from pydicom import dcmread  # noqa: E402

big_ds = dcmread(io.BytesIO(big))
big_ds.Rows, big_ds.Columns = 40000, 40000
big_out = io.BytesIO()
big_ds.save_as(big_out)
write("dicom_series", "huge_rows_columns.bin", series_seed([big_out.getvalue()]))


# Compressed slices, made by the tools a PACS's sources use (dcmtk, libgdcm-tools): one seed per
# transfer syntax, so mutation starts inside each of GDCM's decoders (and cuimg's own inflation of
# deflated datasets, client/io/dicom_load.h).
def compressed(slice_bytes, command):
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.dcm"), os.path.join(tmp, "out.dcm")
        with open(src, "wb") as f:
            f.write(slice_bytes)
        subprocess.run(command + [src, dst], check=True, capture_output=True)
        with open(dst, "rb") as f:
            return f.read()


ct12 = rng.integers(0, 4096, (32, 32))  # OpenJPEG needs 32 x 32 for its default 6 levels
plain = dicom_slice(
    "1.2.826.0.1.3680043.8.498.5", 0, ct12, (0, 0, 0), bits_stored=12, intercept=-1024.0
)
for name, command in (
    ("jpeg_lossless", ["dcmcjpeg", "+e1"]),
    ("jpeg_extended", ["dcmcjpeg", "+ee"]),
    ("jpegls", ["dcmcjpls"]),
    ("jpegls_near", ["dcmcjpls", "+en"]),
    ("rle", ["dcmcrle"]),
    ("deflated", ["dcmconv", "+td"]),
    ("j2k", ["gdcmconv", "--j2k"]),
):
    write("dicom_series", f"codec_{name}.bin", series_seed([compressed(plain, command)]))
# A fractional slope (f32 volume).
write(
    "dicom_series",
    "pet_slope.bin",
    series_seed(
        [
            dicom_slice("1.2.826.0.1.3680043.8.498.6", z, ct, (0, 0, 3.0 * z), slope=0.001)
            for z in (0, 1)
        ]
    ),
)


# --- nifti_reader: byte 0 odd = .nii.gz, even = .nii; the rest is the file (nibabel writes them).
def nifti_seed(image, gz):
    raw = image.to_bytes()
    return bytes([1 if gz else 0]) + (gzip.compress(raw, mtime=0) if gz else raw)


def nifti_images():
    import nibabel as nib

    affine = np.array([[0.9, -0.5, 0, -91], [0.5, 0.9, 0, 13], [0, 0, -2.5, -69], [0, 0, 0, 1]])
    i16 = nib.Nifti1Image(rng.integers(-1000, 1000, (5, 4, 3)).astype(np.int16), affine)
    i16.header.set_slope_inter(0.001, 0)
    i16.set_qform(affine, 1)
    f32 = nib.Nifti2Image(rng.random((4, 3, 2)).astype(np.float32), np.diag([1.5, 1.5, 3, 1]))
    u8 = nib.Nifti1Image(rng.integers(0, 255, (6, 5)).astype(np.uint8), np.eye(4))
    return {"i16_scaled_qform_sform": i16, "f32_nifti2": f32, "u8_2d": u8}


for name, image in nifti_images().items():
    write("nifti_reader", f"{name}.bin", nifti_seed(image, gz=False))
    write("nifti_reader", f"{name}_gz.bin", nifti_seed(image, gz=True))


# --- multipart: a Content-Type line, then a body, as WADO-RS answers come (multipart_fuzzer.cc).
dicm = b"\0" * 128 + b"DICM" + bytes(range(48))
write(
    "multipart",
    "one_instance.bin",
    b'multipart/related; type="application/dicom"; boundary=abc123\n'
    b"--abc123\r\nContent-Type: application/dicom\r\n\r\n" + dicm + b"\r\n--abc123--\r\n",
)
write(
    "multipart",
    "preamble_two_parts_epilogue.bin",
    b'Multipart/Related; boundary="q b:1"\npreamble\r\n--q b:1 \r\n\r\n'
    + dicm
    + b"\r\n--q b:1\r\nContent-Type: application/dicom; transfer-syntax=1.2.840.10008.1.2.1\r\n"
    b"Content-Length: 10\r\n\r\n0123456789\r\n--q b:1--epilogue",
)


# --- rle_frame, jpeg_frame, j2k_frame, frame_sandbox (frame_decode_fuzzer.cc): 4 bytes of
# description (rows - 1, columns - 1, bits, signed and the syntax's index in the family's list),
# then one frame, as the tools a PACS's sources use write it (dcmtk, libgdcm-tools, openjph-tools).
def frame_seed(rows, columns, bits_allocated, bits_stored, signed, syntax_index, frame):
    bits = (1 if bits_allocated == 16 else 0) | ((bits_stored - 1) << 1)
    return bytes([rows - 1, columns - 1, bits, int(signed) | (syntax_index << 1)]) + frame


def dicom_frames(pixels, bits_stored, signed, command):
    from pydicom import dcmread
    from pydicom.encaps import generate_pixel_data_frame

    source = dicom_slice(
        "1.2.826.0.1.3680043.8.498.9", 0, pixels, (0, 0, 0), signed=signed, bits_stored=bits_stored
    )
    ds = dcmread(io.BytesIO(compressed(source, command)))
    return ds, next(generate_pixel_data_frame(ds.PixelData, 1))


frame_ct = rng.integers(0, 4096, (32, 32))  # 32 x 32: OpenJPEG's default 6 levels fit
frame_signed = rng.integers(-2048, 2048, (32, 32))
for fuzzer, index, name, command in (
    ("rle_frame", 0, "rle", ["dcmcrle"]),
    ("jpeg_frame", 1, "extended", ["dcmcjpeg", "+ee"]),
    ("jpeg_frame", 2, "lossless_p6", ["dcmcjpeg", "+el", "+sv", "6"]),
    ("jpeg_frame", 3, "lossless_sv1", ["dcmcjpeg", "+e1"]),
    ("j2k_frame", 0, "j2k", ["gdcmconv", "--j2k"]),
    ("frame_sandbox", 1, "jpegls", ["dcmcjpls"]),
    ("frame_sandbox", 3, "jpegls_near", ["dcmcjpls", "+en"]),
):
    for signed, pixels in ((False, frame_ct), (True, frame_signed)):
        if signed and name == "jpegls_near":
            continue  # dcmcjpls refuses signed near-lossless
        ds, frame = dicom_frames(pixels, 12, signed, command)
        write(
            fuzzer,
            f"{name}_{'signed' if signed else 'unsigned'}.bin",
            frame_seed(
                ds.Rows,
                ds.Columns,
                ds.BitsAllocated,
                ds.BitsStored,
                ds.PixelRepresentation,
                index,
                frame,
            ),
        )
write("rle_frame", "native.bin", frame_seed(6, 10, 8, 8, False, 1, gray[:6].tobytes()))


def ojph_frame(pixels, bits, signed, options):
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        raw, j2c = os.path.join(tmp, "in.raw"), os.path.join(tmp, "out.j2c")
        (pixels & ((1 << bits) - 1)).astype("<u2").tofile(raw)
        subprocess.run(
            [
                "ojph_compress",
                "-i",
                raw,
                "-o",
                j2c,
                "-dims",
                "{32,32}",
                "-num_comps",
                "1",
                "-signed",
                "true" if signed else "false",
                "-bit_depth",
                str(bits),
                "-downsamp",
                "{1,1}",
            ]
            + options,
            check=True,
            capture_output=True,
        )
        with open(j2c, "rb") as f:
            return f.read()


for name, options in (
    ("lossless", ["-reversible", "true"]),
    ("lossy", ["-reversible", "false", "-qstep", "0.01"]),
):
    ht = ojph_frame(frame_ct, 12, False, options)
    write("frame_sandbox", f"htj2k_{name}.bin", frame_seed(32, 32, 16, 12, False, 0, ht))
    # The walk and OpenJPEG see HT codestreams whatever the syntax says.
    write("j2k_frame", f"htj2k_{name}.bin", frame_seed(32, 32, 16, 12, False, 2, ht))
