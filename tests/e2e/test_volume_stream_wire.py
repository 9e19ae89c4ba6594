"""ProcessVolumeStream over the wire (real cuimg-server, Python grpcio): random volumes of odd sizes
streamed in slabs of several sizes through per-slice and 3D elements, chains and Gradient must equal
the unary RPCs byte for byte on the same server; `cuimg morphology/gradient --slab_slices` must
write the same files as without, over one stream or several (--volume_streams). Runs on the CPU
backend in CI and on the CUDA backend on the GPU machine (CUIMG_BACKEND), where the slabs of one
stream run on several CUDA streams at once."""
import os
import re
import struct
import subprocess
import tempfile
import unittest

import numpy as np

from cuimg.v1 import (
    gradient_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    streaming_pb2,
    types_pb2,
)
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
TYPES = [
    (types_pb2.PIXEL_TYPE_U8, np.uint8),
    (types_pb2.PIXEL_TYPE_U16, np.uint16),
    (types_pb2.PIXEL_TYPE_I16, np.int16),
    (types_pb2.PIXEL_TYPE_F32, np.float32),
]


def volume_proto(array, pixel_type, with_data=True):
    return types_pb2.Image(
        pixel_type=pixel_type,
        width=array.shape[2],
        height=array.shape[1],
        depth=array.shape[0],
        data=array.tobytes() if with_data else b"",
    )


def stream_messages(array, pixel_type, slab_slices, **operation):
    yield streaming_pb2.VolumeStreamRequest(
        header=streaming_pb2.VolumeStreamHeader(
            volume=volume_proto(array, pixel_type, with_data=False), **operation
        )
    )
    for z in range(0, array.shape[0], slab_slices):
        yield streaming_pb2.VolumeStreamRequest(slab=array[z : z + slab_slices].tobytes())


def streamed(stub, array, pixel_type, slab_slices, **operation):
    """The result slabs' bytes in z order, checking they tile the volume exactly."""
    data, z = b"", 0
    for reply in stub.ProcessVolumeStream(
        stream_messages(array, pixel_type, slab_slices, **operation), timeout=120
    ):
        assert reply.z_begin == z, (reply.z_begin, z)
        z += reply.slices
        data += reply.data
    assert z == array.shape[0], (z, array.shape[0])
    return data


def random_element(rng, three_d):
    el = morphology_pb2.StructuringElement(
        shape=int(rng.integers(1, 4)),
        width=int(rng.integers(1, 12)),
        height=int(rng.integers(1, 12)),
        depth=int(rng.integers(1, 6)) if three_d else 0,
    )
    if rng.random() < 0.3:
        el.anchor_z = int(rng.integers(max(el.depth, 1)))
    return el


class VolumeStreamWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}", "--worker_threads=4")
        cls.channel = cls.server.channel()
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        code = cls.server.terminate()
        assert code == 0, cls.server.log()

    def test_morphology_streamed_equals_unary_for_random_volumes(self):
        rng = np.random.default_rng(7)
        for case in range(16):
            pixel_type, dtype = TYPES[case % len(TYPES)]
            shape = (int(rng.integers(1, 14)), int(rng.integers(1, 40)), int(rng.integers(1, 50)))
            if dtype == np.float32:
                array = rng.normal(scale=100, size=shape).astype(np.float32)
            else:
                info = np.iinfo(dtype)
                array = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
            steps = []
            for _ in range(int(rng.integers(1, 3))):
                step = morphology_pb2.MorphologyStep(
                    op=int(rng.integers(1, 8)),
                    element=random_element(rng, rng.random() < 0.6),
                    iterations=int(rng.integers(1, 3)),
                )
                if rng.random() < 0.3:
                    step.border_mode = morphology_pb2.BORDER_MODE_CONSTANT
                    step.border_value = float(rng.integers(-50, 300))
                steps.append(step)
            unary = self.stub.Morphology(
                morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(image=volume_proto(array, pixel_type)), steps=steps
                ),
                timeout=120,
            ).result.image.data
            for slab_slices in sorted({1, 2, 3, int(rng.integers(1, shape[0] + 1)), shape[0]}):
                with self.subTest(case=case, shape=shape, slab_slices=slab_slices):
                    got = streamed(
                        self.stub,
                        array,
                        pixel_type,
                        slab_slices,
                        morphology=morphology_pb2.MorphologyRequest(steps=steps),
                    )
                    self.assertTrue(got == unary, f"{BACKEND}: streamed != unary")

    def test_gradient_streamed_equals_unary(self):
        rng = np.random.default_rng(8)
        array = rng.integers(-3000, 3000, size=(7, 33, 45), dtype=np.int16)
        unary = self.stub.Gradient(
            gradient_pb2.GradientRequest(
                input=types_pb2.ImageSource(image=volume_proto(array, types_pb2.PIXEL_TYPE_I16)),
                kernel_length=7,
                magnitude=True,
            ),
            timeout=120,
        )
        planes = [unary.gx.image.data, unary.gy.image.data, unary.magnitude.image.data]
        plane = 33 * 45 * 4
        for slab_slices in (1, 3, 7):
            with self.subTest(slab_slices=slab_slices):
                got = [b"", b"", b""]
                for reply in self.stub.ProcessVolumeStream(
                    stream_messages(
                        array,
                        types_pb2.PIXEL_TYPE_I16,
                        slab_slices,
                        gradient=gradient_pb2.GradientRequest(kernel_length=7, magnitude=True),
                    ),
                    timeout=120,
                ):
                    n = reply.slices * plane
                    for p in range(3):
                        got[p] += reply.data[p * n : (p + 1) * n]
                self.assertTrue(got == planes, f"{BACKEND}: streamed gradient != unary")

    def test_client_slab_slices_writes_the_same_files(self):
        rng = np.random.default_rng(9)
        array = rng.integers(0, 65536, size=(9, 31, 37), dtype=np.uint16)
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "in.tif")
            write_tiff_u16(src, array)
            outs = {}
            # The client splits a streamed volume over --volume_streams streams (default 4), each
            # carrying the halo its part needs (open 5x5x3: one slice, twice).
            # Streams used: 9 slices give at most 4 parts of 2 or more slices.
            variants = (
                ("unary", [], 0),
                ("streamed", ["--slab_slices=4"], 4),
                ("one_stream", ["--slab_slices=4", "--volume_streams=1"], 1),
                ("nine_streams", ["--slab_slices=1", "--volume_streams=9"], 4),
            )
            for name, extra, streams in variants:
                for cmd in (
                    ["morphology", f"--output={d}/{name}.tif", "--steps=open:ellipse:5x5x3"],
                    ["gradient", f"--output_prefix={d}/{name}"],
                ):
                    run = subprocess.run(
                        [
                            CLIENT,
                            cmd[0],
                            f"--target={self.server.target}",
                            f"--input={src}",
                            *cmd[1:],
                            *extra,
                        ],
                        capture_output=True,
                        text=True,
                        timeout=120,
                    )
                    self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                    # One readable line; for a streamed volume the slab sums are labelled as
                    # such, never as one stream's kernel_us above its total_us.
                    self.assertEqual(run.stdout.count("\n"), 1, run.stdout)
                    if streams:
                        found = re.search(
                            r"; streamed [0-9.]+ MB at [0-9.]+ MB/s over (\d+) "
                            r"streams?, (\d+) slabs?; server: longest stream "
                            r"[0-9.]+ ms, slab stages summed [0-9.]+ ms kernel \+ "
                            r"[0-9.]+ ms copies",
                            run.stdout,
                        )
                        self.assertIsNotNone(found, run.stdout)
                        self.assertEqual(int(found.group(1)), streams, run.stdout)
                        self.assertGreaterEqual(int(found.group(2)), streams, run.stdout)
                        self.assertNotIn("kernel_us", run.stdout)
                outs[name] = [
                    open(f"{d}/{name}{s}", "rb").read()
                    for s in (".tif", "_gx.tiff", "_gy.tiff", "_magnitude.tiff")
                ]
            for name, _, _ in variants[1:]:
                self.assertEqual(outs["unary"], outs[name], name)
            run = subprocess.run(
                [
                    CLIENT,
                    "morphology",
                    f"--target={self.server.target}",
                    f"--input={src}",
                    f"--output={d}/x.tif",
                    "--slab_slices=4",
                    "--volume_streams=0",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(run.returncode, 2, run.stdout + run.stderr)
            self.assertIn("--volume_streams", run.stderr)


def write_tiff_u16(path, array):
    """A minimal uncompressed multi-page little-endian TIFF of 16-bit gray pages."""
    depth, height, width = array.shape
    entries_per_ifd = 8
    ifd_size = 2 + 12 * entries_per_ifd + 4
    header = b"II*\x00" + struct.pack("<I", 8)
    pages = []
    offset = 8
    ifd_offsets = [offset + i * ifd_size for i in range(depth)]
    data_offset = 8 + depth * ifd_size
    for i in range(depth):
        strip = data_offset + i * width * height * 2
        entries = [
            (256, 4, 1, width),
            (257, 4, 1, height),
            (258, 3, 1, 16),
            (259, 3, 1, 1),
            (262, 3, 1, 1),
            (273, 4, 1, strip),
            (278, 4, 1, height),
            (279, 4, 1, width * height * 2),
        ]
        ifd = struct.pack("<H", len(entries))
        for tag, kind, count, value in entries:
            ifd += struct.pack("<HHI", tag, kind, count)
            ifd += struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value)
        nxt = ifd_offsets[i + 1] if i + 1 < depth else 0
        pages.append(ifd + struct.pack("<I", nxt))
    with open(path, "wb") as f:
        f.write(header + b"".join(pages) + array.astype("<u2").tobytes())


if __name__ == "__main__":
    unittest.main(verbosity=2)
