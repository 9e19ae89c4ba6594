"""`cuimg load --rpc` against the CPU-backend server: each RPC choice (morphology, gradient,
pyramid, detect from generated pixels and from a JPEG sent encoded, deform of the torus and of a
mesh file with a lattice file) runs a fixed number of calls; the JSON summary's counts, codes,
config and server stage times agree with the CSV rows and with the server's own per-RPC request
counters. --input=DIR and --video cycle the calls through their images (the server's pixel
counter sees each one its share of the calls). A request the server refuses is counted under its
code with its message (exit 1), and bad choices or payloads are usage errors before any call."""
import collections
import csv
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
CALLS = 12


class LoadRpcs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, "--backend=cpu")
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        assert cls.server.terminate() == 0, cls.server.log()

    def server_requests(self):
        """cuimg_requests_total by (rpc, code) from the metrics endpoint."""
        return self.server.request_counts()

    def server_pixels(self, rpc):
        """cuimg_pixels_processed_total of one RPC from the metrics endpoint."""
        text = self.server.metrics()
        prefix = f'cuimg_pixels_processed_total{{rpc="{rpc}"}} '
        return next(
            (float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix)),
            0.0,
        )

    def load(self, *args, calls=CALLS):
        out = os.path.join(self.tmp.name, "summary.json")
        rows = os.path.join(self.tmp.name, "rows.csv")
        run = subprocess.run(
            [
                CLIENT,
                f"--target={self.server.target}",
                "load",
                "--progress=false",
                f"--requests={calls}",
                "--warmup=0",
                "--concurrency=3",
                "--channels=2",
                f"--json_out={out}",
                f"--csv={rows}",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if run.returncode == 2:
            return run, None, None
        with open(out) as f:
            summary = json.load(f)
        with open(rows) as f:
            return run, summary, list(csv.DictReader(f))

    def check_run(self, rpc_name, server_rpc, *args, want_code="OK", want_exit=0):
        before = self.server_requests().get((server_rpc, want_code), 0)
        run, summary, rows = self.load(f"--rpc={rpc_name}", *args)
        self.assertEqual(run.returncode, want_exit, run.stderr)
        self.assertEqual(summary["config"]["rpc"], rpc_name)
        self.assertEqual(summary["requests"], CALLS)
        self.assertEqual(summary["codes"], {want_code: CALLS})
        self.assertEqual(len(rows), CALLS)
        self.assertEqual({r["code"] for r in rows}, {want_code})
        self.assertGreater(summary["config"]["request_bytes"], 0)
        # The server saw exactly these calls, as this RPC.
        self.assertEqual(self.server_requests().get((server_rpc, want_code), 0) - before, CALLS)
        if want_code == "OK":
            self.assertEqual(summary["ok"], CALLS)
            # Stage times come from each call's trailer.
            self.assertGreater(summary["server_us_median"]["total"], 0)
            self.assertTrue(all(float(r["total_us"]) > 0 for r in rows))
        return summary

    def test_morphology(self):
        summary = self.check_run(
            "morphology",
            "Morphology",
            "--image_size=48x40",
            "--steps=erode:rect:3x3,dilate:cross:5x5",
        )
        self.assertEqual(summary["config"]["steps"], "erode:rect:3x3,dilate:cross:5x5")
        self.assertEqual(summary["config"]["size"], "48x40")

    def test_gradient_of_a_volume(self):
        summary = self.check_run(
            "gradient", "Gradient", "--image_size=24x20x3", "--pixel_type=f32", "--kernel_length=5"
        )
        self.assertEqual(summary["config"]["kernel_length"], "5")
        self.assertEqual(summary["config"]["size"], "24x20x3")
        # 24*20*3 f32 pixels travel with every request.
        self.assertGreater(summary["config"]["request_bytes"], 24 * 20 * 3 * 4)

    def test_pyramid(self):
        summary = self.check_run(
            "pyramid",
            "Pyramid",
            "--image_size=64x48",
            "--levels=5",
            "--ratio=1.5",
            "--mode=cascaded",
        )
        self.assertEqual(
            (summary["config"]["levels"], summary["config"]["mode"]), ("5", "cascaded")
        )

    def test_detect_generated_and_encoded_jpeg(self):
        self.check_run("detect", "DetectPedestrians", "--image_size=96x160")
        jpeg = os.path.join(DATA, "fruits.jpg")
        summary = self.check_run("detect", "DetectPedestrians", f"--input={jpeg}")
        self.assertEqual(summary["config"]["input"], jpeg)
        self.assertEqual(int(summary["config"]["encoded_bytes"]), os.path.getsize(jpeg))

    def test_detect_frames_over_streams(self):
        # Each call is a frame of a DetectStream, one stream per channel (2): the server counts
        # the frames as DetectStreamFrame and each frame's timing comes in its result.
        streams = self.server_requests().get(("DetectStream", "OK"), 0)
        summary = self.check_run(
            "detect", "DetectStreamFrame", "--image_size=96x160", "--detect_stream"
        )
        self.assertEqual(summary["config"]["detect_stream"], "2 streams")
        self.assertEqual(self.server_requests().get(("DetectStream", "OK"), 0) - streams, 2)
        run, _, _ = self.load("--rpc=pyramid", "--detect_stream")
        self.assertEqual(run.returncode, 2)
        self.assertIn("--detect_stream", run.stderr)

    def test_deform_torus_and_mesh_file_with_lattice_file(self):
        summary = self.check_run("deform", "Deform", "--n=24", "--m=12", "--twist=20")
        self.assertEqual(summary["config"]["mesh"], "torus:24,12")
        self.assertEqual(summary["config"]["vertices"], str(24 * 12))
        mesh = os.path.join(self.tmp.name, "torus.obj")
        made = subprocess.run(
            [CLIENT, "mesh", "torus", "--n=16", "--m=8", f"--output={mesh}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(made.returncode, 0, made.stderr)
        lattice = os.path.join(self.tmp.name, "lattice.json")
        with open(lattice, "w") as f:
            json.dump(
                {
                    "origin": [-2, -2, -1],
                    "s": [4, 0, 0],
                    "t": [0, 4, 0],
                    "u": [0, 0, 2],
                    "counts": [2, 2, 2],
                    "displacements": [0.1] * 24,
                },
                f,
            )
        summary = self.check_run("deform", "Deform", f"--input={mesh}", f"--lattice_file={lattice}")
        self.assertEqual(
            (summary["config"]["vertices"], summary["config"]["lattice"]), (str(16 * 8), lattice)
        )

    def test_refused_requests_are_counted_by_code(self):
        # A ratio below 1: every Pyramid call is INVALID_ARGUMENT; the run reports it, with the
        # server's message, and exits 1.
        summary = self.check_run(
            "pyramid",
            "Pyramid",
            "--image_size=32x32",
            "--ratio=0.5",
            want_code="INVALID_ARGUMENT",
            want_exit=1,
        )
        self.assertEqual(summary["ok"], 0)
        errors = summary["errors"]["INVALID_ARGUMENT"]
        self.assertEqual((errors["count"], errors["other_messages"]), (CALLS, 0))
        [message] = errors["messages"]
        self.assertIn("0.5", message["message"])
        self.assertEqual(message["count"], CALLS)

    def test_input_folder_cycles_through_its_images(self):
        # Three images of different sizes (and a file that is not one): the calls go round them
        # in name order, and the server processes each image's pixels a third of the calls.
        folder = os.path.join(self.tmp.name, "images")
        os.makedirs(folder, exist_ok=True)
        sizes = [(8, 16), (10, 24), (12, 32)]  # (H, W)
        rng = np.random.default_rng(3)
        for i, (h, w) in enumerate(sizes):
            np.save(
                os.path.join(folder, f"img{i}.npy"), rng.integers(0, 255, (h, w), dtype=np.uint8)
            )
        with open(os.path.join(folder, "notes.txt"), "w") as f:
            f.write("not an image")
        before = self.server_pixels("Morphology")
        summary = self.check_run("morphology", "Morphology", f"--input={folder}")
        self.assertEqual(summary["config"]["images"], "3")
        self.assertEqual(summary["config"]["size"], "16x8 24x10 32x12")
        per_image = CALLS // len(sizes)
        self.assertEqual(
            self.server_pixels("Morphology") - before, per_image * sum(h * w for h, w in sizes)
        )
        _, _, rows = self.load("--rpc=morphology", f"--input={folder}")
        self.assertEqual(
            collections.Counter(r["payload"] for r in rows),
            {"0": per_image, "1": per_image, "2": per_image},
        )

    @unittest.skipUnless(shutil.which("ffmpeg"), "needs the ffmpeg program")
    def test_video_frames_cycle(self):
        video = os.path.join(self.tmp.name, "clip.avi")
        made = subprocess.run(
            [
                "ffmpeg",
                "-loglevel",
                "error",
                "-y",
                "-f",
                "lavfi",
                "-i",
                "testsrc=size=64x48:rate=10",
                "-frames:v",
                "8",
                video,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(made.returncode, 0, made.stderr)
        before = self.server_pixels("Gradient")
        # Every 2nd frame, at most 3 of them: frames 0, 2, 4; 12 calls, 4 per frame.
        summary = self.check_run(
            "gradient", "Gradient", f"--video={video}", "--every=2", "--max_frames=3"
        )
        self.assertEqual((summary["config"]["video"], summary["config"]["frames"]), (video, "3"))
        self.assertEqual(summary["config"]["size"], "64x48")
        self.assertEqual(self.server_pixels("Gradient") - before, CALLS * 64 * 48)

    def test_bad_choices_are_usage_errors(self):
        two = os.path.join(self.tmp.name, "two")
        os.makedirs(two, exist_ok=True)
        for name in ("a.npy", "b.npy"):
            np.save(os.path.join(two, name), np.zeros((4, 4), np.uint8))
        empty = os.path.join(self.tmp.name, "empty")
        os.makedirs(empty, exist_ok=True)
        for args, flag in (
            (["--rpc=sharpen"], "--rpc"),
            (["--rpc=detect", "--pixel_type=f32"], "--pixel_type"),
            (["--rpc=pyramid", "--image_size=8x8x2"], "2D"),
            (["--rpc=pyramid", "--mode=sideways"], "--mode"),
            (["--rpc=detect", "--grouping=maybe"], "--grouping"),
            (["--rpc=deform", "--input=torus:3"], "torus:N,M"),
            (["--rpc=deform", f"--input={self.tmp.name}"], "one mesh file"),
            (["--input=x.png", "--video=y.avi"], "--video"),
            (["--shm", f"--input={two}"], "--shm"),
            ([f"--input={empty}"], "holds no image file"),
            (["--rpc=gradient", f"--input={self.tmp.name}/missing.png"], "missing"),
        ):
            run, _, _ = self.load(*args)
            self.assertEqual(run.returncode, 2, (args, run.stderr))
            self.assertIn(flag, run.stderr, args)


if __name__ == "__main__":
    unittest.main()
