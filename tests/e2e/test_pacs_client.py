"""The client side of compressed PACS data (issue 49), CLI against a real cuimg-server through a
small gRPC proxy that records each request (and can play an older server): a series compressed by
real tools (OpenJPH's ojph_compress for HTJ2K, GDCM's gdcmconv for JPEG 2000, DCMTK's dcmcjpls and
dcmcrle) is sent as its stored frames when GetServerInfo lists the syntax, and decoded here
otherwise; either way the result equals, bit for bit, the result of the uncompressed copy of the
series sent as pixels (today's path), rescale and MONOCHROME1 included, float32 rescales too.
--output_syntax=htj2k writes the derived series as HTJ2K (encoded by the server, or here for a
server that does not encode) and j2k as JPEG 2000 (encoded here), read back by pydicom (frames
decoded by OpenJPEG's opj_decompress, and GDCM for JPEG 2000) and parsed by DCMTK's dcmdump, equal
to the explicit output. The Python client (cuimg.dicom_frames) sends and writes the same way.
"""
import concurrent.futures
import json
import os
import subprocess
import tempfile
import unittest

import grpc
import numpy as np
import pydicom
from pydicom import encaps
from pydicom._uid_dict import UID_dictionary
from pydicom.dataset import FileDataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

from cuimg.v1 import gradient_pb2, label_pb2, morphology_pb2, server_info_pb2
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
HELPER = os.environ.get("CUIMG_FRAME_DECODER", "")
HTJ2K, J2K = "1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.90"
SLICES, ROWS, COLUMNS = 5, 40, 48
STEPS = "--steps=dilate:rect:3x3x3"
# Debian's pydicom 2.3 predates HTJ2K: without the UID it refuses to write such a file.
UID_dictionary.setdefault(HTJ2K, ("HTJ2K Lossless Only", "Transfer Syntax", "", "", ""))

# name: (bits stored, signed, slope, intercept, photometric)
SERIES = {
    "ct12": (12, False, "1", "-1024", "MONOCHROME2"),
    "signed_m1": (12, True, "2", "-3", "MONOCHROME1"),
    "fractional": (12, False, "0.5", "0.25", "MONOCHROME2"),
}
# name: (command, or None for HTJ2K through ojph_compress; transfer syntax)
CODECS = {
    "htj2k": (None, HTJ2K),
    "j2k": (["gdcmconv", "--j2k"], J2K),
    "jpegls": (["dcmcjpls"], "1.2.840.10008.1.2.4.80"),
    "rle": (["dcmcrle"], "1.2.840.10008.1.2.5"),
}


def stored_values(name, seed):
    bits, signed, *_ = SERIES[name]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    rng = np.random.default_rng(seed)
    z, y, x = np.mgrid[0:SLICES, 0:ROWS, 0:COLUMNS]
    smooth = (x * 37 + y * 91 + z * 13) % (hi - lo + 1) + lo  # CT-like structure, then noise
    noise = rng.integers(lo, hi + 1, smooth.shape)
    noisy = np.where(rng.random(smooth.shape) < 0.05, noise, smooth)
    return noisy.astype(np.int16 if signed else np.uint16)


def write_native_series(directory, name, stored):
    """One uncompressed slice per z (explicit VR little endian), oblique geometry, files named in
    reverse order of position so the reader's sort matters."""
    bits, signed, slope, intercept, photometric = SERIES[name]
    os.makedirs(directory)
    row_dir, col_dir = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.8, -0.6])
    normal = np.cross(row_dir, col_dir)
    study, series = generate_uid(), generate_uid()
    for z in range(stored.shape[0]):
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = pydicom.uid.CTImageStorage
        meta.MediaStorageSOPInstanceUID = generate_uid()
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        path = os.path.join(directory, f"s{SLICES - z:02d}.dcm")
        ds = FileDataset(path, {}, file_meta=meta, preamble=b"\0" * 128)
        ds.SOPClassUID = meta.MediaStorageSOPClassUID
        ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
        ds.StudyInstanceUID, ds.SeriesInstanceUID = study, series
        ds.PatientName, ds.PatientID, ds.Modality, ds.SeriesNumber = "Pacs^Client", "PC-1", "CT", 4
        position = np.array([-40.0, 12.5, 30.0]) + z * 2.5 * normal
        ds.ImagePositionPatient = [f"{v:.4f}" for v in position]
        ds.ImageOrientationPatient = [f"{v:.6f}" for v in list(row_dir) + list(col_dir)]
        ds.PixelSpacing = ["0.75", "0.7"]
        ds.Rows, ds.Columns = ROWS, COLUMNS
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, photometric
        ds.BitsAllocated, ds.BitsStored, ds.HighBit = 16, bits, bits - 1
        ds.PixelRepresentation = int(signed)
        ds.RescaleSlope, ds.RescaleIntercept = slope, intercept
        ds.PixelData = stored[z].tobytes()
        ds.is_little_endian, ds.is_implicit_VR = True, False
        ds.save_as(path, write_like_original=False)


def compress_series(native, directory, codec, scratch):
    """Each file of `native` compressed into `directory` by the codec's own tool."""
    command, uid = CODECS[codec]
    os.makedirs(directory)
    for name in sorted(os.listdir(native)):
        source, target = os.path.join(native, name), os.path.join(directory, name)
        if command is not None:
            subprocess.run(command + [source, target], check=True, capture_output=True)
            continue
        ds = pydicom.dcmread(source)
        raw, j2c = os.path.join(scratch, "h.raw"), os.path.join(scratch, "h.j2c")
        ds.pixel_array.astype(np.uint16).tofile(raw)
        subprocess.run(
            [
                "ojph_compress",
                "-i",
                raw,
                "-o",
                j2c,
                "-reversible",
                "true",
                "-dims",
                f"{{{ds.Columns},{ds.Rows}}}",
                "-num_comps",
                "1",
                "-signed",
                "false",
                "-bit_depth",
                str(ds.BitsStored),
                "-downsamp",
                "{1,1}",
            ],
            check=True,
            capture_output=True,
        )
        with open(j2c, "rb") as f:
            ds.PixelData = encaps.encapsulate([f.read()])
        ds["PixelData"].VR = "OB"
        ds.file_meta.TransferSyntaxUID = uid
        ds.save_as(target, write_like_original=False)


class Proxy:
    """A gRPC server that forwards every call to `target` and records the Morphology, Label and
    Gradient requests.
    mode "pass": GetServerInfo forwarded; "old": UNIMPLEMENTED (a server before issue 49);
    "decodes_nothing": an info listing no syntax; "encodes_nothing": the server's info without its
    encodable syntaxes."""

    def __init__(self, target):
        options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
        self.upstream = grpc.insecure_channel(target, options=options)
        self.mode, self.requests = "pass", []
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(4), options=options)
        self.server.add_generic_rpc_handlers([self])
        self.target = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def service(self, details):
        method = details.method
        forward = self.upstream.unary_unary(method)

        def handle(request, context):
            if method.endswith("/GetServerInfo") and self.mode == "old":
                context.abort(grpc.StatusCode.UNIMPLEMENTED, "an older server")
            if method.endswith("/GetServerInfo") and self.mode == "decodes_nothing":
                return server_info_pb2.ServerInfo(version="test").SerializeToString()
            if method.endswith("/GetServerInfo") and self.mode == "encodes_nothing":
                info = server_info_pb2.ServerInfo.FromString(forward(request, timeout=30))
                del info.encodable_transfer_syntaxes[:]
                return info.SerializeToString()
            if method.endswith("/Morphology"):
                self.requests.append(morphology_pb2.MorphologyRequest.FromString(request))
            if method.endswith("/Label"):
                self.requests.append(label_pb2.LabelRequest.FromString(request))
            if method.endswith("/Gradient"):
                self.requests.append(gradient_pb2.GradientRequest.FromString(request))
            try:
                response, call = forward.with_call(request, timeout=120)
            except grpc.RpcError as e:  # passed on with its details (ErrorInfo)
                context.set_trailing_metadata(e.trailing_metadata())
                context.abort(e.code(), e.details())
            context.set_trailing_metadata(call.trailing_metadata())
            return response

        return grpc.unary_unary_rpc_method_handler(handle)

    def close(self):
        self.server.stop(None)
        self.upstream.close()


class PacsClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, *([f"--frame_decoder={HELPER}"] if HELPER else []))
        cls.proxy = Proxy(cls.server.target)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.native, cls.compressed = {}, {}
        for k, name in enumerate(SERIES):
            cls.native[name] = os.path.join(cls.tmp.name, name)
            write_native_series(cls.native[name], name, stored_values(name, 10 + k))
            for codec, (command, _) in CODECS.items():
                if codec == "htj2k" and SERIES[name][1]:
                    continue  # ojph_compress 0.9 stores signed raw samples wrongly (design.md)
                path = os.path.join(cls.tmp.name, f"{name}_{codec}")
                compress_series(cls.native[name], path, codec, cls.tmp.name)
                cls.compressed[name, codec] = path

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        cls.tmp.cleanup()
        assert cls.server.terminate() == 0, cls.server.log()

    def cli(self, *args, expect=0, mode="pass"):
        self.proxy.mode = mode
        self.proxy.requests.clear()
        run = subprocess.run(
            [CLIENT, "morphology", *args, f"--target={self.proxy.target}"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.assertEqual(run.returncode, expect, f"{args}: {run.stdout}{run.stderr}")
        return run

    def morphology(self, series, out, *extra, mode="pass", steps=STEPS):
        """Runs the dilation; returns the request the server got and the report."""
        run = self.cli(f"--input={series}", f"--output={out}", steps, "--json", *extra, mode=mode)
        self.assertEqual(len(self.proxy.requests), 1)
        return self.proxy.requests[0], json.loads(run.stdout)

    def out(self, name):
        folder = os.path.join(self.tmp.name, "out", self.id().split(".")[-1])
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, name)

    def test_frames_are_sent_as_stored_and_give_the_pixels_result(self):
        for name in SERIES:
            reference = self.out(f"{name}_native.npy")
            request, _ = self.morphology(self.native[name], reference)
            self.assertEqual(request.input.WhichOneof("source"), "image")  # native: as pixels
            expected = np.load(reference)
            self.assertEqual(expected.dtype, np.float32 if name == "fractional" else np.int16)
            for codec, (_, uid) in CODECS.items():
                if (name, codec) not in self.compressed:
                    continue
                with self.subTest(series=name, codec=codec):
                    out = self.out(f"{name}_{codec}.npy")
                    request, report = self.morphology(self.compressed[name, codec], out)
                    frames = request.input.dicom_frames
                    self.assertEqual(request.input.WhichOneof("source"), "dicom_frames")
                    self.assertEqual(
                        (frames.transfer_syntax_uid, len(frames.frames)), (uid, SLICES)
                    )
                    self.assertEqual(
                        frames.pixel_module.photometric_interpretation,
                        2 if name != "signed_m1" else 1,
                    )
                    self.assertIn("decode_us=", report["server_timing"])
                    self.assertLess(report["sent_bytes"], expected.size * 2)
                    self.assertTrue(np.array_equal(np.load(out), expected))

    def test_a_server_that_does_not_decode_the_syntax_gets_pixels(self):
        reference = self.out("native.npy")
        self.morphology(self.native["ct12"], reference)
        for mode in ("old", "decodes_nothing"):
            with self.subTest(mode=mode):
                out = self.out(f"{mode}.npy")
                request, _ = self.morphology(self.compressed["ct12", "j2k"], out, mode=mode)
                self.assertEqual(request.input.WhichOneof("source"), "image")
                self.assertTrue(np.array_equal(np.load(out), np.load(reference)))

    def read_slices(self, folder):
        return [pydicom.dcmread(os.path.join(folder, f)) for f in sorted(os.listdir(folder))]

    def decode_j2k_frame(self, data):
        j2c, raw = self.out("frame.j2c"), self.out("frame.raw")
        with open(j2c, "wb") as f:
            f.write(data)
        subprocess.run(["opj_decompress", "-i", j2c, "-o", raw], check=True, capture_output=True)
        return np.fromfile(raw, np.int16).reshape(ROWS, COLUMNS)

    def test_output_syntaxes_read_back_equal_the_explicit_output(self):
        source = self.compressed["ct12", "htj2k"]
        explicit = self.out("explicit")
        self.morphology(source, explicit)
        expected = [ds.pixel_array for ds in self.read_slices(explicit)]
        # name: (output syntax, proxy mode, whether the server encodes)
        cases = {
            "server_htj2k": ("htj2k", "pass", True),
            "client_htj2k": ("htj2k", "encodes_nothing", False),
            "client_j2k": ("j2k", "pass", False),
        }
        for case, (syntax, mode, server_encodes) in cases.items():
            with self.subTest(case=case):
                folder = self.out(case)
                request, _ = self.morphology(source, folder, f"--output_syntax={syntax}", mode=mode)
                self.assertEqual(request.output.frame_encoding != 0, server_encodes)
                uid = HTJ2K if syntax == "htj2k" else J2K
                slices = self.read_slices(folder)
                self.assertEqual(len(slices), SLICES)
                # Smaller than their pixels: the reader must not take them for native data.
                self.assertLess(max(len(ds.PixelData) for ds in slices), ROWS * COLUMNS * 2)
                for z, ds in enumerate(slices):
                    self.assertEqual(ds.file_meta.TransferSyntaxUID, uid)
                    self.assertEqual((ds.BitsStored, ds.PixelRepresentation), (16, 1))
                    self.assertEqual((str(ds.RescaleSlope), str(ds.RescaleIntercept)), ("1", "0"))
                    frames = list(encaps.generate_pixel_data_frame(ds.PixelData, 1))
                    self.assertEqual(len(frames), 1)
                    self.assertTrue(np.array_equal(self.decode_j2k_frame(frames[0]), expected[z]))
                    if uid == J2K:  # pydicom's own decoders (GDCM) know JPEG 2000
                        self.assertTrue(np.array_equal(ds.pixel_array, expected[z]))
                    dump = subprocess.run(
                        [
                            "dcmdump",
                            "-Un",
                            "+P",
                            "0002,0010",
                            "+P",
                            "7fe0,0010",
                            os.path.join(folder, sorted(os.listdir(folder))[z]),
                        ],
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout
                    self.assertIn(uid, dump)
                    self.assertIn("PixelSequence", dump)
                # cuimg reads its own output back (sent as frames): the identity gives it again.
                back = self.out(f"{case}.npy")
                request, _ = self.morphology(folder, back, steps="--steps=erode:rect:1x1x1")
                self.assertEqual(request.input.dicom_frames.transfer_syntax_uid, uid)
                self.assertTrue(np.array_equal(np.load(back), np.stack(expected)))

    def test_gradient_and_label_send_frames_and_a_corrupt_frame_names_its_file(self):
        # Gradient: the same gx, gy and magnitude from the frames as from the pixels.
        planes = {}
        for name, series in (
            ("native", self.native["fractional"]),
            ("rle", self.compressed["fractional", "rle"]),
        ):
            prefix = self.out(f"g_{name}")
            self.proxy.mode = "pass"
            self.proxy.requests.clear()
            run = subprocess.run(
                [
                    CLIENT,
                    "gradient",
                    f"--input={series}",
                    f"--output_prefix={prefix}",
                    "--format=npy",
                    f"--target={self.proxy.target}",
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(
                self.proxy.requests[0].input.WhichOneof("source"),
                "image" if name == "native" else "dicom_frames",
            )
            planes[name] = [np.load(f"{prefix}_{p}.npy") for p in ("gx", "gy", "magnitude")]
        for a, b in zip(planes["native"], planes["rle"]):
            self.assertTrue(np.array_equal(a, b))
        results = {}
        for name, series in (
            ("native", self.native["ct12"]),
            ("htj2k", self.compressed["ct12", "htj2k"]),
        ):
            out = self.out(f"{name}.npy")
            self.proxy.requests.clear()
            run = subprocess.run(
                [
                    CLIENT,
                    "label",
                    f"--input={series}",
                    f"--output={out}",
                    "--threshold=-1024:500",
                    "--json",
                    f"--target={self.proxy.target}",
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(
                self.proxy.requests[0].input.WhichOneof("source"),
                "image" if name == "native" else "dicom_frames",
            )
            results[name] = (np.load(out), json.loads(run.stdout)["region_count"])
        self.assertGreater(results["native"][1], 1)
        self.assertEqual(results["native"][1], results["htj2k"][1])
        self.assertTrue(np.array_equal(results["native"][0], results["htj2k"][0]))
        # A JPEG 2000 frame cut short: the server refuses it, the CLI names the file (exit 3).
        cut = self.out("cut")
        subprocess.run(["cp", "-r", self.compressed["ct12", "j2k"], cut], check=True)
        victim = os.path.join(cut, sorted(os.listdir(cut))[2])
        ds = pydicom.dcmread(victim)
        frame = next(encaps.generate_pixel_data_frame(ds.PixelData))
        ds.PixelData = encaps.encapsulate([frame[: len(frame) // 2]])
        ds.save_as(victim)
        run = self.cli(f"--input={cut}", f"--output={self.out('cut.npy')}", STEPS, expect=3)
        self.assertEqual(self.proxy.requests[0].input.WhichOneof("source"), "dicom_frames")
        self.assertIn(f"{victim}: PixelData:", run.stderr)

    def test_python_client_sends_frames_and_writes_htj2k(self):
        import cuimg
        from cuimg import dicom, dicom_frames

        steps = STEPS.split("=", 1)[1]
        for name, codec in (("ct12", "htj2k"), ("signed_m1", "j2k"), ("fractional", "rle")):
            with self.subTest(series=name, codec=codec):
                volume, spacing, _ = dicom.read_series(self.native[name])
                self.proxy.mode = "pass"
                with cuimg.Client(self.proxy.target) as c:
                    expected = c.morphology(volume, steps, spacing=spacing, stream=False)
                    syntaxes = c.server_info().decodable_transfer_syntaxes
                    frames, frames_spacing, _ = dicom_frames.read_series_frames(
                        self.compressed[name, codec], syntaxes
                    )
                    self.assertIsInstance(frames, dicom_frames.StoredFrames)
                    self.assertEqual(frames_spacing, spacing)
                    self.proxy.requests.clear()
                    got = c.morphology(frames, steps, spacing=frames_spacing)
                    labels, regions = c.label(frames, threshold=(-200, 500), spacing=spacing)
                    want_labels, want_regions = c.label(
                        volume, threshold=(-200, 500), spacing=spacing
                    )
                self.assertEqual(
                    [r.input.WhichOneof("source") for r in self.proxy.requests],
                    ["dicom_frames", "dicom_frames", "image"],
                )
                self.assertEqual(got.dtype, expected.dtype)
                self.assertTrue(np.array_equal(got, expected))
                self.assertTrue(np.array_equal(labels, want_labels))
                self.assertTrue(np.array_equal(regions["voxels"], want_regions["voxels"]))
                self.assertGreater(len(regions["voxels"]), 0)
        # An older server: decoded here, sent as pixels.
        self.proxy.mode = "old"
        with cuimg.Client(self.proxy.target) as c:
            self.assertEqual(len(c.server_info().decodable_transfer_syntaxes), 0)
            local, _, _ = dicom_frames.read_series_frames(self.compressed["ct12", "j2k"], [])
        self.assertIsInstance(local, np.ndarray)
        # output_syntax="htj2k": the server's frames written as they are, equal to the CLI's
        # explicit output; j2k and a server that does not encode are refused.
        source = self.compressed["ct12", "htj2k"]
        explicit = self.out("explicit")
        self.morphology(source, explicit)
        folder = self.out("python_htj2k")
        self.proxy.mode = "pass"
        with cuimg.Client(self.proxy.target) as c:
            dicom_frames.morphology_series(c, source, folder, steps, output_syntax="htj2k")
            with self.assertRaisesRegex(ValueError, "output_syntax='j2k'"):
                dicom_frames.morphology_series(c, source, self.out("j"), steps, output_syntax="j2k")
        self.assertEqual(self.proxy.requests[-1].input.WhichOneof("source"), "dicom_frames")
        self.proxy.mode = "encodes_nothing"
        with cuimg.Client(self.proxy.target) as c, self.assertRaisesRegex(ValueError, "HTJ2K"):
            dicom_frames.morphology_series(c, source, self.out("h"), steps, output_syntax="htj2k")
        for ds, want in zip(self.read_slices(folder), self.read_slices(explicit)):
            self.assertEqual(ds.file_meta.TransferSyntaxUID, HTJ2K)
            self.assertEqual(ds.SeriesInstanceUID != want.SeriesInstanceUID, True)
            frame = next(encaps.generate_pixel_data_frame(ds.PixelData, 1))
            self.assertTrue(np.array_equal(self.decode_j2k_frame(frame), want.pixel_array))
        dump = subprocess.run(
            [
                "dcmdump",
                "-Un",
                "+P",
                "0002,0010",
                "+P",
                "7fe0,0010",
                os.path.join(folder, sorted(os.listdir(folder))[0]),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        self.assertIn(HTJ2K, dump)
        self.assertIn("PixelSequence", dump)

    def test_output_syntax_refusals_name_the_flag(self):
        source = self.compressed["ct12", "htj2k"]
        for args in (["--output_syntax=jpeg"], ["--output_syntax=htj2k"]):
            with self.subTest(args=args):
                out = self.out("x.npy") if args[0].endswith("htj2k") else self.out("x")
                run = self.cli(f"--input={source}", f"--output={out}", STEPS, *args, expect=2)
                self.assertIn("--output_syntax", run.stderr)
        run = self.cli(
            f"--input={self.compressed['fractional', 'rle']}",
            f"--output={self.out('f')}",
            STEPS,
            "--output_syntax=htj2k",
            expect=2,
        )
        self.assertIn("float32", run.stderr)


if __name__ == "__main__":
    unittest.main()
