"""Real files read right or refused clearly, never silently wrong (issue 46), on the CPU backend.

Every DICOM and NIfTI file Debian's python3-pydicom and python3-nibabel ship, and DICOM variants of
a CT-like series made here with DCMTK's tools (big-endian, implicit, deflated, JPEG baseline,
extended and lossless, JPEG-LS, RLE; JPEG 2000 with gdcmconv; signed values, fractional slopes, an
enhanced multi-frame object), is read by the cuimg CLI and by cuimg.dicom / cuimg.nifti, and:
  - both read it, the same values, equal to pydicom's (its decoders and modality LUT) or nibabel's,
    or to the values the variant was made from; or
  - both refuse it (CLI exit 3, DicomError/ValueError), naming the same attribute; or
  - both find no image in it (CLI exit 2, FileNotFoundError).
What the CLI reads is what an identity morphology (a 1x1 element) writes to .npy: the server
returns every voxel unchanged. Every series both read is written back by the CLI (DICOM and NIfTI)
and by cuimg.dicom.write_series; each DICOM file must pass dcmdump and pydicom with its source's
geometry, each NIfTI file nibabel with the DICOM placement or the source's affine. Files pydicom
itself cannot decode are compared between the two readers only (listed in the log)."""
import concurrent.futures
import os
import subprocess
import tempfile
import unittest

import nibabel as nib
import numpy as np
import pydicom
from pydicom.pixel_data_handlers.util import apply_modality_lut

from cuimg import dicom as cuimg_dicom
from cuimg import nifti as cuimg_nifti
import real_data
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
IDENTITY = "--steps=dilate:rect:1x1"
# The reproducers of issue 46, which must be read (not refused) and equal pydicom.
REPRODUCERS = (
    "MR_small_bigendian.dcm",
    "MR_small_expb.dcm",
    "J2K_pixelrep_mismatch.dcm",
    "slicethickness_empty_string.dcm",
)


class Outcome:
    """What the CLI and Python made of one series folder."""

    def __init__(self, name, folder, cli, python):
        self.name, self.folder = name, folder
        self.cli_rc, self.cli_stderr, self.cli_values = cli
        self.python = python  # (volume, spacing, datasets) or the exception

    def kind(self):
        """ "read", "refused" or "no image" when both agree; else a description of the split."""
        py = self.python
        if self.cli_rc == 0 and isinstance(py, tuple):
            return "read"
        if (
            self.cli_rc == 3
            and isinstance(py, (cuimg_dicom.DicomError, ValueError))
            and not isinstance(py, FileNotFoundError)
            and "more than one series" not in str(py)
        ):
            return "refused"
        if (
            self.cli_rc == 2
            and "no DICOM image files" in self.cli_stderr
            and isinstance(py, FileNotFoundError)
        ):
            return "no image"
        if (
            self.cli_rc == 2
            and "more than one series" in self.cli_stderr
            and "more than one series" in str(py)
        ):
            return "several series"
        return f"split: CLI exit {self.cli_rc} ({self.cli_stderr.strip()[:200]}), Python {py!r}"[
            :400
        ]


class RealDataCorpus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, "--backend=cpu")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)

    @classmethod
    def tearDownClass(cls):
        cls.pool.shutdown()
        cls.tmp.cleanup()
        assert cls.server.terminate() == 0, cls.server.log()

    def path(self, *parts):
        return os.path.join(self.tmp.name, self.id().split(".")[-1], *parts)

    def cli(self, *args):
        return subprocess.run(
            [CLIENT, f"--target={self.server.target}", *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=120,
        )

    @staticmethod
    def read_python(folder):
        try:
            return cuimg_dicom.read_series(folder)
        except (ValueError, FileNotFoundError) as e:  # DicomError is a ValueError
            return e

    def read_cli(self, folder):
        """The CLI's reading: what an identity morphology writes to .npy."""
        out = folder.rstrip("/") + ".npy"
        run = self.cli("morphology", f"--input={folder}", f"--output={out}", IDENTITY)
        values = np.load(out) if run.returncode == 0 else None
        if values is not None and values.ndim == 2:  # .npy keeps a one-slice volume as (H, W)
            values = values[np.newaxis]
        return run.returncode, run.stderr, values

    def read_both(self, name, folder):
        return Outcome(name, folder, self.read_cli(folder), self.read_python(folder))

    def assert_agree(self, outcome, reference=None):
        """The CLI and Python agree; with `reference` (float64 modality values), both equal it."""
        kind = outcome.kind()
        self.assertIn(kind, ("read", "refused", "no image", "several series"), outcome.name)
        if (
            kind == "refused"
            and isinstance(outcome.python, cuimg_dicom.DicomError)
            and outcome.python.keyword
        ):
            self.assertIn(f"{outcome.python.keyword}:", outcome.cli_stderr, outcome.name)
        if kind != "read":
            return kind
        volume = outcome.python[0]
        self.assertEqual(outcome.cli_values.dtype, volume.dtype, outcome.name)
        np.testing.assert_array_equal(outcome.cli_values, volume, outcome.name)
        if reference is not None:
            want = np.rint(reference) if volume.dtype == np.int16 else reference
            np.testing.assert_array_equal(
                volume, want.astype(volume.dtype).reshape(volume.shape), outcome.name
            )
        return kind

    def check_dicom_written(self, outcome):
        """The CLI's and cuimg.dicom's derived series of a series both read: every file passes
        dcmdump and pydicom, holds the values read, and keeps its source slice's geometry."""
        volume, _, sources = outcome.python
        if len({id(ds) for ds in sources}) != len(sources):  # multi-frame: written as NIfTI only
            run = self.cli(
                "morphology",
                f"--input={outcome.folder}",
                f"--output={outcome.folder}_dcm",
                IDENTITY,
            )
            self.assertEqual(run.returncode, 2, run.stderr)
            self.assertIn("multi-frame", run.stderr)
            return
        cli_out, py_out = outcome.folder + "_dcm", outcome.folder + "_py"
        run = self.cli("morphology", f"--input={outcome.folder}", f"--output={cli_out}", IDENTITY)
        self.assertEqual(run.returncode, 0, f"{outcome.name}: {run.stderr}")
        cuimg_dicom.write_series(sources, volume, py_out)
        by_uid = {str(ds.SOPInstanceUID): ds for ds in sources}
        for out in (cli_out, py_out):
            names = sorted(os.listdir(out))
            self.assertEqual(len(names), len(sources), out)
            for name in names:
                path = os.path.join(out, name)
                dump = subprocess.run(
                    ["dcmdump", "-q", path], capture_output=True, text=True, errors="replace"
                )
                self.assertEqual(dump.returncode, 0, f"{outcome.name}: {dump.stderr}")
                self.assertNotIn("E: ", dump.stderr, outcome.name)
                ds = pydicom.dcmread(path)
                self.assertNotIn("IconImageSequence", ds)
                source = by_uid[str(ds.SourceImageSequence[0].ReferencedSOPInstanceUID)]
                for keyword in ("ImagePositionPatient", "ImageOrientationPatient", "PixelSpacing"):
                    want, got = source.get(keyword), ds.get(keyword)
                    self.assertEqual(want is None, got is None, f"{outcome.name} {keyword}")
                    if want is not None:
                        np.testing.assert_allclose(
                            np.array(got, float),
                            np.array(want, float),
                            err_msg=f"{outcome.name} {keyword}",
                        )
                plane = apply_modality_lut(ds.pixel_array, ds)
                index = [str(s.SOPInstanceUID) for s in sources].index(str(source.SOPInstanceUID))
                np.testing.assert_array_equal(
                    plane.astype(volume.dtype), volume[index], outcome.name
                )
            back = cuimg_dicom.read_series(out)[0]
            np.testing.assert_array_equal(back, volume, outcome.name)

    def check_nifti_written(self, outcome):
        """The CLI's NIfTI of a series both read: its values, and its affine from the DICOM tags
        (the x and y columns and origin for one slice: its z step is not in a slice's tags)."""
        volume, spacing, sources = outcome.python
        if not all(
            k in sources[0] or "PerFrameFunctionalGroupsSequence" in sources[0]
            for k in ("ImageOrientationPatient", "ImagePositionPatient", "PixelSpacing")
        ):
            return  # unplaced: its NIfTI holds the values and a default affine
        out = outcome.folder + ".nii"
        run = self.cli("morphology", f"--input={outcome.folder}", f"--output={out}", IDENTITY)
        self.assertEqual(run.returncode, 0, f"{outcome.name}: {run.stderr}")
        image = nib.load(out)
        np.testing.assert_array_equal(np.asarray(image.dataobj).T.reshape(volume.shape), volume)
        first = sources[0]
        if "PerFrameFunctionalGroupsSequence" not in first:  # the placement from the top level
            want = real_data.ras_affine(first, spacing[2])
            columns = slice(0, 4) if len(sources) > 1 else [0, 1, 3]
            np.testing.assert_allclose(
                image.get_sform()[:, columns], want[:, columns], atol=1e-4, err_msg=outcome.name
            )
            # The qform is a rotation: DICOM rows and columns orthogonal only to their digits
            # (pydicom's 98892001/CT2N/6924) are held to 1e-3.
            np.testing.assert_allclose(
                image.get_qform()[:, columns], want[:, columns], atol=1e-3, err_msg=outcome.name
            )

    def test_shipped_dicom_files_are_read_alike_or_refused_alike(self):
        files = real_data.corpus_dicom_files()
        self.assertGreater(len(files), 100)  # the packages' files were found
        staged = [real_data.stage(path, self.path(f"f{k:03d}")) for k, path in enumerate(files)]
        python = [self.read_python(os.path.dirname(f)) for f in staged]
        # Files without an image go to the CLI together: it must skip each of them.
        no_image = [f for f, p in zip(staged, python) if isinstance(p, FileNotFoundError)]
        together = self.path("no_image")
        os.makedirs(together)
        for k, f in enumerate(no_image):
            os.symlink(f, os.path.join(together, f"{k:03d}_{os.path.basename(f)}"))
        run = self.cli("morphology", f"--input={together}", f"--output={together}.npy", IDENTITY)
        self.assertEqual(
            (run.returncode, "no DICOM image files" in run.stderr), (2, True), run.stderr
        )
        cli = dict(
            zip(
                [f for f, p in zip(staged, python) if not isinstance(p, FileNotFoundError)],
                self.pool.map(
                    lambda f: self.read_cli(os.path.dirname(f)),
                    [f for f, p in zip(staged, python) if not isinstance(p, FileNotFoundError)],
                ),
            )
        )
        counts, read = {"no image": len(no_image)}, []
        for path, f, py in zip(files, staged, python):
            if f not in cli:
                continue
            with self.subTest(file=path):
                outcome = Outcome(os.path.basename(path), os.path.dirname(f), cli[f], py)
                kind = self.assert_agree(outcome)
                counts[kind] = counts.get(kind, 0) + 1
                if kind == "read":
                    reference, why = real_data.pydicom_reference(f)
                    if why:
                        print(f"compared between the two readers only: {path}: {why}")
                    else:
                        self.assert_agree(outcome, reference)
                    read.append(outcome)
                else:
                    print(f"refused by both: {path}: {py.keyword or 'the file'} ({py.reason})")
        print("shipped DICOM files:", counts)
        self.assertGreater(counts.get("read", 0), 40)
        names = {o.name for o in read}
        for name in REPRODUCERS:
            self.assertIn(name, names)
        self.check_written(read)

    def test_shipped_series_folders_are_read_alike(self):
        # pydicom's dicomdirtests as they lie: folders of CT, MR and CR slices, some several
        # series or orientations in one folder.
        root = os.path.join(
            os.path.dirname(pydicom.__file__), "data", "test_files", "dicomdirtests"
        )
        folders = sorted(d for d, _, names in os.walk(root) if names and d != root)
        staged = []
        for d in folders:  # links in a folder of the test's own (outputs go beside it)
            staged.append(self.path(os.path.relpath(d, root).replace("/", "_")))
            os.makedirs(staged[-1])
            for name in os.listdir(d):
                if os.path.isfile(os.path.join(d, name)):
                    os.symlink(os.path.join(d, name), os.path.join(staged[-1], name))
        outcomes = list(self.pool.map(lambda d: self.read_both(os.path.basename(d), d), staged))
        kinds = {}
        for outcome in outcomes:
            with self.subTest(folder=outcome.name):
                kind = self.assert_agree(outcome)
                kinds[kind] = kinds.get(kind, 0) + 1
                if kind == "read":
                    self.assertEqual(outcome.python[0].shape[0], len(os.listdir(outcome.folder)))
        print("shipped series folders:", kinds)
        self.assertGreaterEqual(kinds.get("read", 0), 3)  # CT2, CT5N and the CR folders
        self.assertIn("several series", kinds)

    def check_written(self, outcomes):
        """check_dicom_written and check_nifti_written of every outcome, several at a time."""

        def failure(outcome):
            try:
                self.check_dicom_written(outcome)
                self.check_nifti_written(outcome)
            except AssertionError as e:
                return e
            return None

        for outcome, error in zip(outcomes, self.pool.map(failure, outcomes)):
            with self.subTest(written=outcome.name):
                if error is not None:
                    raise error

    def test_dcmtk_variants_of_a_ct_series_read_as_made(self):
        rng = np.random.default_rng(46)
        hu = rng.integers(-1000, 2000, (4, 48, 40))
        hu[:, :20, :20] = 40  # flat regions, where lossy codecs keep the values
        stored12 = (hu + 1024).astype(np.uint16) | 0x5000  # junk above BitsStored
        plain = self.path("plain")
        real_data.write_series(plain, stored12)
        signed = self.path("signed")
        real_data.write_series(
            signed,
            (hu - 500).astype(np.int16).view(np.uint16),
            bits_stored=16,
            signed=True,
            intercept=0,
        )
        signed12 = self.path("signed12")
        real_data.write_series(
            signed12, ((hu - 500) & 0xFFF).astype(np.uint16) | 0xA000, signed=True, intercept=0
        )
        slopes = [0.0013, 0.002, 0.0025, 0.001]
        pet = self.path("pet")
        real_data.write_series(
            pet, (hu + 1000).astype(np.uint16), bits_stored=16, slopes=slopes, intercept=0
        )
        mr8 = self.path("mr8")
        real_data.write_series(
            mr8, ((hu + 1000) // 12).astype(np.uint8), bits_allocated=8, bits_stored=8, intercept=0
        )
        multi = self.path("multi")
        os.makedirs(multi)
        real_data.write_multi_frame(
            os.path.join(multi, "enhanced.dcm"),
            stored12[:, :, :],
            slopes=[1, 2, 1, 3],
            intercept=-1024,
        )
        truth = {
            plain: real_data.modality(stored12, 12, False, 1, -1024),
            signed: (hu - 500).astype(np.float64),
            signed12: (hu - 500).astype(np.float64),
            pet: np.stack([(hu[z] + 1000) * slopes[z] for z in range(4)]),
            mr8: ((hu + 1000) // 12).astype(np.float64),
            # Position order reverses the frames (real_data.write_multi_frame).
            multi: np.stack(
                [
                    real_data.modality(stored12[k], 12, False, [1, 2, 1, 3][k], -1024)
                    for k in range(3, -1, -1)
                ]
            ),
        }
        lossless = {
            "big_endian": ["dcmconv", "+tb"],
            "implicit": ["dcmconv", "+ti"],
            "deflated": ["dcmconv", "+td"],
            "jpeg_lossless": ["dcmcjpeg", "+el"],
            "jpeg_sv1": ["dcmcjpeg", "+e1"],
            "jpegls": ["dcmcjpls"],
            "rle": ["dcmcrle"],
            "j2k": ["gdcmconv", "--j2k"],
        }
        cases = {}
        for source in (plain, signed, signed12, pet, multi):
            cases[source] = truth[source]
            for name, command in lossless.items():
                if source in (signed12, pet, multi) and name not in ("big_endian", "jpegls", "j2k"):
                    continue  # each source through a few syntaxes; plain through all of them
                folder = f"{source}_{name}"
                real_data.convert_each(source, folder, command)
                cases[folder] = truth[source]
        # Lossy: compared with the independent decoder's values (DCMTK's dcmdjpeg / dcmdjpls).
        for source, name, command, decoder in (
            (mr8, "baseline", ["dcmcjpeg", "+eb"], "dcmdjpeg"),
            (plain, "extended", ["dcmcjpeg", "+ee"], "dcmdjpeg"),
            (plain, "jpegls_near", ["dcmcjpls", "+en"], "dcmdjpls"),
        ):
            folder, decoded = f"{source}_{name}", f"{source}_{name}_decoded"
            real_data.convert_each(source, folder, command)
            real_data.convert_each(folder, decoded, [decoder])
            cases[folder] = ("decoded", decoded, truth[source])
        cases[mr8] = truth[mr8]
        outcomes = list(self.pool.map(lambda f: self.read_both(os.path.basename(f), f), cases))
        for outcome in outcomes:
            with self.subTest(variant=outcome.name):
                want = cases[outcome.folder]
                if isinstance(want, tuple):  # a lossy variant: what the independent decoder gave
                    _, decoded, made = want
                    want = (
                        self.read_both(outcome.name + "_decoded", decoded)
                        .python[0]
                        .astype(np.float64)
                    )
                    self.assertGreater(
                        np.corrcoef(want.ravel(), made.ravel())[0, 1], 0.9
                    )  # not noise
                self.assertEqual(self.assert_agree(outcome, want), "read")
                self.assertEqual(
                    outcome.python[0].dtype,
                    np.float32 if outcome.folder.startswith(pet) else np.int16,
                )
        self.check_written(outcomes)

    def test_variants_cuimg_does_not_read_are_refused_alike_before_anything_is_written(self):
        rng = np.random.default_rng(47)
        stored = (rng.integers(0, 3000, (2, 16, 16)) + 0).astype(np.uint16)
        base = self.path("base")
        real_data.write_series(base, stored)
        first = sorted(os.listdir(base))[0]
        edits = {
            "HighBit": ["dcmodify", "-nb", "-m", "(0028,0102)=14"],
            "PhotometricInterpretation": ["dcmodify", "-nb", "-m", "(0028,0004)=PALETTE COLOR"],
            "BitsStored": ["dcmodify", "-nb", "-m", "(0028,0101)=17"],
            "ImagePositionPatient": ["dcmodify", "-nb", "-e", "(0020,0032)"],
            "PixelRepresentation": ["dcmodify", "-nb", "-e", "(0028,0103)"],
            "RescaleSlope": ["dcmodify", "-nb", "-m", "(0028,1053)=0"],
        }
        for keyword, command in edits.items():
            with self.subTest(attribute=keyword):
                folder = self.path(keyword)
                subprocess.run(["cp", "-r", base, folder], check=True)
                subprocess.run(
                    command + [os.path.join(folder, first)], check=True, capture_output=True
                )
                outcome = self.read_both(keyword, folder)
                self.assertEqual(self.assert_agree(outcome), "refused")
                self.assertEqual(outcome.python.keyword, keyword)
                out = folder + "_dcm"
                run = self.cli("morphology", f"--input={folder}", f"--output={out}", IDENTITY)
                self.assertEqual(run.returncode, 3, run.stderr)
                self.assertFalse(os.path.exists(out))
        with self.subTest(attribute="PixelData"):  # a slice cut short
            folder = self.path("short")
            subprocess.run(["cp", "-r", base, folder], check=True)
            with open(os.path.join(folder, first), "r+b") as f:
                f.truncate(os.path.getsize(os.path.join(folder, first)) - 100)
            outcome = self.read_both("short", folder)
            self.assertEqual(self.assert_agree(outcome), "refused")
            self.assertEqual(outcome.python.keyword, "PixelData")

    def test_shipped_nifti_files_are_read_alike_and_written_with_their_affine(self):
        files = real_data.corpus_nifti_files()
        self.assertGreater(len(files), 5)
        read = 0
        for k, path in enumerate(files):
            with self.subTest(file=path):
                out = self.path(f"n{k}.npy")
                os.makedirs(os.path.dirname(out), exist_ok=True)
                run = self.cli(
                    "morphology", f"--input={path}", f"--output={out}", "--steps=dilate:rect:1x1x1"
                )
                try:
                    volume = cuimg_nifti.read_nifti(path)[0]
                except ValueError as e:
                    self.assertEqual(run.returncode, 3, f"{e}; CLI: {run.stderr}")
                    print(f"refused by both: {path}: {e}")
                    continue
                self.assertEqual(run.returncode, 0, run.stderr)
                read += 1
                cli = np.load(out)
                self.assertEqual(cli.dtype, volume.dtype)
                np.testing.assert_array_equal(cli, volume)  # NaN where NaN
                image = nib.load(path)
                want = np.asanyarray(image.dataobj).T.reshape(volume.shape)  # nibabel scales
                np.testing.assert_array_equal(volume, want.astype(volume.dtype))
                written = self.path(f"n{k}.nii.gz")
                self.assertEqual(
                    self.cli(
                        "morphology",
                        f"--input={path}",
                        f"--output={written}",
                        "--steps=dilate:rect:1x1x1",
                    ).returncode,
                    0,
                )
                back = nib.load(written)
                np.testing.assert_allclose(back.affine, image.affine, atol=1e-4)
                np.testing.assert_array_equal(
                    np.asarray(back.dataobj).T.reshape(volume.shape), volume
                )
        self.assertGreater(read, 3)


if __name__ == "__main__":
    unittest.main()
