"""The Python client package (client/python/cuimg, beside the generated stubs) against the real
cuimg-server on the CPU backend: NumPy arrays in and out for morphology (vs SciPy), gradient,
pyramid, detect, deform (each vs the raw generated stub on the same request), resident upload /
use by handle / download / list / release, keep_resident on every RPC that has it, models, health,
detect(encoded=), errors as CuimgError with the gRPC code, TLS with a bearer token
(refused without it), and the PACS example on a pydicom-made CT series."""
import os
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
import numpy as np
import pydicom
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid
from scipy import ndimage

import cuimg
from cuimg.v1 import (
    deform_pb2,
    detection_pb2,
    gradient_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    pyramid_pb2,
    types_pb2,
)
from server_process import ServerProcess
from tls_material import TlsMaterial

SERVER = os.environ["CUIMG_SERVER"]
EXAMPLE = os.environ["CUIMG_PYTHON_EXAMPLE"]
DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
TOKEN = "py-client-token-5f2c"


def torus(n=24, m=16, big=1.0, small=0.35):
    u, v = np.meshgrid(2 * np.pi * np.arange(n) / n, 2 * np.pi * np.arange(m) / m, indexing="ij")
    pos = (
        np.stack(
            [
                (big + small * np.cos(v)) * np.cos(u),
                (big + small * np.cos(v)) * np.sin(u),
                small * np.sin(v),
            ],
            axis=-1,
        )
        .reshape(-1, 3)
        .astype(np.float32)
    )
    tris = []
    for i in range(n):
        for j in range(m):
            a, b = i * m + j, ((i + 1) % n) * m + j
            c, d = ((i + 1) % n) * m + (j + 1) % m, i * m + (j + 1) % m
            tris += [(a, b, c), (a, c, d)]
    return pos, np.array(tris, dtype=np.uint32)


def twist_lattice(pos):
    lo, hi = pos.min(axis=0) - 0.01, pos.max(axis=0) + 0.01
    vec = lambda x, y, z: types_pb2.Vec3(x=x, y=y, z=z)  # noqa: E731
    counts = (3, 3, 3)
    disp = np.zeros(counts + (3,))
    disp[:, :, 2, 0] = 0.2  # shift the top layer along x
    return deform_pb2.Lattice(
        origin=vec(*lo),
        s=vec(hi[0] - lo[0], 0, 0),
        t=vec(0, hi[1] - lo[1], 0),
        u=vec(0, 0, hi[2] - lo[2]),
        count_s=3,
        count_t=3,
        count_u=3,
        displacements=disp.ravel().tolist(),
    )


class PythonClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, "--backend=cpu")
        cls.client = cuimg.Client(cls.server.target, timeout=120)
        cls.raw_channel = cls.server.channel()
        cls.raw = imaging_service_pb2_grpc.ImagingStub(cls.raw_channel)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.raw_channel.close()
        assert cls.server.terminate() == 0, cls.server.log()

    def test_morphology_arrays_in_and_out_match_scipy(self):
        rng = np.random.default_rng(1)
        volume = rng.integers(-1000, 1000, (5, 20, 30)).astype(np.int16)
        out = self.client.morphology(volume, "dilate:rect:3x3x3")
        self.assertEqual((out.dtype, out.shape), (np.dtype(np.int16), volume.shape))
        np.testing.assert_array_equal(
            out, ndimage.grey_dilation(volume, size=(3, 3, 3), mode="nearest")
        )
        image = rng.integers(0, 256, (40, 50)).astype(np.uint8)
        out = self.client.morphology(image, "erode:rect:5x3,dilate:rect:5x3")  # an opening
        np.testing.assert_array_equal(out, ndimage.grey_opening(image, size=(3, 5), mode="nearest"))
        self.assertIn("kernel_us=", self.client.last_timing)

    def test_gradient_pyramid_detect_deform_equal_the_raw_stub(self):
        rng = np.random.default_rng(2)
        image = rng.normal(size=(31, 45)).astype(np.float32)
        got = self.client.gradient(image, magnitude=True)
        raw = self.raw.Gradient(
            gradient_pb2.GradientRequest(
                input=types_pb2.ImageSource(image=cuimg.client.to_image(image)), magnitude=True
            )
        )
        np.testing.assert_array_equal(got["gx"], cuimg.client.from_image(raw.gx.image))
        np.testing.assert_array_equal(
            got["magnitude"], cuimg.client.from_image(raw.magnitude.image)
        )
        self.assertEqual(got["gy"].shape, image.shape)

        levels = self.client.pyramid(
            rng.integers(0, 256, (60, 80)).astype(np.uint8), levels=4, ratio=1.5
        )
        raw = self.raw.Pyramid(
            pyramid_pb2.PyramidRequest(
                input=types_pb2.ImageSource(image=cuimg.client.to_image(levels[0])),
                levels=4,
                ratio=1.5,
                mode=pyramid_pb2.PYRAMID_MODE_FROM_BASE,
            )
        )
        self.assertEqual(len(levels), 4)
        for mine, theirs in zip(levels, raw.levels):
            np.testing.assert_array_equal(mine, cuimg.client.from_image(theirs.result.image))

        with open(os.path.join(DATA, "basketball1.png"), "rb") as f:
            png = f.read()
        boxes = self.client.detect(None, encoded=png)
        raw = self.raw.DetectPedestrians(
            detection_pb2.DetectPedestriansRequest(
                input=types_pb2.ImageSource(encoded=png),
                grouping=detection_pb2.GROUPING_GROUP_RECTANGLES,
            )
        )
        self.assertGreater(len(boxes), 0)
        self.assertEqual(
            [(b["x"], b["y"], b["width"], b["height"]) for b in boxes],
            [(d.x, d.y, d.width, d.height) for d in raw.detections],
        )

        pos, tris = torus()
        lattice = twist_lattice(pos)
        positions, normals = self.client.deform((pos, tris), lattice)
        raw = self.raw.Deform(
            deform_pb2.DeformRequest(
                mesh=deform_pb2.MeshSource(mesh=cuimg.client._mesh(pos, tris)),
                lattice=lattice,
                outputs=deform_pb2.DEFORM_OUTPUTS_POSITIONS_AND_NORMALS,
            )
        )
        np.testing.assert_array_equal(positions, np.frombuffer(raw.positions, "<f4").reshape(-1, 3))
        np.testing.assert_array_equal(normals, np.frombuffer(raw.normals, "<f4").reshape(-1, 3))
        self.assertGreater(np.abs(positions - pos).max(), 0.05)  # the lattice did move it

    def test_resident_objects_and_errors(self):
        rng = np.random.default_rng(3)
        volume = rng.integers(0, 65535, (3, 16, 16)).astype(np.uint16)
        handle = self.client.upload(volume)
        self.assertIn((handle, "RESIDENT_KIND_IMAGE", volume.nbytes), self.client.list_resident())
        np.testing.assert_array_equal(
            self.client.morphology(handle, "erode:cross:3x3"),
            self.client.morphology(volume, "erode:cross:3x3"),
        )
        mesh = self.client.upload(mesh=torus())
        self.assertEqual(self.client.deform(mesh, twist_lattice(torus()[0]))[0].shape, (24 * 16, 3))
        for h in (handle, mesh):
            self.client.release(h)
        self.assertNotIn(handle, [h for h, _, _ in self.client.list_resident()])
        with self.assertRaises(cuimg.CuimgError) as e:
            self.client.morphology(handle, "erode:rect:3x3")
        self.assertEqual(e.exception.code, grpc.StatusCode.NOT_FOUND)
        # Typed by the ErrorInfo's reason, which it carries with the field.
        self.assertIsInstance(e.exception, cuimg.NotFoundError)
        self.assertEqual(e.exception.field, "input.handle")
        self.assertEqual(e.exception.reason, "HANDLE_NOT_FOUND")
        with self.assertRaises(cuimg.LimitExceededError) as e:
            self.client.morphology(volume, "erode:rect:3000x3")
        self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(
            (e.exception.reason, e.exception.field), ("ELEMENT_TOO_LARGE", "steps[0].element.width")
        )
        self.assertIn("steps[0].element.width", e.exception.details)
        with self.assertRaises(TypeError):
            self.client.morphology(volume.astype(np.float64), "erode:rect:3x3")
        with self.assertRaises(ValueError):
            cuimg.parse_steps("melt:rect:3x3")

    def test_download_keep_resident_models_health_and_detect_keywords(self):
        rng = np.random.default_rng(7)
        volume = rng.integers(-1000, 1000, (4, 18, 22)).astype(np.int16)
        handle = self.client.upload(volume, spacing=(0.5, 0.5, 2.0), chunk_bytes=1000)
        got = self.client.download(handle)
        self.assertEqual((got.dtype, got.shape), (volume.dtype, volume.shape))
        self.assertTrue(got.flags.writeable)
        np.testing.assert_array_equal(got, volume)
        pos, tris = torus()
        mesh = self.client.upload(mesh=(pos, tris), chunk_bytes=1000)
        vertices, triangles = self.client.download(mesh)
        np.testing.assert_array_equal(vertices, pos)
        np.testing.assert_array_equal(triangles, tris)

        # keep_resident on every RPC that has it: the handle holds what came back inline.
        kept = self.client.morphology(volume, "dilate:rect:3x3x3", keep_resident=True)
        self.assertIsInstance(kept, cuimg.Resident)
        np.testing.assert_array_equal(
            kept.data, self.client.morphology(volume, "dilate:rect:3x3x3")
        )
        np.testing.assert_array_equal(self.client.download(kept.handle), kept.data)
        only = self.client.morphology(
            handle, "erode:cross:3x3", keep_resident=True, return_data=False
        )
        self.assertIsNone(only.data)
        np.testing.assert_array_equal(
            self.client.download(only.handle), self.client.morphology(volume, "erode:cross:3x3")
        )
        grads = self.client.gradient(volume[0], magnitude=True, keep_resident=True)
        self.assertEqual(sorted(grads), ["gx", "gy", "magnitude"])
        for name, result in grads.items():
            np.testing.assert_array_equal(self.client.download(result.handle), result.data)
        levels = self.client.pyramid(
            volume[0], levels=3, ratio=1.5, keep_resident=True, return_data=False
        )
        self.assertEqual(
            [self.client.download(level.handle).shape for level in levels],
            [(18, 22), (12, 15), (8, 10)],
        )
        deformed = self.client.deform(mesh, twist_lattice(pos), keep_resident=True)
        np.testing.assert_array_equal(self.client.download(deformed.handle)[0], deformed.data[0])
        held = {h for h, _, _ in self.client.list_resident()}
        for h in (
            [handle, mesh, kept.handle, only.handle, deformed.handle]
            + [r.handle for r in grads.values()]
            + [r.handle for r in levels]
        ):
            self.assertIn(h, held)
            self.client.release(h)
        with self.assertRaises(cuimg.CuimgError) as e:
            self.client.download(handle)
        self.assertEqual(e.exception.code, grpc.StatusCode.NOT_FOUND)
        with self.assertRaises(ValueError):
            self.client.morphology(volume, "erode:rect:3x3", return_data=False)

        models = {m["name"]: m for m in self.client.models()}
        self.assertEqual(
            (
                models["opencv_people_64x128"]["window_width"],
                models["opencv_people_64x128"]["window_height"],
            ),
            (64, 128),
        )
        self.assertEqual(self.client.health(), "SERVING")
        self.assertEqual(self.client.health("cuimg.v1.Imaging"), "SERVING")
        with cuimg.Client("127.0.0.1:1", timeout=2, max_attempts=1) as nowhere:
            with self.assertRaises(cuimg.CuimgError) as e:
                nowhere.health()
            self.assertEqual(e.exception.code, grpc.StatusCode.UNAVAILABLE)

        with open(os.path.join(DATA, "basketball1.png"), "rb") as f:
            png = f.read()
        by_keyword = self.client.detect(encoded=png, model="opencv_people_64x128")
        self.assertGreater(len(by_keyword), 0)
        self.assertEqual(by_keyword, self.client.detect(None, encoded=png))
        with self.assertRaises(ValueError):
            self.client.detect()
        with self.assertRaises(ValueError):
            self.client.detect(np.zeros((8, 8), np.uint8), encoded=png)

    def test_tls_with_a_token(self):
        material = TlsMaterial(clients=())
        tokens = material.write_tokens([f"alice {TOKEN} process,resident"])
        server = ServerProcess(SERVER, "--backend=cpu", *material.server_flags(tokens=tokens))
        try:
            image = np.arange(64, dtype=np.uint8).reshape(8, 8)
            token_file = material.write_tokens([TOKEN], name="alice.token")
            with cuimg.Client(server.target, ca_file=material.ca_cert, token_file=token_file) as c:
                np.testing.assert_array_equal(
                    c.morphology(image, "dilate:rect:3x3"),
                    ndimage.grey_dilation(image, size=(3, 3), mode="nearest"),
                )
            with cuimg.Client(server.target, ca_file=material.ca_cert) as c:
                with self.assertRaises(cuimg.CuimgError) as e:
                    c.morphology(image, "dilate:rect:3x3")
                self.assertEqual(e.exception.code, grpc.StatusCode.UNAUTHENTICATED)
            with self.assertRaises(ValueError):
                cuimg.Client(server.target, token=TOKEN)  # never in plaintext
        finally:
            self.assertEqual(server.terminate(), 0)
            material.close()

    def test_an_overloaded_server_is_retried_after_its_hint(self):
        server = ServerProcess(
            SERVER,
            "--backend=cpu",
            "--worker_threads=1",
            "--max_inflight_requests=1",
            "--cpu_threads_per_request=1",
        )
        slow_channel = grpc.insecure_channel(server.target)
        try:
            slow = imaging_service_pb2_grpc.ImagingStub(slow_channel).Morphology.future(
                morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(
                        image=types_pb2.Image(
                            pixel_type=types_pb2.PIXEL_TYPE_U8,
                            width=640,
                            height=640,
                            data=np.random.default_rng(5)
                            .integers(0, 256, 640 * 640, dtype=np.uint8)
                            .tobytes(),
                        )
                    ),
                    steps=cuimg.parse_steps("dilate:ellipse:61x61"),
                ),
                timeout=120,
            )
            time.sleep(0.2)
            # Larger than gRPC's default retry buffer (256 KiB), which the client raises.
            image = np.random.default_rng(6).integers(0, 256, (480, 640), dtype=np.uint8)
            for attempts, at_least in ((1, 0.0), (5, 0.4)):
                with cuimg.Client(server.target, max_attempts=attempts) as c:
                    began = time.monotonic()
                    with self.assertRaises(cuimg.RetryableError) as e:
                        c.morphology(image, "dilate:rect:3x3")
                    self.assertEqual(e.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
                    self.assertEqual(e.exception.reason, "OVERLOADED")
                    # Four retries, each after the server's 100 ms.
                    self.assertGreaterEqual(time.monotonic() - began, at_least)
            self.assertEqual(len(slow.result().result.image.data), 640 * 640)
            with cuimg.Client(server.target, max_attempts=5) as c:  # room again
                np.testing.assert_array_equal(
                    c.morphology(image, "dilate:rect:3x3"),
                    ndimage.grey_dilation(image, size=(3, 3), mode="nearest"),
                )
            with self.assertRaises(ValueError):
                cuimg.Client(server.target, max_attempts=6)
        finally:
            slow_channel.close()
            self.assertEqual(server.terminate(), 0, server.log())

    def test_one_slice_volumes_keep_their_leading_axis(self):
        # The wire calls a depth of 1 an image, so the server answers (H, W); issue 46's PACS
        # example then failed writing a one-slice series.
        c = self.client
        volume = np.random.default_rng(5).integers(0, 255, (1, 30, 40)).astype(np.uint8)
        out = c.morphology(volume, "dilate:rect:3x3")
        self.assertEqual(out.shape, (1, 30, 40))
        np.testing.assert_array_equal(
            out[0], ndimage.grey_dilation(volume[0], size=(3, 3), mode="nearest")
        )
        self.assertEqual(c.morphology(volume[0], "dilate:rect:3x3").shape, (30, 40))
        self.assertEqual(
            {k: v.shape for k, v in c.gradient(volume, magnitude=True).items()},
            {"gx": (1, 30, 40), "gy": (1, 30, 40), "magnitude": (1, 30, 40)},
        )
        self.assertEqual([level.shape[0] for level in c.pyramid(volume, levels=3)], [1, 1, 1])
        kept = c.morphology(volume, "erode:rect:3x3", keep_resident=True)
        self.assertEqual(kept.data.shape, (1, 30, 40))
        handle = c.upload(volume)
        try:
            self.assertEqual(c.download(handle).shape, (1, 30, 40))
            self.assertEqual(c.download(kept.handle).shape, (1, 30, 40))
            self.assertEqual(c.morphology(handle, "dilate:rect:3x3").shape, (1, 30, 40))
        finally:
            c.release(handle)
            c.release(kept.handle)

    def test_pacs_example_sends_a_series_and_writes_the_result(self):
        rng = np.random.default_rng(4)
        hu = rng.integers(-1024, 2000, (20, 24, 28)).astype(np.int16)
        with tempfile.TemporaryDirectory() as tmp:
            src, dst = os.path.join(tmp, "in"), os.path.join(tmp, "out")
            os.makedirs(src)
            series, study = generate_uid(), generate_uid()
            for z in range(hu.shape[0]):
                meta = FileMetaDataset()
                meta.MediaStorageSOPClassUID = pydicom.uid.CTImageStorage
                meta.MediaStorageSOPInstanceUID = generate_uid()
                meta.TransferSyntaxUID = ExplicitVRLittleEndian
                ds = FileDataset("x", {}, file_meta=meta, preamble=b"\0" * 128)
                ds.SOPClassUID, ds.SOPInstanceUID = (
                    meta.MediaStorageSOPClassUID,
                    meta.MediaStorageSOPInstanceUID,
                )
                ds.SeriesInstanceUID, ds.StudyInstanceUID, ds.Modality = series, study, "CT"
                ds.PatientName, ds.SeriesNumber = "Hidden^Person", 2
                ds.ImagePositionPatient = [0, 0, 100 - 2.5 * z]  # files in reverse position order
                ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
                ds.PixelSpacing = [0.9, 0.9]
                ds.Rows, ds.Columns = hu.shape[1:]
                ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
                ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 0
                ds.RescaleSlope, ds.RescaleIntercept = "1", "-1024"
                ds.PixelData = (hu[z].astype(np.int32) + 1024).astype("<u2").tobytes()
                ds.is_little_endian, ds.is_implicit_VR = True, False
                ds.save_as(os.path.join(src, f"{z:03d}.dcm"), write_like_original=False)
            run = subprocess.run(
                [
                    sys.executable,
                    EXAMPLE,
                    "--target",
                    self.server.target,
                    "--steps",
                    "dilate:rect:3x3x3",
                    src,
                    dst,
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("wrote 20 slices", run.stdout)
            self.assertNotIn("Hidden", run.stdout + run.stderr)
            out = sorted(
                (pydicom.dcmread(os.path.join(dst, f)) for f in os.listdir(dst)),
                key=lambda d: float(d.ImagePositionPatient[2]),
            )
            self.assertEqual(len({d.SeriesInstanceUID for d in out} - {series}), 1)
            volume = np.stack([d.pixel_array for d in out]).astype(np.int16)
            # Sorted by position, ascending z = the reverse of hu's index.
            np.testing.assert_array_equal(
                volume, ndimage.grey_dilation(hu[::-1], size=(3, 3, 3), mode="nearest")
            )
            self.assertTrue(
                all(d.StudyInstanceUID == study and d.SeriesNumber == 1002 for d in out)
            )
            # A series of one slice (issue 46: the example crashed writing it).
            one, one_out = os.path.join(tmp, "one"), os.path.join(tmp, "one_out")
            os.makedirs(one)
            os.link(os.path.join(src, "007.dcm"), os.path.join(one, "007.dcm"))
            run = subprocess.run(
                [
                    sys.executable,
                    EXAMPLE,
                    "--target",
                    self.server.target,
                    "--steps",
                    "dilate:rect:3x3x3",
                    one,
                    one_out,
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("wrote 1 slices", run.stdout)
            (written,) = [pydicom.dcmread(os.path.join(one_out, f)) for f in os.listdir(one_out)]
            np.testing.assert_array_equal(
                written.pixel_array.astype(np.int16),
                ndimage.grey_dilation(hu[7], size=(3, 3), mode="nearest"),
            )


if __name__ == "__main__":
    unittest.main(verbosity=2)
