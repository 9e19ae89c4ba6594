"""Where JPEG inputs decode, over the wire (real cuimg-server, Python grpcio): --jpeg_decoder's
start-up rules; the timing trailer's decode_device and the decode metrics by decoder; corrupt and
truncated JPEGs refused with INVALID_ARGUMENT naming input.encoded whichever decoder is active;
files nvJPEG cannot take (progressive on the hardware decoder, CMYK) decoded on the CPU. On the
CUDA backend (CUIMG_BACKEND=cuda, the GPU machine) with nvJPEG: JPEGs decode on the device, and
detections on the vtest frames and other JPEGs agree with the CPU decoder's (libjpeg-turbo, which
decodes as OpenCV 4.6 does; our detector is OpenCV's) at precision and recall >= 0.97."""
import glob
import io
import os
import subprocess
import unittest

import grpc
import numpy as np

try:
    from PIL import Image
except ImportError:  # the GPU machine's Python may have no Pillow
    Image = None

from cuimg import wire_contract
from cuimg.v1 import detection_pb2, imaging_service_pb2_grpc, pyramid_pb2, types_pb2
from detect_inputs import DATA, read
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
ON_GPU = BACKEND == "cuda"


def jpeg_files(gray=False):
    """The vtest frames the GPU bundle carries, and the sample JPEGs of any data folder; with
    `gray`, the one-component ones (Pyramid returns the decoded image only for one channel)."""
    if gray:
        files = sorted(glob.glob(os.path.join(DATA, "vtest_gray_*.jpg")))
        files += [os.path.join(DATA, n) for n in ("left01.jpg", "ellipses.jpg")]
    else:
        files = sorted(glob.glob(os.path.join(DATA, "vtest_[0-9]*.jpg")))
        files += [
            os.path.join(DATA, n)
            for n in ("HappyFish.jpg", "fruits.jpg", "baboon.jpg", "building.jpg", "home.jpg")
        ]
    return [f for f in files if os.path.exists(f)]


def timing(call):
    return wire_contract.timing(call.trailing_metadata())


def metric_value(text, name, labels):
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def iou(a, b):
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    w = max(0, min(ax + aw, bx + bw) - max(ax, bx))
    h = max(0, min(ay + ah, by + bh) - max(ay, by))
    inter = w * h
    return inter / float(aw * ah + bw * bh - inter)


def corrupt_variants(jpeg):
    """Truncated copies, and copies with bytes of the entropy-coded data overwritten."""
    rng = np.random.default_rng(7)
    sos = jpeg.index(b"\xff\xda")
    out = [jpeg[: len(jpeg) // 2], jpeg[:-2], jpeg[: sos + 40]]
    for _ in range(12):
        b = bytearray(jpeg)
        for at in rng.integers(sos + 20, len(jpeg) - 2, size=4):
            b[at] = 0xFF if rng.random() < 0.3 else int(rng.integers(0, 256))
        out.append(bytes(b))
    return out


class JpegDecoderFlag(unittest.TestCase):
    def run_server(self, *flags):
        return subprocess.run(
            [SERVER, "--listen_address=127.0.0.1:0", "--metrics_address=", *flags],
            capture_output=True,
            text=True,
            timeout=60,
        )

    def test_an_unknown_decoder_is_a_usage_error(self):
        result = self.run_server("--jpeg_decoder=fpga")
        self.assertEqual(result.returncode, 2)
        self.assertIn("--jpeg_decoder auto|gpu|cpu", result.stderr)

    def test_batch_sizes_and_lanes_out_of_range_are_usage_errors(self):
        for flag, wanted in (
            ("--batch_lanes=0", "--[detect_]batch_lanes must be in [1, 8]"),
            ("--detect_batch_lanes=9", "--[detect_]batch_lanes must be in [1, 8]"),
            ("--batch_max_size=65", "--[detect_]batch_max_size must be in [1, 64]"),
            ("--batch_max_delay_us=-1", "--batch_max_delay_us must be >= 0"),
        ):
            with self.subTest(flag=flag):
                result = self.run_server("--backend=cpu", flag)
                self.assertEqual(result.returncode, 2)
                self.assertIn(wanted, result.stderr)

    def test_gpu_decoding_on_the_cpu_backend_stops_the_server(self):
        result = self.run_server("--backend=cpu", "--jpeg_decoder=gpu")
        self.assertEqual(result.returncode, 1)
        self.assertIn("startup_failed", result.stdout + result.stderr)
        self.assertIn("--jpeg_decoder=gpu needs the CUDA backend", result.stdout + result.stderr)


class JpegDecodeOverTheWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # On the GPU machine the GPU decoder is required: a bundle without libnvjpeg fails here.
        flags = ["--jpeg_decoder=gpu"] if ON_GPU else []
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}", *flags)
        cls.channel = cls.server.channel()
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)
        cls.hardware = 'nvjpeg_backend="hardware' in cls.server.log()
        # The same backend decoding every JPEG with libjpeg-turbo: the reference.
        cls.cpu = ServerProcess(SERVER, f"--backend={BACKEND}", "--jpeg_decoder=cpu")
        cls.cpu_channel = cls.cpu.channel()
        cls.cpu_stub = imaging_service_pb2_grpc.ImagingStub(cls.cpu_channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.cpu_channel.close()
        assert cls.server.terminate() == 0, cls.server.log()
        assert cls.cpu.terminate() == 0, cls.cpu.log()

    def detect(self, jpeg, stub=None):
        """DetectPedestrians on `jpeg` (any channel count) + timing."""
        return (stub or self.stub).DetectPedestrians.with_call(
            detection_pb2.DetectPedestriansRequest(input=types_pb2.ImageSource(encoded=jpeg)),
            timeout=60,
        )

    def pyramid_level0(self, jpeg, stub=None):
        """A server's decode of `jpeg` (level 0 of a one-level pyramid is the image) + timing."""
        reply, call = (stub or self.stub).Pyramid.with_call(
            pyramid_pb2.PyramidRequest(
                input=types_pb2.ImageSource(encoded=jpeg),
                levels=1,
                output_type=types_pb2.PIXEL_TYPE_U8,
            ),
            timeout=60,
        )
        return reply.levels[0].result.image, timing(call)

    def test_the_start_up_line_names_the_decoder(self):
        line = next(entry for entry in self.server.log().splitlines() if "event=startup" in entry)
        self.assertIn("jpeg_decoder=gpu" if ON_GPU else "jpeg_decoder=cpu", line)

    def test_the_trailer_and_the_metrics_say_where_a_jpeg_decoded(self):
        before = self.server.metrics()
        decoder = "gpu" if ON_GPU else "cpu"
        count = metric_value(before, "cuimg_decode_duration_seconds_count", {"decoder": decoder})
        reply, call = self.stub.DetectPedestrians.with_call(
            detection_pb2.DetectPedestriansRequest(
                input=types_pb2.ImageSource(encoded=read("HappyFish.jpg"))
            ),
            timeout=60,
        )
        t = timing(call)
        self.assertGreater(t["decode_us"], 0)
        if ON_GPU:
            self.assertGreaterEqual(t["decode_device"], 0)
            self.assertEqual(t["decode_device"], t["device"])
        else:
            self.assertEqual(t["decode_device"], -1)
        after = self.server.metrics()
        self.assertEqual(
            metric_value(after, "cuimg_decode_duration_seconds_count", {"decoder": decoder}),
            count + 1,
        )

    def test_corrupt_and_truncated_jpegs_are_refused_as_the_cpu_decoder_refuses_them(self):
        refused = 0
        for i, bad in enumerate(corrupt_variants(read("HappyFish.jpg"))):
            outcomes = []
            for stub in (self.stub, self.cpu_stub):
                try:
                    self.detect(bad, stub)
                    outcomes.append("OK")
                except grpc.RpcError as e:
                    self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT, f"variant {i}")
                    self.assertIn("input.encoded", e.details(), f"variant {i}")
                    outcomes.append("INVALID_ARGUMENT")
            # A file libjpeg-turbo decodes without a warning (a changed coefficient) is an image.
            # Truncated files (the first three) are refused by the marker walk before any decode;
            # nvJPEG does not check the entropy-coded data as libjpeg-turbo's warnings do, so on
            # the GPU a copy with overwritten scan bytes may decode (docs/design.md).
            if i < 3 or not ON_GPU:
                self.assertEqual(outcomes[0], outcomes[1], f"variant {i}: this server, CPU decoder")
            elif outcomes[0] != outcomes[1]:
                print(f"variant {i}: GPU decoder {outcomes[0]}, CPU decoder {outcomes[1]}")
            refused += outcomes[1] != "OK"
        self.assertGreaterEqual(refused, 3, "the truncated copies at least")
        # The server serves on: the sound file still decodes.
        _, call = self.detect(read("HappyFish.jpg"))
        self.assertGreater(timing(call)["decode_us"], 0)

    def test_decoded_pixels_match_an_independent_decoder(self):
        """Every gray sample JPEG as this server decodes it, against Pillow's decode (libjpeg-turbo
        through another binding than cuimg's codec, which decodes in strips): equal on the CPU
        decoder. On the GPU (nvJPEG: another IDCT) the largest and mean |d| are printed and the
        mean held <= 2, against Pillow or, where the GPU machine has none, against the CPU
        decoder's libjpeg-turbo (colour files: benchmarks/jpeg_decode_compare)."""
        files = jpeg_files(gray=True)
        self.assertTrue(files)
        if Image is None:
            self.assertTrue(ON_GPU, "Pillow (python3-pil) is the CPU decoder's reference")
        for path in files:
            jpeg = read(path)
            ours, t = self.pyramid_level0(jpeg)
            if Image is not None:
                with Image.open(io.BytesIO(jpeg)) as decoded:
                    self.assertEqual(decoded.mode, "L", path)
                    theirs = np.asarray(decoded).reshape(-1)
                    shape = (decoded.width, decoded.height, 1)
            else:
                cpu, _ = self.pyramid_level0(jpeg, self.cpu_stub)
                theirs = np.frombuffer(cpu.data, np.uint8)
                shape = (cpu.width, cpu.height, cpu.channels)
            self.assertEqual((ours.width, ours.height, ours.channels), shape, path)
            d = np.abs(np.frombuffer(ours.data, np.uint8).astype(int) - theirs.astype(int))
            print(
                f"{os.path.basename(path)}: decode_device={int(t['decode_device'])} "
                f"max |d| {d.max()} mean |d| {d.mean():.4f}"
            )
            if not ON_GPU:
                self.assertEqual(d.max(), 0, path)
            else:
                self.assertGreaterEqual(t["decode_device"], 0, path)
                self.assertLessEqual(d.mean(), 2.0, path)

    @unittest.skipUnless(ON_GPU, "GPU decoding needs the CUDA backend")
    def test_detections_on_gpu_decoded_jpegs_agree_with_the_cpu_decoders(self):
        matched = ours_total = theirs_total = 0
        for path in jpeg_files():
            request = detection_pb2.DetectPedestriansRequest(
                input=types_pb2.ImageSource(encoded=read(path))
            )
            ours = [
                (d.x, d.y, d.width, d.height)
                for d in self.stub.DetectPedestrians(request, timeout=60).detections
            ]
            theirs = [
                (d.x, d.y, d.width, d.height)
                for d in self.cpu_stub.DetectPedestrians(request, timeout=60).detections
            ]
            used = set()
            for box in ours:
                best = max(
                    ((iou(box, t), k) for k, t in enumerate(theirs) if k not in used),
                    default=(0, -1),
                )
                if best[0] >= 0.5:
                    used.add(best[1])
                    matched += 1
            ours_total += len(ours)
            theirs_total += len(theirs)
        precision = matched / max(ours_total, 1)
        recall = matched / max(theirs_total, 1)
        print(
            f"detections: {ours_total} on GPU-decoded, {theirs_total} on CPU-decoded, "
            f"{matched} matched: precision {precision:.4f} recall {recall:.4f}"
        )
        self.assertGreater(theirs_total, 0, "no detections to compare: is CUIMG_DATA set?")
        self.assertGreaterEqual(precision, 0.97)
        self.assertGreaterEqual(recall, 0.97)

    @unittest.skipUnless(ON_GPU, "GPU decoding needs the CUDA backend")
    def test_files_nvjpeg_cannot_take_decode_on_the_cpu_and_are_counted(self):
        # The fuzz corpus's samples, which the bundle carries in its data folder.
        names = ["cmyk.jpg"] + (["progressive.jpg"] if self.hardware else [])
        before = self.server.metrics()
        for name in names:
            # CMYK decodes on the CPU (converted to BGR as OpenCV's imread does).
            _, call = self.detect(read(name))
            self.assertGreater(timing(call)["decode_us"], 0, name)
            self.assertEqual(timing(call)["decode_device"], -1, name)
        after = self.server.metrics()
        self.assertEqual(
            metric_value(after, "cuimg_jpeg_cpu_fallbacks_total", {"reason": "unsupported"})
            - metric_value(before, "cuimg_jpeg_cpu_fallbacks_total", {"reason": "unsupported"}),
            len(names),
        )


if __name__ == "__main__":
    unittest.main()
