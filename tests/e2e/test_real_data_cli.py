"""Issue 46 through the cuimg CLI against a real cuimg-server: NaN carried (nibabel's own
resampled_anat_moved.nii, and NaN masks at the border through .npy), placement kept by gradient
(nibabel's anatomical.nii, read back with nibabel and as NRRD headers), one exit-code policy (0 ok,
1 RPC error, 2 usage, 3 bad input data; --keep_going for frame folders), one-file and 2D DICOM
inputs, outputs that are whole or absent when a write fails midway, and `cuimg load` stopped by
SIGINT or SIGTERM still writing its summary and reports. Real files come from the installed
Debian packages (python3-nibabel's tests/data, opencv-doc's samples), never from the repository."""
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import nibabel as nib
import numpy as np
import pydicom
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, SecondaryCaptureImageStorage, generate_uid

from server_process import ServerProcess
from test_volumes_wire import read_nrrd, write_ct_series

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
NIBABEL_DATA = os.path.join(os.path.dirname(nib.__file__), "tests", "data")
OPENCV_DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
IDENTITY = "--steps=dilate:rect:1x1x1"
LPS = np.diag([-1.0, -1.0, 1.0])  # NIfTI's RAS to DICOM's and NRRD's LPS


def file_size_limit(limit):
    """For Popen's preexec_fn: writes past `limit` bytes fail with EFBIG (a full disk, in effect)
    instead of killing the process."""

    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def nan_window_max(a, height, width):
    """Dilation by a centred height x width box as the documented rule: the max of the window's
    numbers inside the image, NaN when there is none."""
    padded = np.pad(a, ((height // 2,) * 2, (width // 2,) * 2), constant_values=np.nan)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (height, width))
    return np.fmax.reduce(np.fmax.reduce(windows, axis=-1), axis=-1)


class RealDataCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}")
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        assert cls.server.terminate() == 0, cls.server.log()

    def path(self, *parts):
        folder = os.path.join(self.tmp.name, self.id().split(".")[-1])
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, *parts)

    def cli(self, *args, expect=0, **kwargs):
        run = subprocess.run(
            [CLIENT, *args, f"--target={self.server.target}"],
            capture_output=True,
            text=True,
            timeout=300,
            **kwargs,
        )
        self.assertEqual(run.returncode, expect, f"{args}: {run.stdout}{run.stderr}")
        return run

    def test_nifti_nan_in_is_nan_out(self):
        src = os.path.join(NIBABEL_DATA, "resampled_anat_moved.nii")
        data = np.asarray(nib.load(src).dataobj)
        self.assertGreater(np.isnan(data).sum(), 0, "the file should hold NaN")
        out = self.path("out.nii")
        self.cli("morphology", f"--input={src}", f"--output={out}", IDENTITY)
        got = np.asarray(nib.load(out).dataobj)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(data))
        np.testing.assert_array_equal(got[~np.isnan(got)], data[~np.isnan(data)])

    def test_nan_masks_at_the_border_stay_nan(self):
        a = np.random.default_rng(3).uniform(-5, 5, (20, 30)).astype(np.float32)
        a[:, :4] = np.nan  # along the left border
        a[:3, 10:13] = np.nan  # on the top border
        a[9:12, 15:18] = np.nan  # inside, wider than the window
        src, out = self.path("in.npy"), self.path("out.npy")
        np.save(src, a)
        self.cli("morphology", f"--input={src}", f"--output={out}", "--steps=dilate:rect:3x3")
        got = np.load(out)
        self.assertFalse(np.isinf(got).any(), "an all-NaN window became an infinity")
        np.testing.assert_array_equal(got, nan_window_max(a, 3, 3))
        self.assertTrue(np.isnan(got[:, :3]).all())
        self.assertTrue(np.isnan(got[10, 16]))

    def test_gradient_keeps_nifti_and_nrrd_placement(self):
        src = os.path.join(NIBABEL_DATA, "anatomical.nii")
        source = nib.load(src)
        prefix = self.path("g")
        self.cli("gradient", f"--input={src}", f"--output_prefix={prefix}", "--format=nii")
        for part in ("gx", "gy", "magnitude"):
            with self.subTest(part=part):
                result = nib.load(f"{prefix}_{part}.nii")
                self.assertEqual(result.shape, source.shape)
                for get in ("get_qform", "get_sform"):
                    want, want_code = getattr(source.header, get)(coded=True)
                    got, got_code = getattr(result.header, get)(coded=True)
                    self.assertEqual(int(got_code), int(want_code))
                    np.testing.assert_allclose(got, want, atol=1e-5)
                np.testing.assert_allclose(result.affine, source.affine, atol=1e-5)
                self.assertEqual(result.header.get_xyzt_units(), source.header.get_xyzt_units())
                np.testing.assert_allclose(result.header.get_zooms(), source.header.get_zooms())
        self.cli("gradient", f"--input={src}", f"--output_prefix={prefix}", "--format=nrrd")
        _, _, fields = read_nrrd(f"{prefix}_gx.nrrd")
        self.assertEqual(fields["space"], "left-posterior-superior")
        directions = np.array(
            [
                [float(v) for v in d.strip("()").split(",")]
                for d in fields["space directions"].split()
            ]
        )
        affine = source.affine  # the sform (code 2), as cuimg reads it
        zooms = source.header.get_zooms()
        for axis in range(3):
            column = affine[:3, axis]
            np.testing.assert_allclose(
                directions[axis], LPS @ column / np.linalg.norm(column) * zooms[axis], atol=1e-4
            )
        origin = [float(v) for v in fields["space origin"].strip("()").split(",")]
        np.testing.assert_allclose(origin, LPS @ affine[:3, 3], atol=1e-4)

    def test_usage_and_bad_data_exit_codes(self):
        run = self.cli("morphology", "--no_such_flag=1", expect=2)
        self.assertIn("unknown flag --no_such_flag", run.stderr)
        run = self.cli("morphology", "--iterations=many", expect=2)
        self.assertIn("--iterations=many", run.stderr)
        self.cli("detect", "--every", expect=2)  # no value
        self.cli("detect", "--nokeep_going", f"--input={self.path('missing.png')}", expect=2)
        bad = self.path("broken.png")
        with open(bad, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
        for command in (
            ["detect", f"--input={bad}"],
            ["morphology", f"--input={bad}", f"--output={self.path('o.png')}"],
            ["gradient", f"--input={bad}", f"--output_prefix={self.path('g')}"],
            ["pyramid", f"--input={bad}", f"--output_prefix={self.path('p')}"],
        ):
            with self.subTest(command=command[0]):
                run = self.cli(*command, expect=3)
                self.assertIn("broken.png", run.stderr)
                self.assertNotIn("usage:", run.stderr)
        self.assertEqual(sorted(os.listdir(self.path())), ["broken.png"])
        self.assertIn("alpha", self.cli("morphology", "--help").stdout)

    def test_a_frame_folder_stops_at_a_bad_file_or_keeps_going(self):
        frames = self.path("frames")
        os.makedirs(frames)
        shutil.copy(os.path.join(OPENCV_DATA, "pic1.png"), os.path.join(frames, "a.png"))
        with open(os.path.join(frames, "b.png"), "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\nnot a png")
        shutil.copy(os.path.join(OPENCV_DATA, "pic3.png"), os.path.join(frames, "c.png"))
        stopped, kept = self.path("stopped"), self.path("kept")
        run = self.cli("detect", f"--input={frames}", f"--output={stopped}", expect=3)
        self.assertIn("b.png", run.stderr)
        self.assertFalse(os.path.exists(stopped), "a failed run left its output folder")
        run = self.cli("detect", f"--input={frames}", f"--output={kept}", "--keep_going", expect=3)
        self.assertIn("b.png", run.stderr)
        self.assertEqual(
            sorted(os.listdir(kept)), ["a_boxes.png", "c_boxes.png", "detections.json"]
        )
        with open(os.path.join(kept, "detections.json")) as f:
            run_json = json.load(f)
        self.assertEqual(
            [frame["source"] for frame in run_json["frames"]],
            [os.path.join(frames, "a.png"), os.path.join(frames, "c.png")],
        )
        self.assertEqual(
            [s["source"] for s in run_json["skipped"]], [os.path.join(frames, "b.png")]
        )

    def secondary_capture(self, path, pixels):
        """A 2D secondary capture: no PixelSpacing, ImageOrientationPatient or position."""
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = SecondaryCaptureImageStorage
        meta.MediaStorageSOPInstanceUID = generate_uid()
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds = FileDataset(path, {}, file_meta=meta, preamble=b"\0" * 128)
        ds.SOPClassUID, ds.SOPInstanceUID = (
            SecondaryCaptureImageStorage,
            meta.MediaStorageSOPInstanceUID,
        )
        ds.StudyInstanceUID, ds.SeriesInstanceUID = generate_uid(), generate_uid()
        ds.Modality, ds.ConversionType = "OT", "WSD"
        ds.Rows, ds.Columns = pixels.shape
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
        ds.PixelData = pixels.astype("<u2").tobytes()
        ds.is_little_endian, ds.is_implicit_VR = True, False
        ds.save_as(path, write_like_original=False)

    def test_one_dcm_file_without_spacing_or_placement_reads(self):
        pixels = np.random.default_rng(5).integers(0, 4096, (24, 31)).astype(np.uint16)
        src = self.path("capture.dcm")
        self.secondary_capture(src, pixels)
        out = self.path("out.npy")
        self.cli("morphology", f"--input={src}", f"--output={out}", "--steps=dilate:rect:3x3")
        padded = np.pad(pixels.astype(np.int16), 1, constant_values=np.iinfo(np.int16).min)
        want = np.lib.stride_tricks.sliding_window_view(padded, (3, 3)).max(axis=(-1, -2))
        np.testing.assert_array_equal(np.load(out), want)
        series = self.path("derived")
        self.cli("morphology", f"--input={src}", f"--output={series}", IDENTITY)
        (written,) = [pydicom.dcmread(os.path.join(series, n)) for n in os.listdir(series)]
        np.testing.assert_array_equal(written.pixel_array, pixels)
        self.assertNotIn("PixelSpacing", written)
        # An element in millimetres needs the spacing the file does not give: the server says so.
        run = self.cli(
            "morphology",
            f"--input={src}",
            f"--output={self.path('mm.npy')}",
            "--steps=dilate:ellipse:2mm",
            expect=1,
        )
        self.assertIn("spacing.x_mm", run.stderr)

    def test_a_write_failing_midway_leaves_nothing(self):
        src = self.path("in", "v.npy")
        os.makedirs(os.path.dirname(src))
        np.save(src, np.random.default_rng(1).uniform(0, 1, (64, 128, 128)).astype(np.float32))
        hu = np.random.default_rng(2).integers(-1000, 2000, (3, 64, 64)).astype(np.int16)
        ct = self.path("in", "ct")
        write_ct_series(
            ct,
            hu,
            (0.7, 0.7),
            2.0,
            np.array([1.0, 0, 0]),
            np.array([0, 1.0, 0]),
            (0.0, 0.0, 0.0),
            seed=2,
        )
        out = self.path("out")
        os.makedirs(out)
        for source, target in (
            (src, "v.npy"),
            (src, "v.nii.gz"),
            (src, "v.nrrd"),
            (src, "v.tif"),
            (ct, "series"),
        ):
            with self.subTest(target=target):
                run = self.cli(
                    "morphology",
                    f"--input={source}",
                    f"--output={os.path.join(out, target)}",
                    IDENTITY,
                    expect=2,
                    preexec_fn=file_size_limit(4096),
                )
                self.assertIn(os.path.join(out, target), run.stderr)
                self.assertEqual(os.listdir(out), [], "a partial output or temporary file was left")
        # Unlimited, the same commands write whole files (a rerun is not refused).
        self.cli("morphology", f"--input={ct}", f"--output={os.path.join(out, 'series')}", IDENTITY)
        self.assertEqual(len(os.listdir(os.path.join(out, "series"))), 3)

    def test_python_writers_leave_nothing_when_they_fail(self):
        from cuimg import dicom as cuimg_dicom
        from cuimg import nifti as cuimg_nifti

        hu = np.random.default_rng(4).integers(-1000, 2000, (3, 16, 16)).astype(np.int16)
        src = self.path("ct")
        write_ct_series(
            src,
            hu,
            (0.7, 0.7),
            2.0,
            np.array([1.0, 0, 0]),
            np.array([0, 1.0, 0]),
            (0.0, 0.0, 0.0),
            seed=4,
        )
        _, _, datasets = cuimg_dicom.read_series(src)
        volume = hu.astype(np.float32)
        volume[1, 3, 3] = np.nan  # refused when slice 1 is written, after slice 0
        out = self.path("out")
        with self.assertRaises(ValueError):
            cuimg_dicom.write_series(datasets, volume, out)
        self.assertEqual(sorted(os.listdir(self.path())), ["ct"])
        cuimg_dicom.write_series(datasets, hu, out)  # the rerun is not refused
        self.assertEqual(len(os.listdir(out)), 3)
        with self.assertRaises(ValueError):
            cuimg_nifti.write_nifti(self.path("v.nii"), volume.astype(np.float64))
        real_save = nib.save

        def save_half(image, path):
            with open(path, "wb") as f:
                f.write(b"half a header")
            raise OSError("disk full")

        nib.save = save_half
        try:
            with self.assertRaises(OSError):
                cuimg_nifti.write_nifti(self.path("v.nii"), volume)
        finally:
            nib.save = real_save
        self.assertEqual(sorted(os.listdir(self.path())), ["ct", "out"])

    def load(self, *args):
        return subprocess.Popen(
            [
                CLIENT,
                "load",
                f"--target={self.server.target}",
                "--server_metrics=none",
                "--image_size=64x48",
                "--duration=120",
                "--warmup=0.5",
                *args,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def test_load_stopped_by_a_signal_writes_every_report(self):
        for sig, loop in ((signal.SIGINT, ["--concurrency=2"]), (signal.SIGTERM, ["--rate=30"])):
            with self.subTest(signal=sig.name):

                def out(name, prefix=sig.name):
                    return self.path(f"{prefix}_{name}")

                proc = self.load(
                    *loop,
                    f"--json_out={out('s.json')}",
                    f"--csv={out('r.csv')}",
                    f"--report={out('r.html')}",
                )
                time.sleep(3)
                proc.send_signal(sig)
                stdout, stderr = proc.communicate(timeout=120)
                self.assertEqual(proc.returncode, 0, stderr)
                self.assertIn(f"stopped by {sig.name}", stderr)
                with open(out("s.json")) as f:
                    summary = json.load(f)
                self.assertEqual(summary["config"]["stopped_by"], sig.name)
                self.assertLess(summary["config"]["stopped_at_s"], 120)
                self.assertGreater(summary["requests"], 0)
                with open(out("r.csv")) as f:
                    rows = f.read().splitlines()[1:]
                self.assertGreaterEqual(len(rows), summary["requests"])
                self.assertIn("report: " + out("r.html"), stdout)
                self.assertGreater(os.path.getsize(out("r.html")), 0)
                # The progress line counts the calls in flight: never above --concurrency.
                if "--concurrency=2" in loop:
                    counts = [int(n) for n in re.findall(r"in flight (\d+)", stderr)]
                    self.assertTrue(counts and max(counts) <= 2, stderr)


if __name__ == "__main__":
    unittest.main()
