"""Volume formats of the cuimg client over the wire (real cuimg-server, CPU backend in CI): .npy and
NRRD in and out, and DICOM series in and out, checked against SciPy's grey morphology and against
the server's own result for the same raw volume sent from Python grpcio. The DICOM series are made
here with pydicom (oblique, shuffled file names, 12-bit stored values with rescale), plus pydicom's
own CT and MR sample files; outputs are re-read with pydicom (new UIDs, geometry, tags) and
NumPy."""
import gzip
import os
import random
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import pydicom
from pydicom.data import get_testdata_file
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid
from scipy import ndimage

from cuimg.v1 import gradient_pb2, imaging_service_pb2_grpc, morphology_pb2, types_pb2
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
PIXEL_TYPES = {
    np.dtype(np.uint8): types_pb2.PIXEL_TYPE_U8,
    np.dtype(np.uint16): types_pb2.PIXEL_TYPE_U16,
    np.dtype(np.int16): types_pb2.PIXEL_TYPE_I16,
    np.dtype(np.float32): types_pb2.PIXEL_TYPE_F32,
}
DTYPES = {v: k for k, v in PIXEL_TYPES.items()}
PATIENT_NAME = "Secret^Patient"
PATIENT_ID = "MRN-77123"
NRRD_TYPES = {
    "uchar": np.uint8,
    "ushort": np.uint16,
    "short": np.int16,
    "float": np.float32,
    "unsigned char": np.uint8,
    "unsigned short": np.uint16,
}


def to_proto(array):
    return types_pb2.Image(
        pixel_type=PIXEL_TYPES[array.dtype],
        width=array.shape[-1],
        height=array.shape[-2],
        depth=array.shape[0] if array.ndim == 3 else 0,
        data=np.ascontiguousarray(array).tobytes(),
    )


def from_proto(image):
    shape = (
        (image.depth, image.height, image.width) if image.depth > 1 else (image.height, image.width)
    )
    return np.frombuffer(image.data, dtype=DTYPES[image.pixel_type]).reshape(shape)


def read_nrrd(path):
    """An independent reader for what cuimg writes: attached header, raw or gzip, little-endian."""
    with open(path, "rb") as f:
        blob = f.read()
    head, data = blob.split(b"\n\n", 1)
    lines = head.decode().split("\n")
    assert lines[0].startswith("NRRD000"), lines[0]
    fields = dict(line.split(": ", 1) for line in lines[1:] if line and not line.startswith("#"))
    sizes = [int(v) for v in fields["sizes"].split()]
    if fields["encoding"] == "gzip":
        data = gzip.decompress(data)
    else:
        assert fields["encoding"] == "raw", fields["encoding"]
    dtype = np.dtype(NRRD_TYPES[fields["type"]]).newbyteorder(
        "<" if fields.get("endian", "little") == "little" else ">"
    )
    array = np.frombuffer(data, dtype=dtype).reshape(sizes[::-1]).astype(dtype.newbyteorder("="))
    spacings = [float(v) for v in fields["spacings"].split()] if "spacings" in fields else None
    return array, spacings, fields


def write_nrrd(path, array, spacings):
    kind = {np.uint8: "uchar", np.uint16: "ushort", np.int16: "short", np.float32: "float"}[
        array.dtype.type
    ]
    header = (
        f"NRRD0004\ntype: {kind}\ndimension: {array.ndim}\n"
        f"sizes: {' '.join(str(s) for s in array.shape[::-1])}\n"
        f"spacings: {' '.join(str(s) for s in spacings)}\nendian: little\nencoding: gzip\n\n"
    )
    with open(path, "wb") as f:
        f.write(
            header.encode()
            + gzip.compress(
                np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
            )
        )


def write_ct_series(directory, hu, spacing_xy, gap, row_dir, col_dir, origin, seed):
    """One slice file per z of `hu`, stored as unsigned 12-bit with intercept -1024 (as scanners
    do), junk in the top 4 bits, file names shuffled. Returns the slices' positions in z order."""
    os.makedirs(directory)
    normal = np.cross(row_dir, col_dir)
    series_uid, study_uid, frame_uid = generate_uid(), generate_uid(), generate_uid()
    names = [f"IM{n:05d}" for n in random.Random(seed).sample(range(10000), hu.shape[0])]
    positions = []
    for z in range(hu.shape[0]):
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = pydicom.uid.CTImageStorage
        meta.MediaStorageSOPInstanceUID = generate_uid()
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds = FileDataset(names[z], {}, file_meta=meta, preamble=b"\0" * 128)
        ds.SOPClassUID = meta.MediaStorageSOPClassUID
        ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
        ds.StudyInstanceUID, ds.SeriesInstanceUID, ds.FrameOfReferenceUID = (
            study_uid,
            series_uid,
            frame_uid,
        )
        ds.PatientName, ds.PatientID, ds.Modality = PATIENT_NAME, PATIENT_ID, "CT"
        ds.SeriesNumber, ds.InstanceNumber, ds.SeriesDescription = 4, z + 1, "Abdomen 2mm"
        ds.ImageType = ["ORIGINAL", "PRIMARY", "AXIAL"]
        position = np.asarray(origin) + z * gap * normal
        positions.append(position)
        ds.ImagePositionPatient = [f"{v:.6f}" for v in position]
        ds.ImageOrientationPatient = [f"{v:.6f}" for v in list(row_dir) + list(col_dir)]
        ds.PixelSpacing = [f"{spacing_xy[1]:.6f}", f"{spacing_xy[0]:.6f}"]  # row, column spacing
        ds.Rows, ds.Columns = hu.shape[1], hu.shape[2]
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
        ds.RescaleSlope, ds.RescaleIntercept, ds.RescaleType = "1", "-1024", "HU"
        ds.WindowCenter, ds.WindowWidth = "40", "400"
        stored = (hu[z].astype(np.int32) + 1024).astype(np.uint16) | 0xA000
        ds.PixelData = stored.tobytes()
        ds.is_little_endian, ds.is_implicit_VR = True, False
        ds.save_as(os.path.join(directory, names[z]), write_like_original=False)
    return positions


def read_series(directory):
    """pydicom datasets of a directory, sorted along the slice normal, and their HU volume."""
    slices = [pydicom.dcmread(os.path.join(directory, f)) for f in sorted(os.listdir(directory))]
    iop = np.array(slices[0].ImageOrientationPatient, dtype=float)
    normal = np.cross(iop[:3], iop[3:])
    slices.sort(key=lambda d: float(np.dot(normal, np.array(d.ImagePositionPatient, dtype=float))))
    hu = np.stack(
        [
            d.pixel_array.astype(np.float64) * float(d.get("RescaleSlope", 1))
            + float(d.get("RescaleIntercept", 0))
            for d in slices
        ]
    )
    return slices, hu


class VolumesOverTheWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}")
        cls.channel = cls.server.channel()
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.tmp.cleanup()
        assert cls.server.terminate() == 0, cls.server.log()

    def path(self, *parts):
        return os.path.join(self.tmp.name, self.id().split(".")[-1], *parts)

    def cli(self, *args, expect=0):
        run = subprocess.run(
            [CLIENT, f"--target={self.server.target}", *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(run.returncode, expect, f"{args}: {run.stdout}{run.stderr}")
        return run

    def server_morphology(self, volume, op, w, h, d):
        step = morphology_pb2.MorphologyStep(
            op=op,
            element=morphology_pb2.StructuringElement(
                shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=w, height=h, depth=d
            ),
        )
        reply = self.stub.Morphology(
            morphology_pb2.MorphologyRequest(
                input=types_pb2.ImageSource(image=to_proto(volume)), steps=[step]
            ),
            timeout=120,
        )
        return from_proto(reply.result.image)

    def setUp(self):
        os.makedirs(self.path(), exist_ok=True)

    def test_npy_volumes_and_images_round_trip_through_morphology(self):
        rng = np.random.default_rng(3)
        cases = [
            (
                rng.integers(-2000, 3000, (6, 21, 17), dtype=np.int16),
                "dilate",
                "3x5x3",
                lambda a: ndimage.grey_dilation(a, size=(3, 5, 3), mode="nearest"),
            ),
            (
                rng.integers(0, 256, (33, 29), dtype=np.uint8),
                "erode",
                "5x3",
                lambda a: ndimage.grey_erosion(a, size=(3, 5), mode="nearest"),
            ),
            (
                rng.integers(0, 65536, (4, 9, 11), dtype=np.uint16),
                "erode",
                "3x3",
                lambda a: np.stack(
                    [ndimage.grey_erosion(s, size=(3, 3), mode="nearest") for s in a]
                ),
            ),
            (
                rng.normal(size=(5, 12, 10)).astype(np.float32),
                "dilate",
                "3x3x3",
                lambda a: ndimage.grey_dilation(a, size=(3, 3, 3), mode="nearest"),
            ),
        ]
        for i, (volume, op, size, reference) in enumerate(cases):
            src, dst = self.path(f"in{i}.npy"), self.path(f"out{i}.npy")
            np.save(src, volume)
            self.cli(
                "morphology", f"--input={src}", f"--output={dst}", f"--op={op}", f"--size={size}"
            )
            out = np.load(dst)
            self.assertEqual(out.dtype, volume.dtype)
            self.assertEqual(out.shape, volume.shape)
            np.testing.assert_array_equal(out, reference(volume), err_msg=f"case {i}")

    def test_npy_refusals_are_bad_data(self):
        # An input cuimg cannot read is bad data (exit 3), not a usage error (2).
        src = self.path("f.npy")
        np.save(src, np.asfortranarray(np.zeros((4, 5), np.uint8)))
        run = self.cli("morphology", f"--input={src}", f"--output={self.path('o.npy')}", expect=3)
        self.assertIn("Fortran", run.stderr)
        np.save(src, np.zeros((4, 5), np.float64))
        run = self.cli("morphology", f"--input={src}", f"--output={self.path('o.npy')}", expect=3)
        self.assertIn("<f8", run.stderr)

    def test_nrrd_out_raw_and_gzip_and_in_with_spacing(self):
        rng = np.random.default_rng(4)
        volume = rng.integers(0, 4000, (7, 19, 23), dtype=np.uint16)
        expected = ndimage.grey_dilation(volume, size=(3, 3, 3), mode="nearest")
        src = self.path("in.nrrd")
        write_nrrd(src, volume, [0.8, 0.9, 2.5])
        for flags, name in [([], "raw.nrrd"), (["--nrrd_gzip"], "gz.nrrd")]:
            dst = self.path(name)
            self.cli("morphology", f"--input={src}", f"--output={dst}", "--size=3x3x3", *flags)
            out, spacings, fields = read_nrrd(dst)
            self.assertEqual(fields["encoding"], "gzip" if flags else "raw")
            self.assertEqual(out.dtype, np.uint16)
            np.testing.assert_array_equal(out, expected)
            np.testing.assert_allclose(spacings, [0.8, 0.9, 2.5])
        # NRRD in, NumPy out: the same pixels.
        self.cli(
            "morphology",
            f"--input={self.path('gz.nrrd')}",
            f"--output={self.path('back.npy')}",
            "--op=erode",
            "--size=1x1x1",
        )
        np.testing.assert_array_equal(np.load(self.path("back.npy")), expected)

    def test_gradient_writes_volumes_as_npy_and_nrrd(self):
        rng = np.random.default_rng(5)
        volume = rng.normal(size=(3, 24, 31)).astype(np.float32)
        reply = self.stub.Gradient(
            gradient_pb2.GradientRequest(
                input=types_pb2.ImageSource(image=to_proto(volume)), magnitude=True
            ),
            timeout=60,
        )
        src = self.path("v.npy")
        np.save(src, volume)
        self.cli("gradient", f"--input={src}", f"--output_prefix={self.path('g')}", "--format=npy")
        np.testing.assert_array_equal(np.load(self.path("g_gx.npy")), from_proto(reply.gx.image))
        np.testing.assert_array_equal(np.load(self.path("g_gy.npy")), from_proto(reply.gy.image))
        np.testing.assert_array_equal(
            np.load(self.path("g_magnitude.npy")), from_proto(reply.magnitude.image)
        )
        self.cli("gradient", f"--input={src}", f"--output_prefix={self.path('n')}", "--format=nrrd")
        gx, _, fields = read_nrrd(self.path("n_gx.nrrd"))
        self.assertEqual(fields["type"], "float")
        np.testing.assert_array_equal(gx, from_proto(reply.gx.image))

    def test_dicom_series_morphology_writes_a_new_series(self):
        rng = np.random.default_rng(6)
        hu = rng.integers(-1024, 3000, (24, 32, 40)).astype(np.int16)
        # Oblique: the slice normal is (0, 0.5, 0.866), so positions sort by neither x, y nor z
        # alone.
        row, col = np.array([1.0, 0, 0]), np.array([0, np.cos(np.pi / 6), -np.sin(np.pi / 6)])
        src, dst = self.path("ct"), self.path("ct_dilated")
        positions = write_ct_series(
            src, hu, (0.7, 0.8), 2.0, row, col, (-100.0, -80.0, 40.0), seed=6
        )

        run = self.cli(
            "morphology", f"--input={src}", f"--output={dst}", "--steps=dilate:rect:3x3x3", "--json"
        )

        for secret in (PATIENT_NAME, "Secret", PATIENT_ID):
            self.assertNotIn(secret, run.stdout + run.stderr)
        self.assertIn('"depth": 24', run.stdout)
        self.assertIn('"pixel_type": "i16"', run.stdout)
        source, _ = read_series(src)
        out, out_hu = read_series(dst)
        self.assertEqual(len(out), 24)
        expected = ndimage.grey_dilation(hu, size=(3, 3, 3), mode="nearest")
        np.testing.assert_array_equal(out_hu, expected)
        np.testing.assert_array_equal(
            out_hu, self.server_morphology(hu, morphology_pb2.MORPHOLOGY_OP_DILATE, 3, 3, 3)
        )
        new_series = {d.SeriesInstanceUID for d in out}
        self.assertEqual(len(new_series), 1)
        self.assertNotEqual(new_series.pop(), source[0].SeriesInstanceUID)
        sops = {d.SOPInstanceUID for d in out} | {d.SOPInstanceUID for d in source}
        self.assertEqual(len(sops), 48)
        for d, s, p in zip(out, source, positions):
            self.assertEqual(d.file_meta.MediaStorageSOPInstanceUID, d.SOPInstanceUID)
            self.assertEqual(d.StudyInstanceUID, s.StudyInstanceUID)
            self.assertEqual(d.FrameOfReferenceUID, s.FrameOfReferenceUID)
            self.assertEqual(str(d.PatientName), PATIENT_NAME)
            np.testing.assert_allclose(np.array(d.ImagePositionPatient, float), p, atol=1e-5)
            self.assertEqual(list(d.ImageOrientationPatient), list(s.ImageOrientationPatient))
            self.assertEqual(list(d.PixelSpacing), list(s.PixelSpacing))
            self.assertEqual((d.Rows, d.Columns), (32, 40))
            self.assertEqual((float(d.RescaleSlope), float(d.RescaleIntercept)), (1.0, 0.0))
            self.assertEqual(d.PixelRepresentation, 1)
            self.assertEqual(list(d.ImageType)[:2], ["DERIVED", "SECONDARY"])
            self.assertEqual(d.SeriesNumber, 1004)
            self.assertEqual(d.file_meta.TransferSyntaxUID, ExplicitVRLittleEndian)
        # A second run into the same directory would mix two series: refused.
        self.cli("morphology", f"--input={src}", f"--output={dst}", "--size=3x3x3", expect=2)

    def test_dicom_series_gradient_and_refusals(self):
        rng = np.random.default_rng(7)
        hu = rng.integers(-500, 500, (3, 16, 18)).astype(np.int16)
        src = self.path("ct")
        write_ct_series(
            src,
            hu,
            (0.5, 0.5),
            1.5,
            np.array([1.0, 0, 0]),
            np.array([0, 1.0, 0]),
            (0, 0, 0),
            seed=7,
        )
        self.cli("gradient", f"--input={src}", f"--output_prefix={self.path('g')}", "--format=nrrd")
        gx, _, fields = read_nrrd(self.path("g_gx.nrrd"))
        reply = self.stub.Gradient(
            gradient_pb2.GradientRequest(
                input=types_pb2.ImageSource(image=to_proto(hu)), magnitude=True
            ),
            timeout=60,
        )
        np.testing.assert_array_equal(gx, from_proto(reply.gx.image))
        # The series' placement is kept: space directions, each axis scaled by its spacing.
        directions = [
            [float(v) for v in d.strip("()").split(",")] for d in fields["space directions"].split()
        ]
        np.testing.assert_allclose(directions, np.diag([0.5, 0.5, 1.5]), atol=1e-6)
        # DICOM output needs DICOM input; a mixed directory is refused with the reason.
        np.save(self.path("v.npy"), hu)
        run = self.cli(
            "morphology", f"--input={self.path('v.npy')}", f"--output={self.path('d')}/", expect=2
        )
        self.assertIn("DICOM series is written only from a DICOM series", run.stderr)
        other = self.path("other")
        write_ct_series(
            other,
            hu[:1],
            (0.5, 0.5),
            1.5,
            np.array([1.0, 0, 0]),
            np.array([0, 1.0, 0]),
            (0, 0, 9),
            seed=8,
        )
        shutil.copy(os.path.join(other, os.listdir(other)[0]), os.path.join(src, "ZZ_other"))
        run = self.cli("morphology", f"--input={src}", f"--output={self.path('m')}", expect=2)
        self.assertIn("more than one series", run.stderr)

    def test_pydicom_sample_files_round_trip(self):
        for name in ("CT_small.dcm", "MR_small.dcm"):
            stem = name.split(".")[0]
            src, dst = self.path(stem + "_in"), self.path(stem + "_out")
            os.makedirs(src)
            shutil.copy(get_testdata_file(name), src)
            self.cli("morphology", f"--input={src}", f"--output={dst}", "--op=erode", "--size=3x3")
            (source,), hu = read_series(src)
            (out,), out_hu = read_series(dst)
            np.testing.assert_array_equal(
                out_hu[0], ndimage.grey_erosion(hu[0], size=(3, 3), mode="nearest")
            )
            self.assertNotEqual(out.SeriesInstanceUID, source.SeriesInstanceUID)
            self.assertNotEqual(out.SOPInstanceUID, source.SOPInstanceUID)
            self.assertEqual(out.StudyInstanceUID, source.StudyInstanceUID)
            self.assertEqual(list(out.ImagePositionPatient), list(source.ImagePositionPatient))
            self.assertEqual(out.PatientName, source.PatientName)


if __name__ == "__main__":
    unittest.main(verbosity=2)
