"""DetectStream over the wire (real cuimg-server, Python grpcio and cuimg.Client.detect_stream):
every frame's result equals a unary DetectPedestrians call's on the same request, in order, with
its index and id, for encoded, raw gray and raw BGR frames and parameters that change between
frames; a refused frame ends the stream after the frames before it, with an error naming the
field and the frame; a client that stops reading is held back by flow control while the server
holds at most 4 of its frames (the DetectStreamFrame in-flight gauge) and its memory stays flat,
also under several clients sending forever without reading; a client that cancels mid-stream
leaves nothing behind and other clients are served.
Runs on the CPU backend in CI and on the CUDA backend on the GPU machine (CUIMG_BACKEND)."""
import os
import re
import threading
import time
import unittest

import grpc
import numpy as np

import cuimg
from cuimg.v1 import detection_pb2, imaging_service_pb2_grpc, types_pb2
from detect_inputs import image_proto, read, server_decoded_gray
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
# What the server holds of one stream at most (detect_stream_rpc.cc, detection.proto).
FRAMES_IN_FLIGHT = 4  # the server's bound, set below (its default is 16)
# Frames a never-reading client's generator may hand gRPC at most: the HTTP/2 windows and socket
# buffers between it and the server hold ~2650 of the 15 KB frames of the held-back test.
PULLED_CAP = 10000


def boxes(response):
    return [(d.x, d.y, d.width, d.height, d.score, d.scale) for d in response.detections]


def frame_stats(server):
    """The DetectStreamFrame in-flight gauge (frames the server holds, every stream together)."""
    text = server.metrics()
    match = re.search(r'(?m)^cuimg_inflight_requests\{rpc="DetectStreamFrame"\} (\S+)$', text)
    return float(match.group(1)) if match else 0.0


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024


def wait_for(predicate, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


class DetectStreamOverTheWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(
            SERVER, f"--backend={BACKEND}", f"--stream_frames_in_flight={FRAMES_IN_FLIGHT}"
        )
        cls.channel = cls.server.channel()
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)
        # The server's own decoding of basketball2.png (pyramid level 0 is a copy), and a colour
        # frame made from it.
        cls.gray = server_decoded_gray(cls.stub, "basketball2.png")
        cls.bgr = np.ascontiguousarray(np.stack([cls.gray, cls.gray // 2, 255 - cls.gray], -1))

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        # A clean exit: under AddressSanitizer a leak makes it nonzero (scripts/sanitize.sh).
        assert cls.server.terminate() == 0, cls.server.log()

    def requests(self):
        """Frames of every kind, with parameters that change between frames."""
        d = detection_pb2.DetectPedestriansRequest
        src = types_pb2.ImageSource
        return [
            d(input=src(encoded=read("basketball1.png"))),
            d(input=src(encoded=read("basketball2.png")), hit_threshold=-0.5),
            d(input=src(image=image_proto(self.gray))),
            d(input=src(image=image_proto(self.bgr)), win_stride=16),
            d(
                input=src(encoded=read("HappyFish.jpg")),
                grouping=detection_pb2.GROUPING_NONE,
                hit_threshold=-1,
            ),
            d(input=src(image=image_proto(self.gray[:100, :50]))),  # smaller than a window
            d(input=src(encoded=read("fruits.jpg")), model="opencv_daimler_48x96"),
        ]

    def test_results_equal_unary_calls_in_order_with_ids(self):
        requests = self.requests()
        unary = [self.stub.DetectPedestrians(r, timeout=120) for r in requests]
        frames = [
            detection_pb2.DetectFrame(request=r, id=f"frame-{i}") for i, r in enumerate(requests)
        ]
        # Twice over, so that frames of one stream run at once.
        replies = list(self.stub.DetectStream(iter(frames + frames), timeout=300))
        self.assertEqual([r.index for r in replies], list(range(2 * len(frames))))
        self.assertEqual([r.id for r in replies], [f.id for f in frames] * 2)
        for reply, want in zip(replies, unary + unary):
            self.assertEqual(boxes(reply.result), boxes(want))
            self.assertEqual(
                (reply.result.levels, reply.result.windows, reply.result.model),
                (want.levels, want.windows, want.model),
            )
        self.assertTrue(any(r.result.detections for r in replies))
        counts = self.server.request_counts()
        self.assertGreaterEqual(counts.get(("DetectStream", "OK"), 0), 1)
        self.assertGreaterEqual(counts.get(("DetectStreamFrame", "OK"), 0), 2 * len(frames))

    def test_python_client_detect_stream(self):
        with cuimg.Client(self.server.target) as client:
            want = [
                client.detect(encoded=read("basketball1.png")),
                client.detect(self.bgr),
                client.detect(self.gray, hit_threshold=0.3),
            ]
            got = list(
                client.detect_stream(
                    [read("basketball1.png"), ("bgr", self.bgr), self.gray], hit_threshold=0.0
                )
            )
            self.assertEqual([g["index"] for g in got], [0, 1, 2])
            self.assertEqual([g["id"] for g in got], ["", "bgr", ""])
            self.assertEqual([g["detections"] for g in got[:2]], want[:2])
            self.assertIn("kernel_us=", client.last_timing)
            # A generator in; leaving the iterator early cancels the stream.
            endless = (self.gray for _ in iter(int, 1))
            results = client.detect_stream(endless, hit_threshold=0.3)
            self.assertEqual(next(results)["detections"], want[2])
            results.close()
            self.assertTrue(wait_for(lambda: frame_stats(self.server) == 0))
            with self.assertRaises(cuimg.CuimgError) as error:
                list(client.detect_stream([self.gray, b"not an image"]))
            self.assertEqual(error.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("request.input.encoded", error.exception.details)

    def stream_until_error(self, frames):
        """The results before the error, and the error."""
        got = []
        with self.assertRaises(grpc.RpcError) as error:
            for reply in self.stub.DetectStream(iter(frames), timeout=120):
                got.append(reply.index)
        return got, error.exception

    def test_a_refused_frame_ends_the_stream_naming_the_field_and_the_frame(self):
        good = detection_pb2.DetectPedestriansRequest(
            input=types_pb2.ImageSource(image=image_proto(self.gray[:200, :200]))
        )

        def frame(request=good, id=""):
            return detection_pb2.DetectFrame(request=request, id=id)

        bad_cases = [
            (
                detection_pb2.DetectPedestriansRequest(
                    input=types_pb2.ImageSource(encoded=b"\x89PNG but not")
                ),
                grpc.StatusCode.INVALID_ARGUMENT,
                "request.input.encoded",
            ),
            (
                detection_pb2.DetectPedestriansRequest(
                    input=good.input, hit_threshold=float("nan")
                ),
                grpc.StatusCode.INVALID_ARGUMENT,
                "request.hit_threshold",
            ),
            (
                detection_pb2.DetectPedestriansRequest(input=good.input, win_stride=12),
                grpc.StatusCode.INVALID_ARGUMENT,
                "request.win_stride",
            ),
            (
                detection_pb2.DetectPedestriansRequest(input=good.input, model="nope"),
                grpc.StatusCode.NOT_FOUND,
                "request.model",
            ),
            (
                detection_pb2.DetectPedestriansRequest(
                    input=types_pb2.ImageSource(image=image_proto(np.zeros((8, 8, 2), np.uint8)))
                ),
                grpc.StatusCode.INVALID_ARGUMENT,
                "request.input.image",
            ),
            (
                detection_pb2.DetectPedestriansRequest(input=types_pb2.ImageSource(handle="gone")),
                grpc.StatusCode.NOT_FOUND,
                "request.input.handle",
            ),
        ]
        for request, code, field in bad_cases:
            with self.subTest(field=field):
                got, error = self.stream_until_error(
                    [frame(), frame(), frame(request, "cam\n7"), frame(), frame()]
                )
                self.assertEqual(got, [0, 1])
                self.assertEqual(error.code(), code)
                self.assertTrue(error.details().startswith(field + ":"), error.details())
                self.assertIn("(frame 2, id 'cam\\n7')", error.details())
        got, error = self.stream_until_error([frame(), detection_pb2.DetectFrame(id="x")])
        self.assertEqual((got, error.code()), ([0], grpc.StatusCode.INVALID_ARGUMENT))
        self.assertTrue(error.details().startswith("request: is required"), error.details())
        got, error = self.stream_until_error([frame(id="x" * 129)])
        self.assertEqual((got, error.code()), ([], grpc.StatusCode.INVALID_ARGUMENT))
        self.assertTrue(error.details().startswith("id: 129 bytes"), error.details())
        # An empty stream is fine: no frames, no results.
        self.assertEqual(list(self.stub.DetectStream(iter([]), timeout=30)), [])
        self.assertTrue(wait_for(lambda: frame_stats(self.server) == 0))

    def test_a_client_that_stops_reading_is_held_back(self):
        """The client sends from an endless generator and never reads: the server holds at most
        FRAMES_IN_FLIGHT of its frames, and flow control stops the generator being read."""
        # Every window a hit, ungrouped: 58 detections (2 KB) per result, so that the results
        # soon fill the client's receive window.
        small = detection_pb2.DetectFrame(
            request=detection_pb2.DetectPedestriansRequest(
                input=types_pb2.ImageSource(image=image_proto(self.gray[:160, :96])),
                grouping=detection_pb2.GROUPING_NONE,
                hit_threshold=-100,
            )
        )
        pulled = [0]

        def frames():
            while True:
                pulled[0] += 1
                yield small

        call = self.stub.DetectStream(frames())  # never read
        try:
            # The generator pauses once the results fill the client's receive window and the
            # frames the sender's. Not "no frame pulled after the first pause": under
            # AddressSanitizer the sender paused for over two seconds while the windows were
            # still filling (513 frames, then 637; ~2650 when full). What flow control bounds is
            # the total: a server reading without bound lets the generator run on (15 KB frames,
            # thousands a second), past any pause and past the cap.
            self.assertTrue(wait_for(lambda: self._settled(pulled), 120), pulled)
            held = max(frame_stats(self.server) for _ in range(20))
            self.assertLessEqual(held, FRAMES_IN_FLIGHT)
            time.sleep(2)
            self.assertLess(pulled[0], PULLED_CAP, "the generator was read without bound")
        finally:
            call.cancel()
        self.assertTrue(wait_for(lambda: frame_stats(self.server) == 0))

    @staticmethod
    def _settled(pulled):
        # 2 s without a frame pulled, after more frames than the server may hold.
        before = pulled[0]
        time.sleep(2)
        return before > FRAMES_IN_FLIGHT and pulled[0] == before

    def test_attack_clients_sending_forever_without_reading_do_not_grow_memory(self):
        """Eight streams of 640x480 BGR frames (900 KiB each) sent as fast as flow control lets
        them, none read: the server's memory stops growing (it holds 4 frames of each, not what
        the clients push), and a well-behaved client is still answered."""
        big = detection_pb2.DetectFrame(
            request=detection_pb2.DetectPedestriansRequest(
                input=types_pb2.ImageSource(
                    image=image_proto(
                        np.random.default_rng(1).integers(0, 256, (480, 640, 3), np.uint8)
                    )
                )
            )
        )
        sent = [0]
        stop = threading.Event()

        def frames():
            while not stop.is_set():
                sent[0] += 1
                yield big

        calls = [self.stub.DetectStream(frames()) for _ in range(8)]
        try:
            samples = []
            for _ in range(16):
                time.sleep(0.5)
                samples.append(rss_mib(self.server.process.pid))
                self.assertLessEqual(frame_stats(self.server), 8 * FRAMES_IN_FLIGHT)
            # Later samples stay within the first half's peak (plus allocator noise). Under
            # AddressSanitizer freed memory sits in its quarantine (256 MiB), so RSS grows by
            # design there; the regular build checks the bound, ASan the leaks.
            if "ASAN_OPTIONS" not in os.environ:
                self.assertLessEqual(max(samples[8:]), max(samples[:8]) + 64, samples)
            reply = self.stub.DetectPedestrians(small_request(self.gray), timeout=120)
            self.assertEqual(reply.model, "opencv_people_64x128")
        finally:
            stop.set()
            for call in calls:
                call.cancel()
        self.assertTrue(wait_for(lambda: frame_stats(self.server) == 0, 60))

    def test_a_client_that_cancels_mid_stream(self):
        request = small_request(self.gray)
        frames = (detection_pb2.DetectFrame(request=request, id=str(i)) for i in range(10**6))
        call = self.stub.DetectStream(frames, timeout=300)
        first = [next(call).index for _ in range(3)]
        self.assertEqual(first, [0, 1, 2])
        before = self.server.request_counts().get(("DetectStream", "CANCELLED"), 0)
        call.cancel()
        self.assertTrue(wait_for(lambda: frame_stats(self.server) == 0))
        self.assertTrue(
            wait_for(
                lambda: self.server.request_counts().get(("DetectStream", "CANCELLED"), 0)
                == before + 1
            )
        )
        # Others are served: a unary call and a new stream.
        want = self.stub.DetectPedestrians(request, timeout=120)
        replies = list(
            self.stub.DetectStream(
                iter([detection_pb2.DetectFrame(request=request)] * 3), timeout=120
            )
        )
        self.assertEqual([boxes(r.result) for r in replies], [boxes(want)] * 3)


def small_request(gray):
    return detection_pb2.DetectPedestriansRequest(
        input=types_pb2.ImageSource(image=image_proto(gray[:200, :200]))
    )


if __name__ == "__main__":
    unittest.main()
