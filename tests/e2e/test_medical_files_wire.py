"""Compressed DICOM, fractional rescale and NIfTI through the cuimg CLI and the Python client
(real cuimg-server). Series are made here with pydicom and compressed by the real tools (DCMTK's
dcmcjpeg/dcmcjpls/dcmcrle/dcmconv, gdcmconv --j2k); the CLI (identity morphology, so its output is
what it read) and cuimg.dicom must read the same values, and cuimg.dicom must equal the
independent decoders (dcmdjpeg/dcmdjpls/dcmdrle/dcmconv, opj_decompress on the JPEG 2000
codestream). NIfTI outputs are read back with nibabel: qform, sform and voxel sizes as nibabel reads
them from the input."""
import os
import struct
import subprocess
import tempfile
import unittest

import nibabel as nib
import numpy as np
import pydicom
from pydicom.encaps import generate_pixel_data_frame
from scipy import ndimage

from cuimg import dicom as cuimg_dicom
from cuimg import nifti as cuimg_nifti
from server_process import ServerProcess
from test_volumes_wire import read_nrrd, write_ct_series

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
IDENTITY = "--steps=dilate:rect:1x1x1"
# name: (compressor, independent decompressor or "opj")
CODECS = {
    "jpeg_lossless": (["dcmcjpeg", "+e1"], ["dcmdjpeg"]),
    "jpeg_extended": (["dcmcjpeg", "+ee"], ["dcmdjpeg"]),
    "jpegls": (["dcmcjpls"], ["dcmdjpls"]),
    "jpegls_near": (["dcmcjpls", "+en"], ["dcmdjpls"]),
    "rle": (["dcmcrle"], ["dcmdrle"]),
    "deflated": (["dcmconv", "+td"], ["dcmconv", "+te"]),
    "j2k": (["gdcmconv", "--j2k"], "opj"),
    "j2k_lossy": (["gdcmconv", "--j2k", "--lossy", "-q", "30"], "opj"),
}


def each_file(src, dst, command):
    os.makedirs(dst)
    for name in sorted(os.listdir(src)):
        subprocess.run(
            command + [os.path.join(src, name), os.path.join(dst, name)],
            check=True,
            capture_output=True,
        )


def modality(ds, stored):
    """The DICOM standard's modality values of stored values, with the file's own header."""
    bits = int(ds.BitsStored)
    mask = (1 << bits) - 1
    v = stored.astype(np.int64) & mask
    if int(ds.PixelRepresentation) == 1:
        v = np.where(v & (1 << (bits - 1)), v - (mask + 1), v)
    return v * float(ds.get("RescaleSlope", 1)) + float(ds.get("RescaleIntercept", 0))


def independent_volume(directory, decoder, work):
    """Modality values of a compressed series as the independent decoder gives them, in
    cuimg.dicom's slice order."""
    _, _, datasets = cuimg_dicom.read_series(directory)
    files = {
        str(pydicom.dcmread(os.path.join(directory, n)).SOPInstanceUID): os.path.join(directory, n)
        for n in os.listdir(directory)
    }  # a deflated dataset's filename is a buffer
    planes = []
    for ds in datasets:
        if decoder == "opj":
            codestream = next(generate_pixel_data_frame(ds.PixelData))
            j2k, raw = os.path.join(work, "f.j2k"), os.path.join(work, "f.rawl")
            with open(j2k, "wb") as f:
                f.write(codestream)
            subprocess.run(
                ["opj_decompress", "-i", j2k, "-o", raw], check=True, capture_output=True
            )
            stored = np.fromfile(raw, dtype="<u2").reshape(int(ds.Rows), int(ds.Columns))
        else:
            out = os.path.join(work, "plain.dcm")
            subprocess.run(
                decoder + [files[str(ds.SOPInstanceUID)], out], check=True, capture_output=True
            )
            plain = pydicom.dcmread(out)
            assert not plain.file_meta.TransferSyntaxUID.is_compressed
            stored = np.frombuffer(plain.PixelData, dtype="<u2").reshape(
                int(ds.Rows), int(ds.Columns)
            )
        planes.append(modality(ds, stored))
    return np.stack(planes)


def set_scl_slope(path, slope):
    """nibabel chooses its own scaling when it saves; this sets scl_slope in a written
    uncompressed NIfTI-2 file's header (doubles at byte 176), and scl_inter 0."""
    with open(path, "r+b") as f:
        f.seek(176)
        f.write(struct.pack("<dd", slope, 0.0))


def ras_affine(row, col, normal, spacing, origin):
    """NIfTI's (RAS) affine of a DICOM (LPS) placement."""
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2] = row * spacing[0], col * spacing[1], normal * spacing[2]
    m[:3, 3] = origin
    return np.diag([-1, -1, 1, 1]) @ m


class MedicalFilesOverTheWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}")
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
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

    def ct_series(self, name, depth=4, seed=3):
        hu = np.random.default_rng(seed).integers(-1000, 2000, (depth, 64, 64)).astype(np.int16)
        # Smooth regions too, so lossy codecs keep some values and change others.
        hu[:, :32, :32] = 40
        src = self.path(name)
        write_ct_series(
            src,
            hu,
            (0.7, 0.6),
            2.5,
            np.array([1.0, 0, 0]),
            np.array([0, 1.0, 0]),
            (-100.0, -80.0, 30.0),
            seed=seed,
        )
        return src, hu

    def test_every_codec_reads_alike_in_cli_python_and_independent_decoders(self):
        src, hu = self.ct_series("plain")
        for name, (compress, decoder) in CODECS.items():
            with self.subTest(codec=name):
                packed = self.path(name)
                each_file(src, packed, compress)
                volume, spacing, datasets = cuimg_dicom.read_series(packed)
                self.assertTrue(
                    datasets[0].file_meta.TransferSyntaxUID != pydicom.uid.ExplicitVRLittleEndian
                )
                work = self.path(name + "_work")
                os.makedirs(work)
                reference = independent_volume(packed, decoder, work)
                expected = reference.astype(volume.dtype)
                np.testing.assert_array_equal(volume, expected)
                if "lossy" not in name and "extended" not in name and "near" not in name:
                    np.testing.assert_array_equal(volume, hu)
                out = self.path(name + ".npy")
                self.cli("morphology", f"--input={packed}", f"--output={out}", IDENTITY)
                np.testing.assert_array_equal(np.load(out), volume)
                self.assertEqual(spacing, (0.7, 0.6, 2.5))  # write_ct_series' (x, y)

    def test_fractional_slope_is_kept_through_cli_and_python(self):
        # PET-like: unsigned 16-bit stored values, a slope of about 0.001 per slice.
        src, _ = self.ct_series("pet_src", depth=3, seed=5)
        pet = self.path("pet")
        os.makedirs(pet)
        rng = np.random.default_rng(9)
        for k, name in enumerate(sorted(os.listdir(src))):
            ds = pydicom.dcmread(os.path.join(src, name))
            ds.Modality, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = "PT", 16, 15, 0
            ds.RescaleSlope, ds.RescaleIntercept = f"{0.001 * (k + 1):.3f}", "0"
            ds.PixelData = rng.integers(0, 1758, (64, 64)).astype("<u2").tobytes()
            ds.save_as(os.path.join(pet, name))
        volume, _, _ = cuimg_dicom.read_series(pet)
        self.assertEqual(volume.dtype, np.float32)
        self.assertGreater(len(np.unique(volume)), 1000)  # not {0, 1, 2, ...}
        out = self.path("pet_out")
        self.cli("morphology", f"--input={pet}", f"--output={out}", "--steps=erode:rect:3x3x1")
        back, _, written = cuimg_dicom.read_series(out)
        self.assertEqual(back.dtype, np.float32)
        np.testing.assert_array_equal(
            back, ndimage.grey_erosion(volume, size=(1, 3, 3), mode="nearest")
        )
        self.assertEqual(written[0]["PixelData"].VR, "OW")
        # The Python writer: the same values back, and the same slopes.
        out_py = self.path("pet_py")
        _, _, sources = cuimg_dicom.read_series(pet)
        cuimg_dicom.write_series(sources, volume, out_py)
        again, _, copies = cuimg_dicom.read_series(out_py)
        np.testing.assert_array_equal(again, volume)
        self.assertEqual(
            [str(d.RescaleSlope) for d in copies], [str(d.RescaleSlope) for d in sources]
        )

    def test_nifti_in_and_out_keeps_qform_sform_and_zooms_as_nibabel_reads_them(self):
        rng = np.random.default_rng(11)
        qform = np.array([[0, -0.9, 0, 40], [1.1, 0, 0, -60], [0, 0, 2.5, 10], [0, 0, 0, 1]])
        sform = np.array([[0.1, -0.9, 0, 41], [1.1, 0.05, 0, -61], [0, 0, 2.5, 9], [0, 0, 0, 1]])
        cases = {
            "ct.nii.gz": (
                nib.Nifti1Image,
                rng.integers(-1000, 2000, (20, 16, 5)).astype(np.int16),
                None,
            ),
            "pet.nii": (
                nib.Nifti2Image,
                rng.integers(0, 30000, (20, 16, 5)).astype(np.int16),
                0.001,
            ),
        }
        for name, (kind, data, slope) in cases.items():
            with self.subTest(name=name):
                image = kind(data, None)
                image.set_qform(qform, 1)
                image.set_sform(sform, 2)
                src, dst = self.path("in_" + name), self.path("out_" + name)
                os.makedirs(os.path.dirname(src), exist_ok=True)
                nib.save(image, src)
                if slope is not None:
                    set_scl_slope(src, slope)
                    self.assertEqual(
                        nib.load(src).dataobj.slope, slope
                    )  # nibabel keeps it on the proxy
                self.cli(
                    "morphology", f"--input={src}", f"--output={dst}", "--steps=erode:rect:3x3x1"
                )
                source, result = nib.load(src), nib.load(dst)
                self.assertIs(type(result), kind)
                for get in ("get_qform", "get_sform"):
                    want, want_code = getattr(source.header, get)(coded=True)
                    got, got_code = getattr(result.header, get)(coded=True)
                    self.assertEqual(int(got_code), int(want_code))
                    np.testing.assert_allclose(got, want, atol=1e-5)
                np.testing.assert_allclose(result.header.get_zooms(), source.header.get_zooms())
                volume, _, _ = cuimg_nifti.read_nifti(src)
                self.assertEqual(volume.dtype, np.float32 if slope else np.int16)
                expected = ndimage.grey_erosion(volume, size=(1, 3, 3), mode="nearest")
                np.testing.assert_array_equal(np.asarray(result.dataobj).T, expected)
                py_out = self.path("py_" + name)
                cuimg_nifti.write_nifti(py_out, expected, like=source)
                np.testing.assert_allclose(nib.load(py_out).affine, result.affine, atol=1e-5)

    def test_dicom_placement_reaches_nifti_and_nrrd(self):
        src, hu = self.ct_series("ct", depth=3, seed=4)
        nii, nrrd = self.path("ct.nii"), self.path("ct.nrrd")
        self.cli("morphology", f"--input={src}", f"--output={nii}", IDENTITY)
        self.cli("morphology", f"--input={src}", f"--output={nrrd}", IDENTITY)
        want = ras_affine(
            np.array([1.0, 0, 0]),
            np.array([0, 1.0, 0]),
            np.array([0, 0, 1.0]),
            (0.7, 0.6, 2.5),
            np.array([-100.0, -80.0, 30.0]),
        )
        image = nib.load(nii)
        np.testing.assert_allclose(image.get_sform(), want, atol=1e-5)
        np.testing.assert_allclose(image.get_qform(), want, atol=1e-5)
        np.testing.assert_allclose(image.header.get_zooms(), (0.7, 0.6, 2.5), atol=1e-6)
        np.testing.assert_array_equal(np.asarray(image.dataobj).T, hu)
        _, _, fields = read_nrrd(nrrd)
        self.assertEqual(fields["space"], "left-posterior-superior")
        directions = [
            [float(v) for v in d.strip("()").split(",")] for d in fields["space directions"].split()
        ]
        np.testing.assert_allclose(directions, [[0.7, 0, 0], [0, 0.6, 0], [0, 0, 2.5]])
        np.testing.assert_allclose(
            [float(v) for v in fields["space origin"].strip("()").split(",")], [-100, -80, 30]
        )

    def test_series_uid_uid_root_references_and_exit_codes(self):
        a, _ = self.ct_series("a", depth=2, seed=6)
        b, _ = self.ct_series("b", depth=3, seed=7)
        both = self.path("both")
        os.makedirs(both)
        for d in (a, b):
            for name in os.listdir(d):
                os.link(os.path.join(d, name), os.path.join(both, os.path.basename(d) + name))
        run = self.cli(
            "morphology", f"--input={both}", f"--output={self.path('x.npy')}", IDENTITY, expect=2
        )
        self.assertIn("--series_uid", run.stderr)
        uid_b = str(pydicom.dcmread(os.path.join(b, os.listdir(b)[0])).SeriesInstanceUID)
        out = self.path("picked")
        self.cli(
            "morphology",
            f"--input={both}",
            f"--output={out}",
            IDENTITY,
            f"--series_uid={uid_b}",
            "--uid_root=1.2.826.0.1.3680043.10.543",
        )
        _, _, sources = cuimg_dicom.read_series(b)
        _, _, written = cuimg_dicom.read_series(out)
        self.assertEqual(len(written), 3)
        for source, ds in zip(sources, written):
            self.assertTrue(ds.SOPInstanceUID.startswith("1.2.826.0.1.3680043.10.543."))
            self.assertTrue(ds.SeriesInstanceUID.startswith("1.2.826.0.1.3680043.10.543."))
            self.assertEqual(
                ds.SourceImageSequence[0].ReferencedSOPInstanceUID, source.SOPInstanceUID
            )
            self.assertEqual(ds.SourceImageSequence[0].ReferencedSOPClassUID, source.SOPClassUID)
        # A JPEG-LS stream cut short is bad data (3), not a usage error (2).
        packed = self.path("jls")
        each_file(a, packed, ["dcmcjpls"])
        victim = os.path.join(packed, sorted(os.listdir(packed))[0])
        ds = pydicom.dcmread(victim)
        frame = next(generate_pixel_data_frame(ds.PixelData))
        ds.PixelData = pydicom.encaps.encapsulate([frame[: len(frame) // 3]])
        ds.save_as(victim)
        run = self.cli(
            "morphology", f"--input={packed}", f"--output={self.path('y.npy')}", IDENTITY, expect=3
        )
        self.assertIn(os.path.basename(victim), run.stderr)
        self.cli(
            "morphology",
            f"--input={self.path('missing')}/",
            f"--output={self.path('z.npy')}",
            IDENTITY,
            expect=2,
        )
        self.cli("morphology", f"--input={a}", f"--output={self.path('z.bmp')}", IDENTITY, expect=2)


if __name__ == "__main__":
    unittest.main()
