"""Batches over the wire (types.proto): Morphology, Gradient, Pyramid and DetectPedestrians with
`inputs` answer each entry exactly as a call with that image alone as `input` answers it, for
entries of mixed sizes, pixel types and sources (inline, PNG/JPEG bytes, a resident handle,
shared memory), same-shape runs among them (which the server runs as one volume) and bad entries
among good ones, whose statuses carry the unary call's code and its field under `inputs[i]`; what
the entries share fails the call (a parameter, `input` beside `inputs`, the limits on entries and
bytes, naming the field and the flag); a DetectStream frame may hold a batch. Runs on the CPU
backend in CI and on the CUDA backend on the GPU machine (CUIMG_BACKEND)."""
import json
import os
import subprocess
import tempfile
import unittest

import grpc
import numpy as np
from google.rpc import error_details_pb2, status_pb2

from cuimg.v1 import (
    detection_pb2,
    gradient_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    pyramid_pb2,
    resident_pb2,
    shared_memory_pb2,
    types_pb2,
)
from detect_inputs import image_proto, read
from server_process import ServerProcess
from shm_objects import ShmObject

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
DTYPES = {
    types_pb2.PIXEL_TYPE_U8: np.uint8,
    types_pb2.PIXEL_TYPE_U16: np.uint16,
    types_pb2.PIXEL_TYPE_I16: np.int16,
    types_pb2.PIXEL_TYPE_F32: np.float32,
}


def inline(array, pixel_type, spacing=None):
    image = types_pb2.Image(
        pixel_type=pixel_type,
        width=array.shape[-1],
        height=array.shape[-2],
        depth=array.shape[0] if array.ndim == 3 else 0,
        data=np.ascontiguousarray(array, DTYPES[pixel_type]).tobytes(),
    )
    if spacing:
        image.spacing.x_mm, image.spacing.y_mm, image.spacing.z_mm = spacing
    return types_pb2.ImageSource(image=image)


def random_image(rng, pixel_type, shape):
    if pixel_type == types_pb2.PIXEL_TYPE_F32:
        return rng.standard_normal(shape).astype(np.float32) * 100
    info = np.iinfo(DTYPES[pixel_type])
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(DTYPES[pixel_type])


def error_field(details):
    """The ErrorInfo field of a serialized google.rpc.Status (a failed call's details, or an
    EntryStatus's bytes: the same fields)."""
    for any_detail in details:
        info = error_details_pb2.ErrorInfo()
        if any_detail.Unpack(info):
            return info.metadata.get("field", "")
    return None


def step(op, shape, w, h, d=0):
    return morphology_pb2.MorphologyStep(
        op=op, element=morphology_pb2.StructuringElement(shape=shape, width=w, height=h, depth=d)
    )


class BatchesOverTheWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(
            SERVER,
            f"--backend={BACKEND}",
            "--shared_memory",
            "--max_batch_inputs=64",
            f"--max_batch_bytes={1 << 22}",
        )
        cls.channel = cls.server.channel()
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)
        cls.shm = ShmObject(1 << 20)
        cls.region = cls.stub.RegisterSharedMemory(
            shared_memory_pb2.RegisterSharedMemoryRequest(key=cls.shm.key, byte_size=cls.shm.size),
            timeout=30,
        ).region.handle
        rng = np.random.default_rng(50)
        cls.rng = rng
        cls.handle = cls.upload(
            random_image(rng, types_pb2.PIXEL_TYPE_U16, (19, 23)), types_pb2.PIXEL_TYPE_U16
        )

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        code = cls.server.terminate()
        cls.shm.close()
        assert code == 0, cls.server.log()

    @classmethod
    def upload(cls, array, pixel_type):
        image = inline(array, pixel_type).image
        return cls.stub.Upload(
            iter([resident_pb2.UploadRequest(image=image)]), timeout=30
        ).object.handle

    def shared(self, array, pixel_type, offset):
        raw = np.ascontiguousarray(array).tobytes()
        self.shm.buf[offset : offset + len(raw)] = raw
        header = inline(array, pixel_type).image
        header.ClearField("data")
        return types_pb2.ImageSource(
            shared_memory=types_pb2.SharedMemoryImage(
                region=self.region, offset=offset, image=header
            )
        )

    def expect_batch_equals_singles(self, method, request, sources):
        """Each entry of `request` sent with `sources` as `inputs` against the same request with
        that source alone as `input`: the same response bit for bit, or the same code with the
        field named under inputs[i]. Returns the batch's results."""
        batch = type(request)()
        batch.CopyFrom(request)
        batch.inputs.extend(sources)
        reply = getattr(self.stub, method)(batch, timeout=120)
        self.assertEqual(len(reply.results), len(sources))
        self.assertEqual(
            reply.ListFields(), [(type(reply).DESCRIPTOR.fields_by_name["results"], reply.results)]
        )
        for i, source in enumerate(sources):
            single = type(request)()
            single.CopyFrom(request)
            single.input.CopyFrom(source)
            entry = reply.results[i]
            try:
                expected = getattr(self.stub, method)(single, timeout=120)
            except grpc.RpcError as e:
                with self.subTest(entry=i, expected=e.code().name):
                    self.assertEqual(entry.status.code, e.code().value[0], entry.status.message)
                    self.assertFalse(entry.HasField("response"))
                    field = error_field(
                        status_pb2.Status.FromString(
                            dict(e.trailing_metadata())["grpc-status-details-bin"]
                        ).details
                    )
                    # The unary call's field, under inputs[i] when it is the input's.
                    if field.startswith("input"):
                        field = f"inputs[{i}]" + field[len("input") :]
                    self.assertEqual(error_field(entry.status.details), field)
                    self.assertEqual(
                        entry.status.message.replace(f"inputs[{i}]", "input"), e.details()
                    )
                continue
            with self.subTest(entry=i):
                self.assertEqual(entry.status.code, 0, entry.status.message)
                self.assertEqual(entry.response, expected)
        return reply.results

    def mixed_sources(self, pixel_types, bad=True):
        """Same-shape runs (one volume on the server), other sizes and types, the resident
        handle, shared memory, and (with `bad`) entries that fail on their own."""
        rng = self.rng
        sources = []
        for t in pixel_types:
            sources += [inline(random_image(rng, t, (24, 31)), t) for _ in range(3)]
        sources.append(inline(random_image(rng, pixel_types[0], (5, 64)), pixel_types[0]))
        sources.append(types_pb2.ImageSource(handle=self.handle))
        sources.append(
            self.shared(random_image(rng, pixel_types[-1], (24, 31)), pixel_types[-1], 4096)
        )
        sources.append(inline(random_image(rng, pixel_types[0], (24, 31)), pixel_types[0]))
        if bad:
            wrong = inline(random_image(rng, pixel_types[0], (24, 31)), pixel_types[0])
            wrong.image.data = wrong.image.data[:-1]
            sources.insert(2, wrong)
            sources.append(types_pb2.ImageSource(handle="no-such-handle"))
            sources.append(types_pb2.ImageSource(encoded=b"\x89PNG\r\n\x1a\n not a png"))
            sources.append(types_pb2.ImageSource())
        return sources

    def test_morphology_entries_equal_single_calls(self):
        types = [types_pb2.PIXEL_TYPE_U8, types_pb2.PIXEL_TYPE_I16, types_pb2.PIXEL_TYPE_F32]
        for steps in (
            [step(morphology_pb2.MORPHOLOGY_OP_DILATE, morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3)],
            [
                step(morphology_pb2.MORPHOLOGY_OP_OPEN, morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 5, 7),
                step(
                    morphology_pb2.MORPHOLOGY_OP_TOP_HAT, morphology_pb2.ELEMENT_SHAPE_CROSS, 9, 3
                ),
            ],
        ):
            request = morphology_pb2.MorphologyRequest(steps=steps)
            self.expect_batch_equals_singles("Morphology", request, self.mixed_sources(types))

    def test_global_steps_run_on_each_image_alone(self):
        # Same-shape entries are not stacked into a volume under a global step: hole filling and
        # the largest component of a stack would join the images through their slices.
        t = types_pb2.PIXEL_TYPE_U8
        rng = self.rng
        sources = [
            inline((rng.random((24, 31)) < 0.45).astype(np.uint8) * 200, t) for _ in range(4)
        ]
        steps = [
            morphology_pb2.MorphologyStep(
                op=morphology_pb2.MORPHOLOGY_OP_THRESHOLD, lo=100, hi=255
            ),
            morphology_pb2.MorphologyStep(op=morphology_pb2.MORPHOLOGY_OP_FILL_HOLES),
            morphology_pb2.MorphologyStep(op=morphology_pb2.MORPHOLOGY_OP_KEEP_LARGEST),
        ]
        request = morphology_pb2.MorphologyRequest(steps=steps)
        self.expect_batch_equals_singles("Morphology", request, sources)

    def test_morphology_elements_in_millimetres_follow_each_entrys_spacing(self):
        rng = self.rng
        element = morphology_pb2.StructuringElement(
            shape=morphology_pb2.ELEMENT_SHAPE_ELLIPSE,
            radius=morphology_pb2.ElementRadius(x_mm=1.0, y_mm=1.0),
        )
        request = morphology_pb2.MorphologyRequest(
            steps=[
                morphology_pb2.MorphologyStep(
                    op=morphology_pb2.MORPHOLOGY_OP_ERODE, element=element
                )
            ]
        )
        t = types_pb2.PIXEL_TYPE_U8
        sources = [
            inline(random_image(rng, t, (20, 20)), t, (0.5, 0.5, 1)),
            inline(random_image(rng, t, (20, 20)), t, (0.25, 0.5, 1)),
            inline(random_image(rng, t, (20, 20)), t),  # no spacing: refused alone
            types_pb2.ImageSource(handle=self.handle),
        ]
        results = self.expect_batch_equals_singles("Morphology", request, sources)
        self.assertEqual(results[2].status.code, grpc.StatusCode.INVALID_ARGUMENT.value[0])

    def test_gradient_entries_equal_single_calls(self):
        types = [types_pb2.PIXEL_TYPE_U8, types_pb2.PIXEL_TYPE_U16, types_pb2.PIXEL_TYPE_F32]
        for request in (
            gradient_pb2.GradientRequest(),
            gradient_pb2.GradientRequest(kernel_length=5, magnitude=True, angle=True),
        ):
            self.expect_batch_equals_singles("Gradient", request, self.mixed_sources(types))

    def test_pyramid_entries_equal_single_calls(self):
        types = [types_pb2.PIXEL_TYPE_U8, types_pb2.PIXEL_TYPE_F32]
        request = pyramid_pb2.PyramidRequest(levels=4, ratio=1.5, min_width=4, min_height=4)
        results = self.expect_batch_equals_singles("Pyramid", request, self.mixed_sources(types))
        # The same output type as each input: an F32 output is asked of U8 and F32 alike.
        request = pyramid_pb2.PyramidRequest(levels=3, output_type=types_pb2.PIXEL_TYPE_U8)
        results = self.expect_batch_equals_singles("Pyramid", request, self.mixed_sources(types))
        self.assertEqual(results[-5].status.code, grpc.StatusCode.INVALID_ARGUMENT.value[0])

    def test_detect_entries_equal_single_calls(self):
        gray = np.frombuffer(read("basketball2.png"), np.uint8)  # any bytes make a test image
        rng = self.rng
        frame = rng.integers(0, 255, (150, 90, 3), dtype=np.uint8)
        sources = [
            types_pb2.ImageSource(encoded=read("basketball2.png")),
            types_pb2.ImageSource(image=image_proto(frame)),
            types_pb2.ImageSource(image=image_proto(frame[:, :, 0])),
            types_pb2.ImageSource(encoded=read("HappyFish.jpg")),
            types_pb2.ImageSource(encoded=gray[:100].tobytes()),  # a truncated PNG
            types_pb2.ImageSource(handle=self.handle),
        ]  # U16: refused alone
        request = detection_pb2.DetectPedestriansRequest(grouping=detection_pb2.GROUPING_NONE)
        results = self.expect_batch_equals_singles("DetectPedestrians", request, sources)
        self.assertGreater(len(results[0].response.detections), 0)

    def test_detect_stream_frame_may_hold_a_batch(self):
        frames = [
            detection_pb2.DetectFrame(
                id="one",
                request=detection_pb2.DetectPedestriansRequest(
                    input=types_pb2.ImageSource(encoded=read("basketball2.png"))
                ),
            ),
            detection_pb2.DetectFrame(
                id="batch",
                request=detection_pb2.DetectPedestriansRequest(
                    inputs=[
                        types_pb2.ImageSource(encoded=read("basketball2.png")),
                        types_pb2.ImageSource(encoded=b"not an image"),
                    ]
                ),
            ),
        ]
        replies = list(self.stub.DetectStream(iter(frames), timeout=120))
        self.assertEqual([r.id for r in replies], ["one", "batch"])
        self.assertEqual(len(replies[1].result.results), 2)
        self.assertEqual(replies[1].result.results[0].response, replies[0].result)
        self.assertEqual(
            replies[1].result.results[1].status.code, grpc.StatusCode.INVALID_ARGUMENT.value[0]
        )
        self.assertEqual(
            error_field(replies[1].result.results[1].status.details), "inputs[1].encoded"
        )

    def test_python_client_takes_a_list_and_returns_a_list(self):
        import cuimg

        rng = self.rng
        tiles = [rng.integers(0, 255, (16, 20), dtype=np.uint8) for _ in range(3)]
        tiles.append(rng.standard_normal((2, 9, 11)).astype(np.float32))  # a volume
        with cuimg.Client(self.server.target) as client:
            batch = client.morphology(tiles + [np.zeros((0, 5), np.uint8)], "dilate:rect:3x3")
            self.assertEqual(len(batch), 5)
            for tile, got in zip(tiles, batch):
                np.testing.assert_array_equal(got, client.morphology(tile, "dilate:rect:3x3"))
            self.assertIsInstance(batch[4], cuimg.CuimgError)
            self.assertEqual(batch[4].code, grpc.StatusCode.INVALID_ARGUMENT)
            self.assertEqual(batch[4].field, "inputs[4].image.height")
            gradients = client.gradient(tiles[:2], magnitude=True)
            for tile, got in zip(tiles, gradients):
                alone = client.gradient(tile, magnitude=True)
                self.assertEqual(sorted(got), ["gx", "gy", "magnitude"])
                for name in got:
                    np.testing.assert_array_equal(got[name], alone[name])
            pyramids = client.pyramid(tiles[:2], levels=3, ratio=1.5, min_width=2, min_height=2)
            for tile, got in zip(tiles, pyramids):
                alone = client.pyramid(tile, levels=3, ratio=1.5, min_width=2, min_height=2)
                self.assertEqual(len(got), len(alone))
                for a, b in zip(got, alone):
                    np.testing.assert_array_equal(a, b)
            frames = [read("basketball2.png"), rng.integers(0, 255, (140, 80, 3), dtype=np.uint8)]
            found = client.detect(frames, grouping=False)
            self.assertEqual(found[0], client.detect(encoded=frames[0], grouping=False))
            self.assertEqual(found[1], client.detect(frames[1], grouping=False))
            with self.assertRaises(ValueError):
                client.morphology([], "dilate:rect:3x3")

    def cli(self, *args):
        return subprocess.run(
            [CLIENT, *args, f"--target={self.server.target}"],
            capture_output=True,
            text=True,
            timeout=300,
        )

    def test_cli_morphology_batch_writes_what_single_calls_write(self):
        rng = self.rng
        with tempfile.TemporaryDirectory() as tmp:
            folder, batched, single = (os.path.join(tmp, d) for d in ("in", "batched", "single"))
            os.mkdir(folder)
            np.save(os.path.join(folder, "a_u16.npy"), rng.integers(0, 65535, (30, 41), np.uint16))
            np.save(os.path.join(folder, "b_f32.npy"), rng.standard_normal((30, 41), np.float32))
            np.save(os.path.join(folder, "c_u16.npy"), rng.integers(0, 65535, (30, 41), np.uint16))
            np.save(os.path.join(folder, "d_i16.npy"), rng.integers(-900, 900, (12, 7), np.int16))
            # Colour: each channel an image of the batch (JPEG out: the same pixels, the same
            # encoder, so the same bytes).
            with open(os.path.join(folder, "e_colour.jpg"), "wb") as f:
                f.write(read("HappyFish.jpg"))
            steps = "--steps=erode:ellipse:5x5"
            run = self.cli(
                "morphology", f"--input={folder}", f"--output={batched}", "--batch=3", steps
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("wrote 5 of 5 files", run.stdout)
            self.assertIn("images/s", run.stdout)
            os.mkdir(single)
            for name in sorted(os.listdir(folder)):
                run = self.cli(
                    "morphology",
                    f"--input={os.path.join(folder, name)}",
                    f"--output={os.path.join(single, name)}",
                    steps,
                )
                self.assertEqual(run.returncode, 0, run.stderr)
                with open(os.path.join(batched, name), "rb") as a, open(
                    os.path.join(single, name), "rb"
                ) as b:
                    self.assertEqual(a.read(), b.read(), name)
            run = self.cli(
                "morphology",
                f"--input={os.path.join(folder, 'a_u16.npy')}",
                f"--output={batched}",
                "--batch=3",
                steps,
            )
            self.assertEqual(run.returncode, 2, run.stderr)  # --batch needs a folder

    def test_load_batch_counts_images(self):
        run = self.cli(
            "load",
            "--rpc=morphology",
            "--batch=4",
            "--image_size=32x24",
            "--requests=12",
            "--warmup=0",
            "--concurrency=2",
            "--json",
            "--server_metrics=none",
        )
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        summary = json.loads(run.stdout)
        self.assertEqual(summary["ok"], 12)
        self.assertEqual(summary["images_per_call"], 4)
        self.assertEqual(summary["failed_images"], 0)
        self.assertAlmostEqual(summary["images_per_s"], 4 * summary["throughput_rps"], delta=0.1)
        self.assertEqual(summary["config"]["batch"], 4)
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "frame.png"), "wb") as f:
                f.write(read("basketball2.png"))
            run = self.cli(
                "load",
                "--rpc=detect",
                "--batch=2",
                f"--input={tmp}",
                "--requests=4",
                "--warmup=0",
                "--concurrency=2",
                "--progress=false",
                "--server_metrics=none",
            )
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertRegex(run.stdout, r"ok/s, [0-9.]+ images/s \(2 images a call\)")
        run = self.cli("load", "--rpc=deform", "--batch=2", "--requests=1")
        self.assertEqual(run.returncode, 2, run.stdout + run.stderr)

    def call_error(self, method, request):
        with self.assertRaises(grpc.RpcError) as caught:
            getattr(self.stub, method)(request, timeout=60)
        e = caught.exception
        details = dict(e.trailing_metadata())["grpc-status-details-bin"]
        status = status_pb2.Status.FromString(details)
        return e.code(), error_field(status.details), e.details()

    def test_what_the_entries_share_fails_the_call(self):
        t = types_pb2.PIXEL_TYPE_U8
        one = inline(np.zeros((8, 8), np.uint8), t)
        dilate = step(morphology_pb2.MORPHOLOGY_OP_DILATE, morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3)
        reconstruct = morphology_pb2.MorphologyStep(
            op=morphology_pb2.MORPHOLOGY_OP_RECONSTRUCT_DILATE
        )
        cases = [
            (
                "Morphology",
                morphology_pb2.MorphologyRequest(input=one, inputs=[one], steps=[dilate]),
                "inputs",
                "",
            ),
            ("Morphology", morphology_pb2.MorphologyRequest(inputs=[one]), "steps", ""),
            (
                "Morphology",
                morphology_pb2.MorphologyRequest(
                    inputs=[one],
                    steps=[dilate],
                    output=types_pb2.OutputOptions(
                        shared_memory=types_pb2.SharedMemoryTarget(region=self.region)
                    ),
                ),
                "output.shared_memory",
                "",
            ),
            (
                "Morphology",
                morphology_pb2.MorphologyRequest(inputs=[one] * 65, steps=[dilate]),
                "inputs",
                "--max_batch_inputs",
            ),
            # 2 x 2.1 MB over --max_batch_bytes (4 MiB); each alone would fit.
            (
                "Gradient",
                gradient_pb2.GradientRequest(
                    inputs=[inline(np.zeros((1024, 1050), np.uint16), types_pb2.PIXEL_TYPE_U16)] * 2
                ),
                "inputs",
                "--max_batch_bytes",
            ),
            (
                "Gradient",
                gradient_pb2.GradientRequest(inputs=[one], kernel_length=4),
                "kernel_length",
                "",
            ),
            ("Pyramid", pyramid_pb2.PyramidRequest(inputs=[one], ratio=0.5), "ratio", ""),
            (
                "DetectPedestrians",
                detection_pb2.DetectPedestriansRequest(inputs=[one], model="no-such-model"),
                "model",
                "",
            ),
            # A marker has one image's size; reconstruction runs one image a call.
            (
                "Morphology",
                morphology_pb2.MorphologyRequest(inputs=[one], steps=[reconstruct], marker=one),
                "marker",
                "",
            ),
            (
                "Morphology",
                morphology_pb2.MorphologyRequest(inputs=[one], steps=[reconstruct]),
                "marker",
                "",
            ),
            (
                "Morphology",
                morphology_pb2.MorphologyRequest(
                    inputs=[one],
                    steps=[dilate],
                    output=types_pb2.OutputOptions(
                        frame_encoding=types_pb2.FRAME_ENCODING_HTJ2K_LOSSLESS
                    ),
                ),
                "output.frame_encoding",
                "",
            ),
        ]
        for method, request, field, flag in cases:
            with self.subTest(method=method, field=field, flag=flag):
                code, got_field, message = self.call_error(method, request)
                self.assertIn(code, (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND))
                self.assertEqual(got_field, field)
                self.assertIn(flag, message)


if __name__ == "__main__":
    unittest.main()
