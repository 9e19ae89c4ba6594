"""DICOM frames over the wire (real cuimg-server, Python grpcio; issue 49): series compressed by
DCMTK's and GDCM's tools (RLE, JPEG baseline/extended/lossless SV1 and predictor 6, JPEG-LS lossless
and near-lossless, JPEG 2000) and HTJ2K codestreams from OpenJPH's ojph_compress, sent as their
frames with their pixel module and rescale, come back from an identity Morphology equal to
pydicom's decode of the same files (GDCM's codecs) rescaled by the documented rule (lossless ones
also equal to the source values); results asked as HTJ2K decode with OpenJPEG's and OpenJPH's
tools to the raw result; a cut frame is refused naming it; GetServerInfo lists the syntaxes; the
timing trailer and the decode metrics count the decode. On the CUDA backend (CUIMG_BACKEND=cuda)
the JPEG 2000 and HTJ2K frames decode on the GPU (nvJPEG2000) to the same values."""
import os
import subprocess
import tempfile
import unittest
import urllib.request

import grpc
import numpy as np
import pydicom
from pydicom import encaps
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

from cuimg import wire_contract
from cuimg.v1 import imaging_service_pb2_grpc, morphology_pb2, server_info_pb2, types_pb2
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
HELPER = os.environ.get("CUIMG_FRAME_DECODER", "")
ON_GPU = os.environ.get("CUIMG_BACKEND", "cpu") == "cuda"
HTJ2K = "1.2.840.10008.1.2.4.201"
ROWS, COLUMNS = 40, 52

# name: (dtype, bits stored, signed, slope, intercept)
PIXELS = {
    "u8": (np.uint8, 8, False, 1, 0),
    "ct12": (np.uint16, 12, False, 1, -1024),
    "i16": (np.int16, 16, True, 1, 0),
    "i16_12": (np.int16, 12, True, 2, -3),
}
# name: (command, lossless, pixels it applies to)
COMPRESSORS = {
    "rle": (["dcmcrle"], True, PIXELS),
    "jpeg_baseline": (["dcmcjpeg", "+eb"], False, ["u8"]),
    "jpeg_extended": (["dcmcjpeg", "+ee"], False, ["ct12"]),
    "jpeg_sv1": (["dcmcjpeg", "+e1"], True, PIXELS),
    "jpeg_p6": (["dcmcjpeg", "+el", "+sv", "6"], True, PIXELS),
    "jpegls": (["dcmcjpls"], True, PIXELS),
    "jpegls_near": (["dcmcjpls", "+en", "+md", "2"], False, ["u8", "ct12"]),
    "j2k": (["gdcmconv", "--j2k"], True, PIXELS),
}


def pixels(name, seed):
    dtype, bits, signed, _, _ = PIXELS[name]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:ROWS, 0:COLUMNS]
    a = np.where(
        rng.random((ROWS, COLUMNS)) < 0.3,
        rng.integers(lo, hi + 1, (ROWS, COLUMNS)),
        (x * 37 + y * 91) % (hi - lo + 1) + lo,
    )
    a[0, 0], a[0, 1] = lo, hi
    return a.astype(dtype)


def write_series(path, frames, name):
    dtype, bits, signed, slope, intercept = PIXELS[name]
    ds = Dataset()
    ds.file_meta = FileMetaDataset()
    ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds.file_meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
    ds.file_meta.MediaStorageSOPInstanceUID = generate_uid()
    ds.SOPClassUID = ds.file_meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = ds.file_meta.MediaStorageSOPInstanceUID
    ds.is_little_endian, ds.is_implicit_VR = True, False
    ds.Modality, ds.PatientName = "CT", "Test^Frames"
    ds.Rows, ds.Columns, ds.NumberOfFrames = ROWS, COLUMNS, len(frames)
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit = frames[0].dtype.itemsize * 8, bits, bits - 1
    ds.PixelRepresentation = int(signed)
    ds.RescaleSlope, ds.RescaleIntercept = slope, intercept
    ds.PixelData = np.stack(frames).tobytes()
    ds.save_as(path, write_like_original=False)


def frames_request(
    uid, rows, columns, bits_allocated, bits_stored, signed, frames, slopes, intercepts
):
    r = morphology_pb2.MorphologyRequest()
    f = r.input.dicom_frames
    f.transfer_syntax_uid = uid
    m = f.pixel_module
    m.rows, m.columns, m.bits_allocated, m.bits_stored = rows, columns, bits_allocated, bits_stored
    m.pixel_signed = signed
    m.photometric_interpretation = types_pb2.PHOTOMETRIC_INTERPRETATION_MONOCHROME2
    for data, slope, intercept in zip(frames, slopes, intercepts):
        f.frames.add(data=data, rescale_slope=slope, rescale_intercept=intercept)
    f.spacing.x_mm, f.spacing.y_mm, f.spacing.z_mm = 0.6, 0.6, 1.25
    step = r.steps.add(op=morphology_pb2.MORPHOLOGY_OP_ERODE)  # 1x1: the identity
    step.element.shape, step.element.width, step.element.height = (
        morphology_pb2.ELEMENT_SHAPE_RECT,
        1,
        1,
    )
    return r


def rescaled(stored, slope, intercept):
    return (stored.astype(np.int64) * slope + intercept).astype(np.int16)


def result_array(response, depth):
    image = response.result.image
    assert image.pixel_type == types_pb2.PIXEL_TYPE_I16, image.pixel_type
    return np.frombuffer(image.data, np.int16).reshape(depth, image.height, image.width)


class DicomFramesWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        args = [f"--frame_decoder={HELPER}"] if HELPER else []
        cls.server = ServerProcess(SERVER, *args)
        cls.channel = cls.server.channel()
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        code = cls.server.terminate()
        cls.tmp.cleanup()
        assert code == 0, cls.server.log()

    def call(self, request):
        response, call = self.stub.Morphology.with_call(request, timeout=60)
        return response, wire_contract.timing(call.trailing_metadata())

    def test_every_syntax_equals_pydicoms_decode(self):
        checked = 0
        for pname in PIXELS:
            source = [pixels(pname, 3 * k + len(pname)) for k in range(2)]
            native = os.path.join(self.tmp.name, f"{pname}.dcm")
            write_series(native, source, pname)
            for cname, (command, lossless, applies) in COMPRESSORS.items():
                if pname not in applies:
                    continue
                with self.subTest(pixels=pname, codec=cname):
                    path = os.path.join(self.tmp.name, f"{pname}_{cname}.dcm")
                    subprocess.run(command + [native, path], check=True, capture_output=True)
                    ds = pydicom.dcmread(path)
                    frames = list(encaps.generate_pixel_data_frame(ds.PixelData, 2))
                    slope, intercept = float(ds.RescaleSlope), float(ds.RescaleIntercept)
                    request = frames_request(
                        str(ds.file_meta.TransferSyntaxUID),
                        ds.Rows,
                        ds.Columns,
                        ds.BitsAllocated,
                        ds.BitsStored,
                        bool(ds.PixelRepresentation),
                        frames,
                        [slope] * 2,
                        [intercept] * 2,
                    )
                    response, timing = self.call(request)
                    got = result_array(response, 2)
                    self.assertTrue(
                        np.array_equal(got, rescaled(ds.pixel_array, int(slope), int(intercept)))
                    )
                    if lossless:
                        self.assertTrue(
                            np.array_equal(
                                got, rescaled(np.stack(source), int(slope), int(intercept))
                            )
                        )
                    self.assertGreater(timing["decode_us"], 0)
                    gpu_syntax = str(ds.file_meta.TransferSyntaxUID).endswith((".90", ".91"))
                    if ON_GPU and gpu_syntax:
                        self.assertGreaterEqual(timing["decode_device"], 0, "nvJPEG2000")
                    checked += 1
        self.assertGreaterEqual(checked, 24)

    def ojph_frames(self, name, count):
        dtype, bits, signed, _, _ = PIXELS[name]
        source, frames = [], []
        for k in range(count):
            a = pixels(name, 100 + k)
            raw, j2c = (os.path.join(self.tmp.name, n) for n in ("h.raw", "h.j2c"))
            a.tofile(raw)
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
                    f"{{{COLUMNS},{ROWS}}}",
                    "-num_comps",
                    "1",
                    "-signed",
                    "false",
                    "-bit_depth",
                    str(bits),
                    "-downsamp",
                    "{1,1}",
                ],
                check=True,
                capture_output=True,
            )
            with open(j2c, "rb") as f:
                frames.append(f.read())
            source.append(a)
        return np.stack(source), frames

    def test_htj2k_frames_and_results(self):
        source, frames = self.ojph_frames("ct12", 5)
        request = frames_request(HTJ2K, ROWS, COLUMNS, 16, 12, False, frames, [1] * 5, [-1024] * 5)
        response, timing = self.call(request)
        expected = rescaled(source, 1, -1024)
        self.assertTrue(np.array_equal(result_array(response, 5), expected))
        if ON_GPU:
            self.assertGreaterEqual(timing["decode_device"], 0, "nvJPEG2000")
        # The result as HTJ2K frames, read back by OpenJPEG's and OpenJPH's own tools.
        request.output.frame_encoding = types_pb2.FRAME_ENCODING_HTJ2K_LOSSLESS
        encoded, _ = self.call(request)
        out = encoded.result.dicom_frames
        self.assertEqual(out.transfer_syntax_uid, HTJ2K)
        self.assertEqual(len(encoded.result.image.data), 0)
        self.assertEqual((out.pixel_module.bits_stored, out.pixel_module.pixel_signed), (16, True))
        self.assertLess(sum(len(f.data) for f in out.frames), expected.nbytes)
        for z, frame in enumerate(out.frames):
            j2c, raw = (os.path.join(self.tmp.name, n) for n in ("r.j2c", "r.raw"))
            with open(j2c, "wb") as f:
                f.write(frame.data)
            subprocess.run(
                ["opj_decompress", "-i", j2c, "-o", raw], check=True, capture_output=True
            )
            decoded = np.fromfile(raw, np.int16).reshape(ROWS, COLUMNS)
            self.assertTrue(np.array_equal(decoded, expected[z]), z)

    def test_a_cut_frame_is_refused_naming_it(self):
        _, frames = self.ojph_frames("ct12", 3)
        frames[1] = frames[1][: len(frames[1]) // 2]
        request = frames_request(HTJ2K, ROWS, COLUMNS, 16, 12, False, frames, [1] * 3, [0] * 3)
        with self.assertRaises(grpc.RpcError) as caught:
            self.stub.Morphology(request, timeout=60)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        details = wire_contract.error_info(caught.exception.trailing_metadata())
        self.assertEqual(
            (details.reason, details.field),
            ("CORRUPT_ENCODED_DATA", "input.dicom_frames.frames[1]"),
        )

    def test_server_info_and_metrics(self):
        info = self.stub.GetServerInfo(server_info_pb2.GetServerInfoRequest(), timeout=10)
        for uid in (
            HTJ2K,
            "1.2.840.10008.1.2.4.90",
            "1.2.840.10008.1.2.4.80",
            "1.2.840.10008.1.2.5",
            "1.2.840.10008.1.2.4.70",
        ):
            self.assertIn(uid, info.decodable_transfer_syntaxes)
        self.assertEqual(list(info.encodable_transfer_syntaxes), [HTJ2K])
        self.assertEqual(info.frame_decoder.startswith("nvjpeg2000"), ON_GPU, info.frame_decoder)
        _, frames = self.ojph_frames("ct12", 1)
        self.call(frames_request(HTJ2K, ROWS, COLUMNS, 16, 12, False, frames, [1], [0]))
        metrics = (
            urllib.request.urlopen(
                f"http://127.0.0.1:{self.server.metrics_port}/metrics", timeout=10
            )
            .read()
            .decode()
        )
        decoder = "gpu" if ON_GPU else "cpu"
        self.assertIn(f'cuimg_decode_duration_seconds_count{{decoder="{decoder}"}}', metrics)


if __name__ == "__main__":
    unittest.main()
