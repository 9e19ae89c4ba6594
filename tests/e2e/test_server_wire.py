"""The cuimg-server binary, called over the wire by an independent client (Python grpcio), and the
cuimg CLI against it. Morphology results are checked against scipy.ndimage (an independent oracle,
in 2D and 3D). Needs CUIMG_SERVER, CUIMG_CLIENT and the generated stubs on PYTHONPATH."""
import os
import subprocess
import tempfile
import threading
import unittest

import grpc
import numpy as np
from scipy import ndimage

from cuimg.v1 import imaging_service_pb2_grpc, morphology_pb2, types_pb2
from grpc_protocols import health_pb2, health_pb2_grpc
from grpc_protocols import reflection_pb2, reflection_pb2_grpc
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")

DTYPES = {
    types_pb2.PIXEL_TYPE_U8: np.uint8,
    types_pb2.PIXEL_TYPE_U16: np.uint16,
    types_pb2.PIXEL_TYPE_I16: np.int16,
    types_pb2.PIXEL_TYPE_F32: np.float32,
}


def to_proto(array, pixel_type):
    image = types_pb2.Image(
        pixel_type=pixel_type,
        width=array.shape[-1],
        height=array.shape[-2],
        depth=array.shape[0] if array.ndim == 3 else 0,
    )
    image.data = np.ascontiguousarray(array, dtype=DTYPES[pixel_type]).tobytes()
    return image


def from_proto(image):
    shape = (
        (image.depth, image.height, image.width) if image.depth > 1 else (image.height, image.width)
    )
    return np.frombuffer(image.data, dtype=DTYPES[image.pixel_type]).reshape(shape)


def step(op, shape, w, h, d=0):
    return morphology_pb2.MorphologyStep(
        op=op, element=morphology_pb2.StructuringElement(shape=shape, width=w, height=h, depth=d)
    )


def ball(r):
    z, y, x = np.mgrid[-r : r + 1, -r : r + 1, -r : r + 1]
    return (x * x + y * y + z * z) <= r * r


def ellipse_2d_cv(w, h):
    """OpenCV's getStructuringElement(MORPH_ELLIPSE) rule, restated with NumPy."""
    r, c = h // 2, w // 2
    mask = np.zeros((h, w), bool)
    for i in range(h):
        dy = i - r
        if abs(dy) <= r:
            dx = int(np.rint(c * np.sqrt((r * r - dy * dy) / (r * r)))) if r else 0
            mask[i, max(c - dx, 0) : min(c + dx + 1, w)] = True
    return mask


class ServerOverTheWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Yielding waits (a no-op on the CPU backend): on a GPU this suite checks results in that
        # mode, the others in the default one.
        cls.server = ServerProcess(
            SERVER, f"--backend={BACKEND}", "--worker_threads=2", "--cuda_sync=yield"
        )
        cls.channel = grpc.insecure_channel(
            cls.server.target,
            options=[("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)],
        )
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        code = cls.server.terminate()
        assert code == 0, f"server exited with {code}:\n{cls.server.log()}"

    def morph(self, array, pixel_type, *steps, **kwargs):
        request = morphology_pb2.MorphologyRequest(
            input=types_pb2.ImageSource(image=to_proto(array, pixel_type)),
            steps=list(steps),
            **kwargs,
        )
        return self.stub.Morphology(request, timeout=120)

    def test_health_reports_serving(self):
        health = health_pb2_grpc.HealthStub(self.channel)
        for service in ("", "cuimg.v1.Imaging"):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            self.assertEqual(reply.status, health_pb2.HealthCheckResponse.SERVING)

    def test_reflection_lists_the_service(self):
        stub = reflection_pb2_grpc.ServerReflectionStub(self.channel)
        replies = stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10
        )
        names = {s.name for r in replies for s in r.list_services_response.service}
        self.assertIn("cuimg.v1.Imaging", names)
        self.assertIn("grpc.health.v1.Health", names)
        replies = stub.ServerReflectionInfo(
            iter(
                [reflection_pb2.ServerReflectionRequest(file_containing_symbol="cuimg.v1.Imaging")]
            ),
            timeout=10,
        )
        self.assertTrue(any(r.file_descriptor_response.file_descriptor_proto for r in replies))

    def test_dilate_2d_matches_scipy(self):
        rng = np.random.default_rng(1)
        image = rng.integers(0, 256, size=(61, 83), dtype=np.uint8)
        reply = self.morph(
            image,
            types_pb2.PIXEL_TYPE_U8,
            step(morphology_pb2.MORPHOLOGY_OP_DILATE, morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 9, 7),
        )
        expected = ndimage.grey_dilation(
            image, footprint=ellipse_2d_cv(9, 7), mode="constant", cval=0
        )
        np.testing.assert_array_equal(from_proto(reply.result.image), expected)

    def test_3d_ball_and_per_slice_match_scipy(self):
        rng = np.random.default_rng(2)
        volume = rng.integers(-1024, 3000, size=(13, 29, 31), dtype=np.int16)
        reply = self.morph(
            volume,
            types_pb2.PIXEL_TYPE_I16,
            step(morphology_pb2.MORPHOLOGY_OP_ERODE, morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 7, 7, 7),
        )
        expected = ndimage.grey_erosion(volume, footprint=ball(3), mode="constant", cval=32767)
        np.testing.assert_array_equal(from_proto(reply.result.image), expected)
        # A 2D element on a volume works slice by slice.
        reply = self.morph(
            volume,
            types_pb2.PIXEL_TYPE_I16,
            step(morphology_pb2.MORPHOLOGY_OP_DILATE, morphology_pb2.ELEMENT_SHAPE_RECT, 5, 3),
        )
        expected = ndimage.grey_dilation(
            volume, footprint=np.ones((1, 3, 5), bool), mode="constant", cval=-32768
        )
        np.testing.assert_array_equal(from_proto(reply.result.image), expected)

    def test_float_box_matches_scipy(self):
        rng = np.random.default_rng(3)
        volume = rng.normal(size=(6, 20, 24)).astype(np.float32)
        reply = self.morph(
            volume,
            types_pb2.PIXEL_TYPE_F32,
            step(morphology_pb2.MORPHOLOGY_OP_DILATE, morphology_pb2.ELEMENT_SHAPE_RECT, 3, 5, 3),
        )
        expected = ndimage.grey_dilation(
            volume, footprint=np.ones((3, 5, 3), bool), mode="constant", cval=-np.inf
        )
        np.testing.assert_array_equal(from_proto(reply.result.image), expected)

    def test_bad_requests_name_the_field_and_the_server_keeps_serving(self):
        image = np.zeros((8, 8), np.uint8)
        good = step(morphology_pb2.MORPHOLOGY_OP_ERODE, morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3)
        cases = []
        bad = to_proto(image, types_pb2.PIXEL_TYPE_U8)
        bad.width = 0
        cases.append(
            (
                morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(image=bad), steps=[good]
                ),
                "input.image.width",
            )
        )
        bad = to_proto(image, types_pb2.PIXEL_TYPE_U8)
        bad.data = bad.data[:-1]
        cases.append(
            (
                morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(image=bad), steps=[good]
                ),
                "input.image.data",
            )
        )
        bad = to_proto(image, types_pb2.PIXEL_TYPE_U8)
        bad.pixel_type = 9
        cases.append(
            (
                morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(image=bad), steps=[good]
                ),
                "input.image.pixel_type",
            )
        )
        big = step(morphology_pb2.MORPHOLOGY_OP_ERODE, morphology_pb2.ELEMENT_SHAPE_RECT, 2000, 3)
        cases.append(
            (
                morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(image=to_proto(image, types_pb2.PIXEL_TYPE_U8)),
                    steps=[big],
                ),
                "steps[0].element.width",
            )
        )
        huge = types_pb2.Image(pixel_type=types_pb2.PIXEL_TYPE_U8, width=65536, height=65536)
        cases.append(
            (
                morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(image=huge), steps=[good]
                ),
                "max_pixels",
            )
        )
        for request, field in cases:
            with self.assertRaises(grpc.RpcError) as caught:
                self.stub.Morphology(request, timeout=10)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, field)
            self.assertIn(field, caught.exception.details())
        reply = self.morph(image, types_pb2.PIXEL_TYPE_U8, good)
        self.assertEqual(len(reply.result.image.data), 64)

    def test_metrics_endpoint_counts_requests(self):
        image = np.zeros((4, 4), np.uint8)
        self.morph(
            image,
            types_pb2.PIXEL_TYPE_U8,
            step(morphology_pb2.MORPHOLOGY_OP_ERODE, morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3),
        )
        text = self.server.metrics()
        self.assertIn('cuimg_requests_total{code="OK",rpc="Morphology"}', text)
        self.assertIn("cuimg_request_duration_seconds_bucket", text)
        self.assertIn(f'cuimg_build_info{{backend="{BACKEND}"', text)
        if BACKEND == "cuda":  # device memory and the buffer cache exist only on GPUs
            self.assertRegex(
                text, r'cuimg_device_memory_bytes\{device="cuda0",kind="total"\} [1-9]'
            )
            self.assertRegex(text, r'cuimg_buffer_cache_misses_total\{device="cuda0"\} [1-9]')

    def test_bad_server_flag_value_is_a_usage_error(self):
        run = subprocess.run(
            [SERVER, "--cuda_sync=sometimes", "--listen_address=127.0.0.1:0", "--metrics_address="],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("--cuda_sync auto|spin|yield|block", run.stderr)

    def test_cli_round_trip_and_exit_codes(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(DATA, "basketball1.png")
            out = os.path.join(tmp, "out.png")
            run = subprocess.run(
                [
                    CLIENT,
                    f"--target={self.server.target}",
                    "morphology",
                    f"--input={src}",
                    f"--output={out}",
                    "--steps=open:ellipse:5x5",
                    "--json",
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertGreater(os.path.getsize(out), 1000)
            self.assertIn('"output"', run.stdout)
            run = subprocess.run(
                [
                    CLIENT,
                    f"--target={self.server.target}",
                    "morphology",
                    f"--input={src}",
                    f"--output={out}",
                    "--size=3x3x3x3",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(run.returncode, 2)
            run = subprocess.run(
                [CLIENT, f"--target={self.server.target}", "health"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual((run.returncode, run.stdout.strip()), (0, "SERVING"))
            run = subprocess.run(
                [CLIENT, "--target=127.0.0.1:1", "--timeout=2", "health"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(run.returncode, 1)
            self.assertIn("UNAVAILABLE", run.stderr)


class GracefulShutdown(unittest.TestCase):
    def test_sigterm_lets_in_flight_requests_finish_and_exits_zero(self):
        server = ServerProcess(SERVER, f"--backend={BACKEND}", "--worker_threads=1")
        try:
            channel = grpc.insecure_channel(server.target)
            stub = imaging_service_pb2_grpc.ImagingStub(channel)
            image = np.random.default_rng(4).integers(0, 256, (400, 400), np.uint8)
            request = morphology_pb2.MorphologyRequest(
                input=types_pb2.ImageSource(image=to_proto(image, types_pb2.PIXEL_TYPE_U8)),
                steps=[
                    step(
                        morphology_pb2.MORPHOLOGY_OP_DILATE,
                        morphology_pb2.ELEMENT_SHAPE_ELLIPSE,
                        45,
                        45,
                    )
                ],
            )
            result = {}
            call = threading.Thread(
                target=lambda: result.update(reply=stub.Morphology(request, timeout=120))
            )
            call.start()
            import time

            time.sleep(0.3)
            code = server.terminate()
            call.join()
            self.assertEqual(code, 0, server.log())
            self.assertEqual(len(result["reply"].result.image.data), 400 * 400)
            self.assertIn("event=shutdown", server.log())
            channel.close()
        finally:
            server.kill()


if __name__ == "__main__":
    unittest.main(verbosity=2)
