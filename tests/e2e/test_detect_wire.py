"""DetectPedestrians and ListModels over the wire (real cuimg-server, Python grpcio): the models
the server loaded; level and window counts against an independent Python statement of OpenCV
detectMultiScale's level rule; detections that are in bounds, ordered, above the threshold, and
the same for PNG bytes, raw pixels, a resident handle and 1/3/4 channels of the same content;
grouping options; images smaller than a window; field-named errors; the timing trailer and the
request counter; and the cuimg CLI (detect on an image, a frame directory and a video; models).
Runs on the CPU backend in CI and on the CUDA backend on the GPU machine (CUIMG_BACKEND)."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import grpc
import numpy as np

from cuimg.v1 import detection_pb2, imaging_service_pb2_grpc, resident_pb2, types_pb2
from detect_inputs import DATA, image_proto, read, server_decoded_gray
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")


def expected_levels(
    width, height, win_w=64, win_h=128, scale=1.05, stride=8, padding=0, max_levels=64
):
    """OpenCV detectMultiScale's levels: cvRound (half to even, as Python's round) of side/scale
    while both reach the window; level 0 always. Returns [(w, h, windows)] of levels with windows.
    """
    scales, s = [], 1.0
    for _ in range(max_levels):
        if round(width / s) < win_w or round(height / s) < win_h:
            break
        scales.append(s)
        s *= scale
    scales = scales or [1.0]
    pad = (padding + 7) // 8 * 8
    out = []
    for s in scales:
        w, h = round(width / s), round(height / s)
        pw, ph = w + 2 * pad, h + 2 * pad
        if pw >= win_w and ph >= win_h:
            out.append((w, h, ((pw - win_w) // stride + 1) * ((ph - win_h) // stride + 1)))
    return out


def boxes(reply):
    return [(d.x, d.y, d.width, d.height, round(d.score, 4)) for d in reply.detections]


class DetectOverTheWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}")
        cls.channel = cls.server.channel()
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)
        cls.gray = server_decoded_gray(cls.stub, "basketball2.png")

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        assert cls.server.terminate() == 0, cls.server.log()

    def detect(self, source, **fields):
        return self.stub.DetectPedestrians(
            detection_pb2.DetectPedestriansRequest(input=source, **fields), timeout=120
        )

    def test_list_models_has_the_two_opencv_detectors(self):
        models = {
            m.name: m
            for m in self.stub.ListModels(detection_pb2.ListModelsRequest(), timeout=10).models
        }
        self.assertEqual(set(models), {"opencv_people_64x128", "opencv_daimler_48x96"})
        people, daimler = models["opencv_people_64x128"], models["opencv_daimler_48x96"]
        self.assertEqual(
            (people.window_width, people.window_height, people.descriptor_size), (64, 128, 3780)
        )
        self.assertEqual(
            (daimler.window_width, daimler.window_height, daimler.descriptor_size), (48, 96, 1980)
        )
        self.assertTrue(people.gamma_correction)
        self.assertFalse(daimler.gamma_correction)
        self.assertIn("OpenCV", people.description)

    def test_levels_windows_and_detections_are_consistent(self):
        reply, call = self.stub.DetectPedestrians.with_call(
            detection_pb2.DetectPedestriansRequest(
                input=types_pb2.ImageSource(encoded=read("basketball2.png"))
            ),
            timeout=120,
        )
        h, w = self.gray.shape
        levels = expected_levels(w, h)
        self.assertEqual(reply.levels, len(levels))
        self.assertEqual(reply.windows, sum(n for _, _, n in levels))
        self.assertEqual(reply.model, "opencv_people_64x128")
        self.assertGreater(len(reply.detections), 0)
        scores = [d.score for d in reply.detections]
        self.assertEqual(scores, sorted(scores, reverse=True))
        for d in reply.detections:
            self.assertGreaterEqual(d.score, 0)
            self.assertTrue(0 <= d.x and 0 <= d.y and d.width > 0 and d.height > 0)
            self.assertLessEqual(d.x + d.width, w)
            self.assertLessEqual(d.y + d.height, h)
            self.assertGreaterEqual(d.scale, 1.0)
        self.assertIn("kernel_us=", dict(call.trailing_metadata())["cuimg-timing"])
        # Padding, stride and scale change the level list exactly as the rule says.
        reply = self.detect(
            types_pb2.ImageSource(image=image_proto(self.gray)),
            padding=20,
            win_stride=16,
            scale=1.2,
            max_levels=5,
        )
        levels = expected_levels(w, h, scale=1.2, stride=16, padding=20, max_levels=5)
        self.assertEqual((reply.levels, reply.windows), (len(levels), sum(n for _, _, n in levels)))

    def test_png_pixels_handle_and_channels_give_the_same_detections(self):
        want = boxes(self.detect(types_pb2.ImageSource(encoded=read("basketball2.png"))))
        self.assertTrue(want)
        self.assertEqual(
            boxes(self.detect(types_pb2.ImageSource(image=image_proto(self.gray)))), want
        )
        bgr = np.repeat(self.gray[:, :, None], 3, axis=2)
        self.assertEqual(boxes(self.detect(types_pb2.ImageSource(image=image_proto(bgr)))), want)
        bgra = np.concatenate([bgr, np.full(self.gray.shape + (1,), 77, np.uint8)], axis=2)
        self.assertEqual(boxes(self.detect(types_pb2.ImageSource(image=image_proto(bgra)))), want)
        uploaded = self.stub.Upload(
            iter([resident_pb2.UploadRequest(image=image_proto(bgr))]), timeout=60
        ).object
        try:
            self.assertEqual(
                boxes(self.detect(types_pb2.ImageSource(handle=uploaded.handle))), want
            )
        finally:
            self.stub.Release(resident_pb2.ReleaseRequest(handle=uploaded.handle), timeout=10)

    def test_grouping_options(self):
        src = types_pb2.ImageSource(image=image_proto(self.gray))
        grouped = self.detect(src)
        raw = self.detect(src, grouping=detection_pb2.GROUPING_NONE)
        threshold0 = self.detect(src, group_threshold=0)
        self.assertGreater(len(raw.detections), len(grouped.detections))
        # groupRectangles with threshold 0 returns the raw hits, as OpenCV does.
        self.assertEqual(sorted(boxes(threshold0)), sorted(boxes(raw)))
        # Every raw hit reaches the threshold; a higher threshold keeps a subset.
        high = self.detect(src, grouping=detection_pb2.GROUPING_NONE, hit_threshold=0.5)
        self.assertTrue(set(boxes(high)) <= set(boxes(raw)))
        self.assertTrue(all(d.score >= 0.5 for d in high.detections))
        # The model's gamma default applies unless the request says otherwise.
        no_gamma = self.detect(src, grouping=detection_pb2.GROUPING_NONE, gamma_correction=False)
        self.assertNotEqual(boxes(no_gamma), boxes(raw))
        daimler = self.detect(src, model="opencv_daimler_48x96")
        levels = expected_levels(self.gray.shape[1], self.gray.shape[0], 48, 96)
        self.assertEqual(daimler.windows, sum(n for _, _, n in levels))

    def test_images_without_windows_get_no_detections(self):
        for shape in [(1, 1), (127, 300), (300, 63), (100, 50, 3)]:
            reply = self.detect(
                types_pb2.ImageSource(image=image_proto(np.full(shape, 9, np.uint8)))
            )
            self.assertEqual((len(reply.detections), reply.levels, reply.windows), (0, 0, 0), shape)
        # Padding can give a small image windows, as in OpenCV.
        reply = self.detect(
            types_pb2.ImageSource(image=image_proto(np.full((100, 50), 9, np.uint8))), padding=40
        )
        self.assertEqual(reply.levels, 1)
        self.assertGreater(reply.windows, 0)

    def test_bad_requests_name_the_field(self):
        good = types_pb2.ImageSource(image=image_proto(self.gray[:200, :200]))
        two = types_pb2.ImageSource(image=image_proto(np.zeros((130, 70, 2), np.uint8)))
        wide = types_pb2.ImageSource(
            image=types_pb2.Image(
                pixel_type=types_pb2.PIXEL_TYPE_U16, width=70, height=130, data=bytes(70 * 130 * 2)
            )
        )
        cases = [
            (dict(input=good, model="no_such_model"), grpc.StatusCode.NOT_FOUND, "model"),
            (dict(input=good, model="../x"), grpc.StatusCode.NOT_FOUND, "model"),
            (dict(input=good, win_stride=12), grpc.StatusCode.INVALID_ARGUMENT, "win_stride"),
            (dict(input=good, scale=1.0), grpc.StatusCode.INVALID_ARGUMENT, "scale"),
            (dict(input=good, scale=7.0), grpc.StatusCode.INVALID_ARGUMENT, "scale"),
            (dict(input=good, padding=1000), grpc.StatusCode.INVALID_ARGUMENT, "padding"),
            (dict(input=good, max_levels=100), grpc.StatusCode.INVALID_ARGUMENT, "max_levels"),
            (
                dict(input=good, hit_threshold=float("nan")),
                grpc.StatusCode.INVALID_ARGUMENT,
                "hit_threshold",
            ),
            (dict(input=good, group_eps=-1), grpc.StatusCode.INVALID_ARGUMENT, "group_eps"),
            (
                dict(input=good, group_threshold=5000),
                grpc.StatusCode.INVALID_ARGUMENT,
                "group_threshold",
            ),
            (dict(input=good, grouping=7), grpc.StatusCode.INVALID_ARGUMENT, "grouping"),
            (dict(input=two), grpc.StatusCode.INVALID_ARGUMENT, "channels"),
            (dict(input=wide), grpc.StatusCode.INVALID_ARGUMENT, "U8"),
            (dict(), grpc.StatusCode.INVALID_ARGUMENT, "input"),
            (
                dict(input=types_pb2.ImageSource(encoded=b"not an image")),
                grpc.StatusCode.INVALID_ARGUMENT,
                "input.encoded",
            ),
            (
                dict(input=types_pb2.ImageSource(handle="img-nope")),
                grpc.StatusCode.NOT_FOUND,
                "input.handle",
            ),
        ]
        for fields, code, field in cases:
            with self.assertRaises(grpc.RpcError) as caught:
                self.stub.DetectPedestrians(
                    detection_pb2.DetectPedestriansRequest(**fields), timeout=30
                )
            self.assertEqual(caught.exception.code(), code, field)
            self.assertIn(field, caught.exception.details())
        # The server still serves.
        self.assertEqual(self.detect(good).model, "opencv_people_64x128")

    def test_metrics_count_detections_by_code(self):
        self.detect(types_pb2.ImageSource(image=image_proto(self.gray[:150, :150])))
        with self.assertRaises(grpc.RpcError):
            self.detect(
                types_pb2.ImageSource(image=image_proto(self.gray[:150, :150])), model="nope"
            )
        self.stub.ListModels(detection_pb2.ListModelsRequest(), timeout=10)
        counts = self.server.request_counts()
        self.assertGreaterEqual(counts.get(("DetectPedestrians", "OK"), 0), 1)
        self.assertGreaterEqual(counts.get(("DetectPedestrians", "NOT_FOUND"), 0), 1)
        self.assertGreaterEqual(counts.get(("ListModels", "OK"), 0), 1)

    def run_cli(self, *args):
        run = subprocess.run(
            [CLIENT, f"--target={self.server.target}", *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        return run

    def test_cli_detect_and_models(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "boxes.png")
            run = self.run_cli(
                "detect", f"--input={os.path.join(DATA, 'basketball2.png')}", f"--output={out}"
            )
            line = json.loads(run.stdout.splitlines()[0])
            want = boxes(self.detect(types_pb2.ImageSource(encoded=read("basketball2.png"))))
            self.assertEqual(
                [(d["x"], d["y"], d["width"], d["height"]) for d in line["detections"]],
                [b[:4] for b in want],
            )
            with open(out, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            # A directory of frames, every other one, boxed PNGs in an output directory.
            frames = os.path.join(tmp, "frames")
            os.makedirs(frames)
            for i, name in enumerate(["basketball1.png", "basketball2.png", "fruits.jpg"]):
                shutil.copy(os.path.join(DATA, name), os.path.join(frames, f"{i:02d}_{name}"))
            streams = self.server.request_counts().get(("DetectStream", "OK"), 0)
            run = self.run_cli("detect", f"--input={frames}", f"--output={tmp}/boxed", "--every=2")
            lines = [json.loads(x) for x in run.stdout.splitlines()]
            self.assertEqual([x["frame"] for x in lines], [0, 2])
            self.assertEqual(
                sorted(os.listdir(f"{tmp}/boxed")),
                ["00_basketball1_boxes.png", "02_fruits_boxes.png", "detections.json"],
            )
            # The frames went over one DetectStream; the run's detections are in one file.
            self.assertEqual(
                self.server.request_counts().get(("DetectStream", "OK"), 0), streams + 1
            )
            with open(f"{tmp}/boxed/detections.json") as f:
                run_json = json.load(f)
            self.assertEqual(run_json["source"], frames)
            self.assertEqual(
                [x["detections"] for x in run_json["frames"]], [x["detections"] for x in lines]
            )
            want = boxes(self.detect(types_pb2.ImageSource(encoded=read("basketball1.png"))))
            self.assertEqual(
                [
                    (d["x"], d["y"], d["width"], d["height"])
                    for d in run_json["frames"][0]["detections"]
                ],
                [b[:4] for b in want],
            )
            models = json.loads(self.run_cli("models", "--json").stdout)["models"]
            self.assertEqual(
                sorted(m["name"] for m in models), ["opencv_daimler_48x96", "opencv_people_64x128"]
            )
            bad = subprocess.run(
                [
                    CLIENT,
                    f"--target={self.server.target}",
                    "detect",
                    f"--input={out}",
                    "--model=nope",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(bad.returncode, 1)
            # The reason and the field of the ErrorInfo, as the CLI prints every server error.
            self.assertIn(
                "error: NOT_FOUND [MODEL_NOT_FOUND] model: 'nope' is not loaded", bad.stderr
            )

    @unittest.skipUnless(
        shutil.which("ffmpeg") and os.path.exists(os.path.join(DATA, "vtest.avi")),
        "needs the ffmpeg program and vtest.avi",
    )
    def test_cli_detect_video(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = self.run_cli(
                "detect",
                f"--video={os.path.join(DATA, 'vtest.avi')}",
                "--every=300",
                "--max_frames=2",
                f"--output={tmp}",
            )
            lines = [json.loads(x) for x in run.stdout.splitlines()]
            self.assertEqual([x["frame"] for x in lines], [0, 300])
            self.assertEqual((lines[0]["width"], lines[0]["height"]), (768, 576))
            self.assertGreater(sum(len(x["detections"]) for x in lines), 0)
            self.assertEqual(
                sorted(os.listdir(tmp)), ["detections.json", "frame_00000.png", "frame_00300.png"]
            )
            with open(os.path.join(tmp, "detections.json")) as f:
                self.assertEqual([x["frame"] for x in json.load(f)["frames"]], [0, 300])


if __name__ == "__main__":
    unittest.main()
