"""`cuimg load` outputs against the CPU-backend server: a 10 s run writes --json_out, --csv and an
HTML --report whose numbers agree with each other (counts, codes, percentiles recomputed from the
CSV rows, per-second windows), a PNG report is a real image of the expected size, and a bad
--report path is a usage error before any call."""
import base64
import csv
import json
import os
import re
import subprocess
import tempfile
import unittest

import numpy as np

from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
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
        return subprocess.run([CLIENT, f"--target={self.server.target}", "load", "--progress=false",
                               "--image_size=96x64", *args], capture_output=True, text=True,
                              timeout=120)

    def test_ten_second_run_json_csv_and_html_report_agree(self):
        out = lambda name: os.path.join(self.tmp.name, name)
        run = self.load("--duration=10", "--warmup=1", "--concurrency=4", f"--json_out={out('s.json')}",
                        f"--csv={out('r.csv')}", f"--report={out('r.html')}")
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
            self.assertAlmostEqual(summary["latency_ms"][key], np.percentile(latencies, q), delta=2e-4)
        self.assertAlmostEqual(summary["latency_ms"]["max"], latencies.max(), delta=2e-4)
        self.assertAlmostEqual(summary["throughput_rps"], summary["ok"] / summary["seconds"], delta=0.01)
        self.assertEqual(sum(w["ok"] for w in summary["windows"]), summary["ok"])
        # One window per second; a call issued right at the end may start just past 10 s.
        self.assertIn(len(summary["windows"]), (10, 11))
        starts = np.array([float(r["start_s"]) for r in rows if r["code"] == "OK"])
        self.assertGreaterEqual(starts.min(), 1.0)  # warm-up excluded
        per_second = np.bincount((starts - 1.0).astype(int))
        self.assertEqual([w["ok"] for w in summary["windows"]], [int(n) for n in per_second if n])

        # HTML vs JSON: the embedded summary is the same, the page shows the numbers and has the
        # plots inline (nothing fetched from elsewhere).
        page = read(out("r.html"))
        embedded = re.search(r'<script type="application/json" id="cuimg-load-summary">(.*?)</script>',
                             page, re.S).group(1)
        self.assertEqual(json.loads(embedded.replace("<\\/", "</")), summary)
        self.assertIn(f"<td>{summary['requests']}</td>", page)
        self.assertIn(f"<td>{summary['latency_ms']['p99']}</td>", page)
        image = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page).group(1)
        self.assertEqual(png_size(base64.b64decode(image)), (900, 1000))
        self.assertNotRegex(page, r'(src|href)="(https?:)?//')

    def test_png_report_and_bad_report_path(self):
        png = os.path.join(self.tmp.name, "r.png")
        run = self.load("--requests=100", "--warmup=0", "--concurrency=2", f"--report={png}", "--json")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["requests"], 100)
        self.assertEqual(png_size(read(png, "rb")), (900, 1000))
        run = self.load("--requests=1", f"--report={os.path.join(self.tmp.name, 'r.pdf')}")
        self.assertEqual(run.returncode, 2)
        self.assertIn("--report", run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
