"""The Python client's streamed volumes (cuimg.volume_stream) over the wire on a real cuimg-server:
for every pixel type, random 3D chains (with anchors) whose z halo spans several slabs, and
Gradient, the streamed result equals the unary RPC's bit for bit over 1 to 9 streams; the client
picks streaming by its threshold; results are writable and big-endian input is converted; the
part split and halo equal the cuimg CLI's (both recorded by an echoing ProcessVolumeStream
server); a server killed mid-stream is a clear CuimgError (never a partial array), one restarted
in time has its parts sent again, and a deadline ends the streams. The hand-encoded wire
messages equal protobuf's."""
import os
import subprocess
import tempfile
import threading
import time
import unittest
from concurrent import futures

import grpc
import numpy as np

import cuimg
from cuimg import _wire
from cuimg.volume_stream import split_depth, z_reach
from cuimg.v1 import morphology_pb2, streaming_pb2
from grpc_protocols import health_pb2
from server_process import ServerProcess
from test_volume_stream_wire import write_tiff_u16

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
DTYPES = (np.uint8, np.uint16, np.int16, np.float32)
# On one worker thread this takes seconds on the CPU backend: long enough to kill the server
# while the streams are in flight.
SLOW_STEPS = "dilate:ellipse:31x31x9"


def random_volume(rng, dtype, shape):
    if dtype == np.float32:
        return rng.normal(scale=100, size=shape).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


def random_steps(rng):
    steps = []
    for _ in range(int(rng.integers(1, 3))):
        three_d = rng.random() < 0.8
        element = morphology_pb2.StructuringElement(
            shape=int(rng.integers(1, 4)),
            width=int(rng.integers(1, 8)),
            height=int(rng.integers(1, 8)),
            depth=int(rng.integers(1, 6)) if three_d else 0,
        )
        if three_d and rng.random() < 0.4:
            element.anchor_z = int(rng.integers(element.depth))
        step = morphology_pb2.MorphologyStep(
            op=int(rng.integers(1, 8)), element=element, iterations=int(rng.integers(1, 3))
        )
        if rng.random() < 0.2:
            step.border_mode = morphology_pb2.BORDER_MODE_CONSTANT
            step.border_value = float(rng.integers(-50, 300))
        steps.append(step)
    return steps


class EchoStreams(grpc.GenericRpcHandler):
    """A ProcessVolumeStream server that returns every slab as it came (a morphology result of
    the same type and size) and records, per stream, (first input slice, slices): with slice z
    of the volume filled with z, the first slab's first value is the part's first slice."""

    def __init__(self):
        self.parts = []
        self._lock = threading.Lock()

    def service(self, details):
        if details.method != "/cuimg.v1.Imaging/ProcessVolumeStream":
            return None
        return grpc.stream_stream_rpc_method_handler(
            self._echo,
            request_deserializer=streaming_pb2.VolumeStreamRequest.FromString,
            response_serializer=streaming_pb2.VolumeStreamResponse.SerializeToString,
        )

    def _echo(self, requests, context):
        header, z, first = None, 0, None
        for request in requests:
            if request.HasField("header"):
                header = request.header
                continue
            n = len(request.slab) // (header.volume.width * header.volume.height * 2)
            if first is None:
                first = int(np.frombuffer(request.slab[:2], "<u2")[0])
            yield streaming_pb2.VolumeStreamResponse(z_begin=z, slices=n, data=request.slab)
            z += n
        with self._lock:
            self.parts.append((first, max(header.volume.depth, 1)))

    def take(self):
        with self._lock:
            parts, self.parts = sorted(self.parts), []
        return parts


class PythonVolumeStream(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, "--backend=cpu", "--worker_threads=4")
        cls.unary = cuimg.Client(cls.server.target, timeout=120, stream_threshold=None)

    @classmethod
    def tearDownClass(cls):
        cls.unary.close()
        assert cls.server.terminate() == 0, cls.server.log()

    def test_streamed_equals_unary_for_every_type_and_halos_across_slabs(self):
        rng = np.random.default_rng(11)
        cases = 0
        for case in range(24):
            dtype = DTYPES[case % len(DTYPES)]
            shape = (int(rng.integers(2, 15)), int(rng.integers(1, 30)), int(rng.integers(1, 40)))
            volume = random_volume(rng, dtype, shape)
            steps = random_steps(rng)
            unary = self.unary.morphology(volume, steps)
            slice_bytes = shape[1] * shape[2] * volume.itemsize
            for streams, slab_slices in ((1, 1), (3, 1), (4, 2), (9, 3)):
                # One slice per slab puts a halo of several slices over several slabs.
                with cuimg.Client(
                    self.server.target,
                    timeout=120,
                    stream_threshold=0,
                    volume_streams=streams,
                    slab_bytes=slab_slices * slice_bytes,
                ) as c:
                    got = c.morphology(volume, steps)
                    with self.subTest(
                        case=case,
                        dtype=dtype.__name__,
                        shape=shape,
                        streams=streams,
                        reach=z_reach(steps),
                    ):
                        self.assertIsNotNone(c.last_stream)
                        self.assertEqual(
                            len(c.last_stream.timings), len(split_depth(shape[0], streams, 0))
                        )
                        self.assertEqual((got.dtype, got.shape), (volume.dtype, volume.shape))
                        self.assertTrue(got.flags.writeable)
                        self.assertTrue(got.tobytes() == unary.tobytes(), "streamed != unary")
                        cases += 1
        self.assertEqual(cases, 24 * 4)

    def test_gradient_streamed_equals_unary(self):
        rng = np.random.default_rng(12)
        volume = rng.integers(-3000, 3000, size=(9, 33, 45), dtype=np.int16)
        unary = self.unary.gradient(volume, kernel_length=5, magnitude=True, angle=True)
        with cuimg.Client(
            self.server.target, stream_threshold=0, volume_streams=3, slab_bytes=2 * 33 * 45 * 2
        ) as c:
            got = c.gradient(volume, kernel_length=5, magnitude=True, angle=True)
            self.assertEqual(len(c.last_stream.timings), 3)
        self.assertEqual(sorted(got), ["angle", "gx", "gy", "magnitude"])
        for name in got:
            self.assertEqual(got[name].dtype, np.float32)
            self.assertTrue(got[name].tobytes() == unary[name].tobytes(), name)

    def test_threshold_picks_the_path_and_results_are_writable_native_arrays(self):
        rng = np.random.default_rng(13)
        volume = rng.integers(0, 60000, size=(6, 20, 25), dtype=np.uint16)  # 6000 bytes
        with cuimg.Client(self.server.target, stream_threshold=volume.nbytes - 1) as c:
            streamed = c.morphology(volume, "close:rect:3x3x3")
            self.assertIn("stream 1/3:", c.last_timing)
            c.last_stream = None
            unary = c.morphology(volume[:, :, :-1], "close:rect:3x3x3")  # at or below: unary
            self.assertIsNone(c.last_stream)
            self.assertNotIn("stream 1/", c.last_timing)
            forced = c.morphology(volume[:, :, :-1], "close:rect:3x3x3", stream=True)
            self.assertIsNotNone(c.last_stream)
            self.assertTrue(forced.tobytes() == unary.tobytes())
            c.last_stream = None
            c.morphology(volume, "close:rect:3x3x3", stream=False)
            self.assertIsNone(c.last_stream)
            # Big-endian and non-contiguous input: converted, same result, native output.
            swapped = c.morphology(volume.astype(">u2"), "close:rect:3x3x3")
            strided = c.morphology(np.asfortranarray(volume), "close:rect:3x3x3")
        self.assertTrue(swapped.tobytes() == streamed.tobytes())
        self.assertTrue(strided.tobytes() == streamed.tobytes())
        for out in (streamed, unary, swapped, strided):
            self.assertTrue(out.flags.writeable)
            self.assertTrue(out.dtype.isnative)
            out[0, 0, 0] = 1  # writable for real
        self.assertTrue(np.shares_memory(cuimg.client.little_endian(volume), volume))  # no copy

    def test_split_and_halo_equal_the_clis(self):
        echo = EchoStreams()
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=20), handlers=[echo])
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        target = f"127.0.0.1:{port}"
        depth = 64
        volume = np.broadcast_to(
            np.arange(depth, dtype=np.uint16)[:, None, None], (depth, 9, 11)
        ).copy()
        chains = [
            f"{op}:{shape}:3x3{'x%d' % d if d else ''}:{it}"
            for op in ("erode", "dilate", "open", "close", "gradient", "tophat", "blackhat")
            for shape, d in (("rect", 0), ("cross", 1), ("ellipse", 2), ("rect", 3), ("cross", 5))
            for it in (1, 3)
        ]
        chains += ["open:ellipse:5x5x3,dilate:rect:3x3x4:2", "blackhat:cross:3x3x2,erode:rect:3x3"]
        try:
            with tempfile.TemporaryDirectory() as d:
                src = os.path.join(d, "in.tif")
                write_tiff_u16(src, volume)
                for k, steps in enumerate(chains):
                    streams = (4, 3, 9)[k % 3]
                    run = subprocess.run(
                        [
                            CLIENT,
                            "morphology",
                            f"--target={target}",
                            f"--input={src}",
                            f"--output={d}/out.tif",
                            f"--steps={steps}",
                            "--slab_slices=5",
                            f"--volume_streams={streams}",
                        ],
                        capture_output=True,
                        text=True,
                        timeout=60,
                    )
                    self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                    cli = echo.take()
                    with cuimg.Client(
                        target,
                        stream_threshold=0,
                        volume_streams=streams,
                        slab_bytes=5 * 9 * 11 * 2,
                    ) as c:
                        out = c.morphology(volume, steps)
                    python = echo.take()
                    expected = sorted(
                        (p.in_begin, p.in_end - p.in_begin)
                        for p in split_depth(depth, streams, z_reach(cuimg.parse_steps(steps)))
                    )
                    with self.subTest(steps=steps, streams=streams):
                        self.assertEqual(python, cli)
                        self.assertEqual(python, expected)
                        # Each part kept only its own slices of the echo: the volume itself.
                        self.assertTrue(out.tobytes() == volume.tobytes())
        finally:
            server.stop(None)

    def test_a_killed_server_fails_the_volume_and_a_restarted_one_gets_it_again(self):
        rng = np.random.default_rng(14)
        volume = rng.integers(0, 256, size=(32, 128, 128), dtype=np.uint8)
        flags = ("--backend=cpu", "--worker_threads=1", "--cpu_threads_per_request=1")
        server = ServerProcess(SERVER, *flags)
        outcome = {}

        def call(client):
            try:
                outcome["result"] = client.morphology(volume, SLOW_STEPS)
            except cuimg.CuimgError as e:
                outcome["error"] = e

        try:
            with cuimg.Client(server.target, stream_threshold=0, timeout=120) as c:
                worker = threading.Thread(target=call, args=(c,))
                began = time.monotonic()
                worker.start()
                time.sleep(0.5)
                server.kill()  # SIGKILL: the connections drop mid-stream
                worker.join(60)
                self.assertFalse(worker.is_alive())
            self.assertNotIn("result", outcome)
            self.assertEqual(outcome["error"].code, grpc.StatusCode.UNAVAILABLE, outcome["error"])
            self.assertLess(time.monotonic() - began, 30)

            # Killed again, then restarted on the same port within the client's reconnect wait:
            # every part is streamed once more and the volume is whole. gRPC's own retries are
            # off (max_attempts=1), so the resend is the client's.
            outcome.clear()
            server = ServerProcess(SERVER, *flags)
            with cuimg.Client(server.target, stream_threshold=0, timeout=120, max_attempts=1) as c:
                worker = threading.Thread(target=call, args=(c,))
                worker.start()
                time.sleep(0.5)
                server.kill()
                server = ServerProcess(SERVER, *flags, listen=server.target)
                worker.join(120)
                self.assertNotIn("error", outcome)
                self.assertIn(2, c.last_stream.attempts)
                self.assertIn("(sent twice)", c.last_timing)
            expected = self.unary.morphology(volume, SLOW_STEPS)
            self.assertTrue(outcome["result"].tobytes() == expected.tobytes())
        finally:
            server.kill()

    def test_a_deadline_ends_the_streams(self):
        volume = np.random.default_rng(15).integers(0, 256, size=(32, 128, 128), dtype=np.uint8)
        server = ServerProcess(
            SERVER, "--backend=cpu", "--worker_threads=1", "--cpu_threads_per_request=1"
        )
        try:
            with cuimg.Client(server.target, stream_threshold=0, timeout=0.5) as c:
                began = time.monotonic()
                with self.assertRaises(cuimg.CuimgError) as e:
                    c.morphology(volume, SLOW_STEPS)
                self.assertEqual(e.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED)
                self.assertLess(time.monotonic() - began, 5)
        finally:
            self.assertEqual(server.terminate(), 0, server.log())

    def test_wire_messages_equal_protobufs(self):
        data = bytes(range(256)) * 700  # a length of three varint bytes
        self.assertEqual(
            _wire.encode_slab(memoryview(data)),
            streaming_pb2.VolumeStreamRequest(slab=data).SerializeToString(),
        )
        for z_begin, slices, payload in ((0, 1, b""), (5, 300, data), (2**31, 7, b"x")):
            encoded = streaming_pb2.VolumeStreamResponse(
                z_begin=z_begin, slices=slices, data=payload
            ).SerializeToString()
            got = _wire.decode_volume_stream_response(encoded)
            self.assertEqual((got[0], got[1], bytes(got[2])), (z_begin, slices, payload))
        for service in ("", "cuimg.v1.Imaging"):
            self.assertEqual(
                _wire.encode_health_request(service),
                health_pb2.HealthCheckRequest(service=service).SerializeToString(),
            )
        for status, name in _wire.HEALTH_STATUS.items():
            self.assertEqual(health_pb2.HealthCheckResponse.ServingStatus.Name(status), name)
            self.assertEqual(
                _wire.decode_health_response(
                    health_pb2.HealthCheckResponse(status=status).SerializeToString()
                ),
                name,
            )
        for value in (0, 1, 127, 128, 300, 2**32, 2**64 - 1):
            self.assertEqual(
                _wire.decode_fields(_wire.encode_varint(8) + _wire.encode_varint(value))[1], value
            )
        with self.assertRaises(ValueError):
            _wire.decode_volume_stream_response(b"\x1a\x05ab")  # 5 bytes announced, 2 sent


if __name__ == "__main__":
    unittest.main(verbosity=2)
