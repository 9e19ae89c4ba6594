"""`cuimg load` outputs against the CPU-backend server: a 10 s run writes --json_out, --csv and an
HTML --report whose numbers agree with each other (counts, codes, percentiles recomputed from the
CSV rows, per-second windows) and name the run's context (date, host, the server's version and
backend from its metrics endpoint, devices); seconds without a call stay as zero windows; failed
calls carry the server's messages into the console, JSON, CSV and HTML; a run without a
successful call gets a "no successful calls" panel instead of a histogram; a PNG report is a real
image of the expected size; --requests counts the calls after the warm-up; and a bad --report
path is a usage error before any call."""
import base64
import csv
import datetime
import html
import json
import os
import re
import socket
import subprocess
import tempfile
import unittest

import numpy as np

from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def png_size(data):
    """Width and height from the IHDR chunk."""
    assert data[:8] == PNG_MAGIC
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


class LoadReport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, "--backend=cpu")
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        assert cls.server.terminate() == 0, cls.server.log()

    def load(self, *args):
        return subprocess.run(
            [
                CLIENT,
                f"--target={self.server.target}",
                "load",
                "--progress=false",
                f"--server_metrics=127.0.0.1:{self.server.metrics_port}",
                "--image_size=96x64",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )

    def build_info(self):
        """The labels of the server's cuimg_build_info metric."""
        text = self.server.metrics()
        line = next(entry for entry in text.splitlines() if entry.startswith("cuimg_build_info{"))
        return dict(re.findall(r'(\w+)="([^"]*)"', line))

    @staticmethod
    def embedded(page):
        found = re.search(
            r'<script type="application/json" id="cuimg-load-summary">(.*?)</script>', page, re.S
        ).group(1)
        return json.loads(found.replace("<\\/", "</"))

    def test_ten_second_run_json_csv_and_html_report_agree(self):
        def out(name):
            return os.path.join(self.tmp.name, name)

        run = self.load(
            "--duration=10",
            "--warmup=1",
            "--concurrency=4",
            f"--json_out={out('s.json')}",
            f"--csv={out('r.csv')}",
            f"--report={out('r.html')}",
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("report: " + out("r.html"), run.stdout)
        summary = json.loads(read(out("s.json")))
        rows = list(csv.DictReader(read(out("r.csv")).splitlines()))

        # JSON vs CSV: every measured call is one row; percentiles recomputed from the rows.
        self.assertGreater(summary["ok"], 50)
        self.assertEqual(summary["requests"], len(rows))
        codes = {}
        for r in rows:
            codes[r["code"]] = codes.get(r["code"], 0) + 1
        self.assertEqual(summary["codes"], codes)
        latencies = np.array([float(r["latency_ms"]) for r in rows if r["code"] == "OK"])
        self.assertEqual(summary["ok"], len(latencies))
        for key, q in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9)):
            self.assertAlmostEqual(
                summary["latency_ms"][key], np.percentile(latencies, q), delta=2e-4
            )
        self.assertAlmostEqual(summary["latency_ms"]["max"], latencies.max(), delta=2e-4)
        self.assertAlmostEqual(
            summary["throughput_rps"], summary["ok"] / summary["seconds"], delta=0.01
        )
        self.assertEqual(sum(w["ok"] for w in summary["windows"]), summary["ok"])
        # One window per second; a call issued right at the end may start just past 10 s.
        self.assertIn(len(summary["windows"]), (10, 11))
        self.assertEqual([w["t"] for w in summary["windows"]], list(range(len(summary["windows"]))))
        starts = np.array([float(r["start_s"]) for r in rows if r["code"] == "OK"])
        self.assertGreaterEqual(starts.min(), 1.0)  # warm-up excluded
        per_second = np.bincount((starts - 1.0).astype(int), minlength=len(summary["windows"]))
        self.assertEqual([w["ok"] for w in summary["windows"]], [int(n) for n in per_second])
        self.assertGreater(summary["warmup"]["calls"], 0)

        # Every stage of the trailer, decode included, in the JSON and the CSV (raw pixels: the
        # server decodes nothing).
        self.assertEqual(
            list(summary["server_us_median"]), ["queue", "decode", "h2d", "kernel", "d2h", "total"]
        )
        self.assertEqual({float(r["decode_us"]) for r in rows}, {0.0})
        self.assertIn(" decode 0.0 ", run.stdout)

        # The context: when, from where, against which server build and devices.
        context = summary["context"]
        date = datetime.datetime.strptime(context["date_utc"], "%Y-%m-%dT%H:%M:%SZ")
        age = datetime.datetime.utcnow() - date
        self.assertTrue(datetime.timedelta(0) <= age < datetime.timedelta(minutes=5), age)
        self.assertEqual(context["client_host"], socket.gethostname())
        version = subprocess.run([CLIENT, "--version"], capture_output=True, text=True, timeout=60)
        self.assertEqual(context["client"], ", ".join(version.stdout.splitlines()))
        build = self.build_info()
        self.assertEqual(context["server"]["version"], build["version"])
        self.assertEqual(context["server"]["backend"], "cpu")
        # The server exports the commit its --version names (issue 46: reports said "unknown").
        server_version = subprocess.run(
            [SERVER, "--version"], capture_output=True, text=True, timeout=60
        ).stdout
        self.assertIn(f"commit: {build['commit']}\n", server_version)
        self.assertEqual(context["server"]["commit"], build["commit"])
        self.assertNotIn("note", context["server"])
        self.assertEqual(context["devices"], sorted({int(r["device"]) for r in rows}))
        self.assertTrue(context["devices"] and all(d >= 0 for d in context["devices"]))
        self.assertIn(
            f"server {build['version']} (commit {context['server']['commit']}), " "backend cpu",
            run.stdout,
        )

        # HTML vs JSON: the embedded summary is the same, the page shows the numbers and the
        # context and has the plots inline (nothing fetched from elsewhere).
        page = read(out("r.html"))
        self.assertEqual(self.embedded(page), summary)
        self.assertIn(f"<td>{summary['requests']}</td>", page)
        self.assertIn(f"<td>{summary['latency_ms']['p99']}</td>", page)
        self.assertIn(f"<td>{context['date_utc']}</td>", page)
        self.assertIn(f"<tr><th>server version</th><td>{build['version']}</td></tr>", page)
        self.assertIn("<tr><th>decode</th><td>0.0</td></tr>", page)
        self.assertNotIn('id="errors"', page)
        image = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page).group(1)
        self.assertEqual(png_size(base64.b64decode(image)), (900, 1000))
        self.assertNotRegex(page, r'(src|href)="(https?:)?//')

    def test_seconds_without_calls_stay_as_zero_windows(self):
        # Open loop at one call per 2 s over 4 s: calls start at 0 s and 2 s; seconds 1 and 3
        # have none, and stay, with no latency (null) rather than a made-up one.
        def out(name):
            return os.path.join(self.tmp.name, name)

        run = self.load(
            "--rate=0.5",
            "--duration=4",
            "--warmup=0",
            f"--json_out={out('z.json')}",
            f"--report={out('z.html')}",
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        summary = json.loads(read(out("z.json")))
        self.assertEqual(
            [(w["t"], w["ok"], w["errors"]) for w in summary["windows"]],
            [(0, 1, 0), (1, 0, 0), (2, 1, 0), (3, 0, 0)],
        )
        self.assertEqual(
            [w["p50_ms"] is None for w in summary["windows"]], [False, True, False, True]
        )
        page = read(out("z.html"))
        self.assertEqual(self.embedded(page)["windows"], summary["windows"])
        self.assertIn("<tr><td>1</td><td>0</td><td>0</td><td></td><td></td></tr>", page)

    def test_failures_carry_the_servers_messages(self):
        # A folder of two JPEGs and a file that is none: every third call fails with the server's
        # decode error, which the console, JSON, CSV and HTML all show.
        folder = os.path.join(self.tmp.name, "mixed")
        os.makedirs(folder, exist_ok=True)
        for name in ("fruits.jpg", "baboon.jpg"):
            with open(os.path.join(DATA, name), "rb") as src, open(
                os.path.join(folder, name), "wb"
            ) as dst:
                dst.write(src.read())
        with open(os.path.join(folder, "zz_broken.jpg"), "wb") as f:
            f.write(b"not an image <b>at all</b>")

        def out(name):
            return os.path.join(self.tmp.name, name)

        run = self.load(
            "--rpc=detect",
            f"--input={folder}",
            "--requests=12",
            "--warmup=0",
            "--concurrency=3",
            f"--json_out={out('m.json')}",
            f"--csv={out('m.csv')}",
            f"--report={out('m.html')}",
        )
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("error: 4 of 12 calls failed", run.stderr)
        summary = json.loads(read(out("m.json")))
        self.assertEqual(summary["codes"], {"INVALID_ARGUMENT": 4, "OK": 8})
        [message] = summary["errors"]["INVALID_ARGUMENT"]["messages"]
        self.assertEqual(message["count"], 4)
        self.assertIn("not a PNG or JPEG", message["message"])
        self.assertEqual(summary["errors"]["INVALID_ARGUMENT"]["count"], 4)
        self.assertIn(f"INVALID_ARGUMENT x4:\n         4  {message['message']}\n", run.stdout)
        rows = list(csv.DictReader(read(out("m.csv")).splitlines()))
        self.assertEqual({r["message"] for r in rows if r["code"] != "OK"}, {message["message"]})
        self.assertEqual({r["message"] for r in rows if r["code"] == "OK"}, {""})
        # Encoded JPEGs: the server's decode stage is measured and reported.
        self.assertGreater(summary["server_us_median"]["decode"], 0)
        self.assertTrue(all(float(r["decode_us"]) > 0 for r in rows if r["code"] == "OK"))
        page = read(out("m.html"))
        panel = re.search(
            r'<section class="panel errors" id="errors"><h2>Failures</h2>(.*?)</section>',
            page,
            re.S,
        ).group(1)
        self.assertIn("4 of 12 measured calls failed", panel)
        self.assertIn(html.escape(message["message"]), panel)
        self.assertIn(">INVALID_ARGUMENT</td>", panel)
        # The plots are there: OK calls give a histogram.
        image = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page).group(1)
        self.assertEqual(png_size(base64.b64decode(image)), (900, 1000))

    def test_all_error_run_explains_itself(self):
        # Every Pyramid call is refused (a ratio below 1): no histogram, a panel that says so and
        # lists the server's message; the PNG report has the same panel in place of the histogram.
        def out(name):
            return os.path.join(self.tmp.name, name)

        run = self.load(
            "--rpc=pyramid",
            "--ratio=0.5",
            "--requests=6",
            "--warmup=0",
            f"--json_out={out('e.json')}",
            f"--report={out('e.html')}",
        )
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("latency ms: no successful calls", run.stdout)
        self.assertIn("error: 6 of 6 calls failed", run.stderr)
        summary = json.loads(read(out("e.json")))
        [message] = summary["errors"]["INVALID_ARGUMENT"]["messages"]
        self.assertIn("ratio", message["message"])
        page = read(out("e.html"))
        panel = re.search(
            r'<section class="panel errors" id="errors"><h2>No successful calls</h2>'
            r"(.*?)</section>",
            page,
            re.S,
        ).group(1)
        self.assertIn("All 6 measured calls failed", panel)
        self.assertIn(html.escape(message["message"]), panel)
        self.assertNotIn("Server stages", page)
        # Two panels (the message, calls over time), not the three with a histogram.
        image = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page).group(1)
        self.assertEqual(png_size(base64.b64decode(image)), (900, 700))
        png = out("e.png")
        run = self.load(
            "--rpc=pyramid", "--ratio=0.5", "--requests=3", "--warmup=0", f"--report={png}"
        )
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertEqual(png_size(read(png, "rb")), (900, 700))

    def test_requests_count_after_the_warmup(self):
        # --requests=2 with the default 1 s warm-up: the warm-up runs, then 2 measured calls.
        run = self.load("--requests=2", "--concurrency=2", "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        summary = json.loads(run.stdout)
        self.assertEqual((summary["requests"], summary["ok"]), (2, 2))
        self.assertEqual(summary["warmup"]["seconds"], 1)
        self.assertGreater(summary["warmup"]["calls"], 0)
        run = self.load("--requests=2", "--concurrency=2")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(
            run.stdout, r"^requests 2 in .* \(after a 1\.0 s warm-up of \d+ calls, not counted\)"
        )
        for bad in ("--requests=-1", "--warmup=-1"):
            run = self.load(bad)
            self.assertEqual(run.returncode, 2, bad)
            self.assertIn(bad.split("=")[0], run.stderr)

    def test_context_without_a_metrics_endpoint(self):
        run = self.load("--requests=3", "--warmup=0", "--server_metrics=none", "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        server = json.loads(run.stdout)["context"]["server"]
        self.assertEqual(
            (server["version"], server["backend"], server["metrics"]),
            ("unknown", "unknown", "none"),
        )
        self.assertIn("--server_metrics", server["note"])

    def test_png_report_and_bad_report_path(self):
        png = os.path.join(self.tmp.name, "r.png")
        run = self.load(
            "--requests=100", "--warmup=0", "--concurrency=2", f"--report={png}", "--json"
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["requests"], 100)
        self.assertEqual(png_size(read(png, "rb")), (900, 1000))
        run = self.load("--requests=1", f"--report={os.path.join(self.tmp.name, 'r.pdf')}")
        self.assertEqual(run.returncode, 2)
        self.assertIn("--report", run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
