"""Structuring elements in millimetres over the wire (real cuimg-server, CPU backend unless
CUIMG_BACKEND says otherwise): the CLI on an NRRD volume and a DICOM series with anisotropic
spacing, and the Python client on arrays, resident objects and streamed volumes. Each mm element
must give exactly the pixels of the voxel element the rounding rule names (morphology.proto:
k = round-half-up(radius / spacing), extent 2k + 1), and the server must report that element."""
import json
import os
import subprocess
import tempfile
import unittest

import grpc
import numpy as np

import cuimg
from cuimg.v1 import morphology_pb2
from server_process import ServerProcess
from test_volumes_wire import read_nrrd, write_ct_series, write_nrrd

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
CT_SPACING = (0.7, 0.7, 2.5)  # x, y, z in mm


def extents(elements):
    return [(e.shape, e.width, e.height, e.depth) for e in elements]


class MillimetreElementsOverTheWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}")
        cls.tmp = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(7)
        cls.volume = rng.integers(-1000, 2000, (12, 40, 48)).astype(np.int16)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        assert cls.server.terminate() == 0, cls.server.log()

    def path(self, *parts):
        directory = os.path.join(self.tmp.name, self.id().split(".")[-1])
        os.makedirs(directory, exist_ok=True)
        return os.path.join(directory, *parts)

    def cli(self, *args, expect=0):
        run = subprocess.run(
            [CLIENT, f"--target={self.server.target}", *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(run.returncode, expect, f"{args}: {run.stdout}{run.stderr}")
        return run

    def test_cli_nrrd_mm_element_equals_its_voxel_element(self):
        src = self.path("ct.nrrd")
        write_nrrd(src, self.volume, CT_SPACING)
        mm, voxels = self.path("mm.nrrd"), self.path("voxels.nrrd")
        # 5 mm: 7.14 voxels -> 7 either side in x and y, 2 in z.
        run = self.cli(
            "morphology", f"--input={src}", f"--output={mm}", "--steps=dilate:ellipse:5mm"
        )
        self.assertIn("elements in voxels: ellipse 15x15x5", run.stdout)
        self.cli(
            "morphology", f"--input={src}", f"--output={voxels}", "--steps=dilate:ellipse:15x15x5"
        )
        got, spacing, _ = read_nrrd(mm)
        want, _, _ = read_nrrd(voxels)
        np.testing.assert_array_equal(got, want)
        self.assertFalse(np.array_equal(got, self.volume))  # the element did something
        self.assertEqual(spacing, list(CT_SPACING))
        # Per-axis radii, a chain mixing voxel and mm steps, and JSON for machines.
        run = self.cli(
            "morphology",
            f"--input={src}",
            f"--output={mm}",
            "--json",
            "--steps=erode:rect:3x1,close:ball:2x2x5mm",
        )
        self.assertEqual(json.loads(run.stdout)["resolved_elements"], ["rect 3x1", "ellipse 7x7x5"])
        self.cli(
            "morphology",
            f"--input={src}",
            f"--output={voxels}",
            "--steps=erode:rect:3x1,close:ball:7x7x5",
        )
        np.testing.assert_array_equal(read_nrrd(mm)[0], read_nrrd(voxels)[0])

    def test_cli_dicom_series_with_anisotropic_pixels(self):
        src = self.path("series")
        hu = self.volume[:6]
        # Columns 0.7 mm apart, rows 0.6 mm, slices 2.5 mm.
        write_ct_series(
            src,
            hu,
            (0.7, 0.6),
            2.5,
            np.array([1.0, 0, 0]),
            np.array([0, 1.0, 0]),
            (-100.0, -80.0, 30.0),
            seed=3,
        )
        mm, voxels = self.path("mm.nrrd"), self.path("voxels.nrrd")
        # 3 mm: x 4.29 -> 4, y 5 -> 5, z 1.2 -> 1.
        run = self.cli("morphology", f"--input={src}", f"--output={mm}", "--steps=erode:cross:3mm")
        self.assertIn("elements in voxels: cross 9x11x3", run.stdout)
        self.cli("morphology", f"--input={src}", f"--output={voxels}", "--steps=erode:cross:9x11x3")
        np.testing.assert_array_equal(read_nrrd(mm)[0], read_nrrd(voxels)[0])
        # Streamed in slabs: the same pixels, and the elements reported from the stream.
        streamed = self.path("streamed.nrrd")
        run = self.cli(
            "morphology",
            f"--input={src}",
            f"--output={streamed}",
            "--slab_slices=2",
            "--volume_streams=3",
            "--steps=erode:cross:3mm",
        )
        self.assertIn("elements in voxels: cross 9x11x3", run.stdout)
        np.testing.assert_array_equal(read_nrrd(streamed)[0], read_nrrd(voxels)[0])

    def test_cli_refusals_name_the_field(self):
        src = self.path("no_spacing.npy")  # .npy carries no spacing
        np.save(src, self.volume)
        run = self.cli(
            "morphology",
            f"--input={src}",
            f"--output={self.path('o.nrrd')}",
            "--steps=dilate:ellipse:5mm",
            expect=1,
        )
        self.assertIn("INVALID_ARGUMENT", run.stderr)
        self.assertIn("input.image.spacing.x_mm: is 0", run.stderr)
        self.assertIn("steps[0].element.radius.x_mm", run.stderr)
        run = self.cli(
            "morphology",
            f"--input={src}",
            f"--output={self.path('o.nrrd')}",
            "--steps=dilate:ellipse:5x5x-1mm",
            expect=2,
        )
        self.assertIn("non-negative", run.stderr)

    def test_python_client_arrays_residents_and_streams(self):
        steps_mm = "dilate:ball:5mm,erode:rect:1x1x1mm"
        steps_voxels = "dilate:ellipse:15x15x5,erode:rect:3x3x1"
        with cuimg.Client(self.server.target) as c:
            want = c.morphology(self.volume, steps_voxels, stream=False)
            self.assertEqual(c.last_elements, [])
            got = c.morphology(self.volume, steps_mm, spacing=CT_SPACING, stream=False)
            np.testing.assert_array_equal(got, want)
            expected = [
                (morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 15, 15, 5),
                (morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3, 1),
            ]
            self.assertEqual(extents(c.last_elements), expected)
            # The element API, and a volume streamed over several connections (it takes one).
            steps = [
                morphology_pb2.MorphologyStep(
                    op=morphology_pb2.MORPHOLOGY_OP_DILATE, element=cuimg.element_mm("ellipse", 5)
                ),
                morphology_pb2.MorphologyStep(
                    op=morphology_pb2.MORPHOLOGY_OP_ERODE, element=cuimg.element_mm("rect", 1)
                ),
            ]
            got = c.morphology(self.volume, steps, spacing=CT_SPACING, stream=True)
            np.testing.assert_array_equal(got, want)
            self.assertEqual(extents(c.last_elements), expected)
            self.assertEqual(len(c.last_stream.timings), 1)
            # A resident volume resolves against the spacing it was uploaded with.
            handle = c.upload(self.volume, spacing=CT_SPACING)
            np.testing.assert_array_equal(c.morphology(handle, steps_mm), want)
            self.assertEqual(extents(c.last_elements), expected)
            bare = c.upload(self.volume)
            with self.assertRaises(cuimg.CuimgError) as e:
                c.morphology(bare, steps_mm)
            self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            # The object's spacing is no field of the request: the radius that needs it is.
            self.assertIsInstance(e.exception, cuimg.InvalidRequestError)
            self.assertEqual(
                (e.exception.reason, e.exception.field),
                ("INVALID_COMBINATION", "steps[0].element.radius.x_mm"),
            )
            self.assertIn("input.handle's spacing.x_mm, which is 0", e.exception.details)
            # On a 2D image the ball's section: a disk of the same radius (z not used).
            image = self.volume[0]
            disk = c.morphology(image, "dilate:ellipse:5mm", spacing=(0.7, 0.7, 0))
            self.assertEqual(
                extents(c.last_elements), [(morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 15, 15, 0)]
            )
            np.testing.assert_array_equal(disk, c.morphology(image, "dilate:ellipse:15x15"))
            # Refusals name the field.
            with self.assertRaises(cuimg.CuimgError) as e:
                c.morphology(self.volume, steps_mm, stream=False)
            self.assertIn("input.image.spacing.x_mm: is 0", e.exception.details)
            with self.assertRaises(cuimg.CuimgError) as e:
                c.morphology(
                    self.volume, "dilate:ellipse:1x1x5000mm", spacing=CT_SPACING, stream=False
                )
            self.assertEqual(e.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("steps[0].element.radius.z_mm", e.exception.details)
            self.assertIn("max_element_extent", e.exception.details)
        with self.assertRaises(ValueError):
            cuimg.parse_steps("dilate:ellipse:5xmm")


if __name__ == "__main__":
    unittest.main()
