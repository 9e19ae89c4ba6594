"""Observability of the real cuimg-server binary: `promtool check metrics` on a live scrape, a real
Prometheus server scraping it and answering PromQL, the alert rules and the Grafana dashboard
checked against the metrics the server exports, and health/scheduling under an injected device
fault. Needs CUIMG_SERVER, CUIMG_REPO and the generated stubs on PYTHONPATH; promtool and
prometheus from Debian's `prometheus` package."""
import json
import os
import re
import subprocess
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

import grpc
import numpy as np

from cuimg.v1 import imaging_service_pb2_grpc, morphology_pb2, types_pb2
from grpc_protocols import health_pb2, health_pb2_grpc
from server_process import ServerProcess, free_port

SERVER = os.environ["CUIMG_SERVER"]
REPO = os.environ["CUIMG_REPO"]
DEPLOY = os.path.join(REPO, "deploy")


def morph_request(valid=True):
    image = types_pb2.Image(
        pixel_type=types_pb2.PIXEL_TYPE_U8,
        width=64,
        height=48,
        data=np.random.default_rng(0).integers(0, 256, 64 * 48, np.uint8).tobytes(),
    )
    if not valid:
        image.width = 0
    step = morphology_pb2.MorphologyStep(
        op=morphology_pb2.MORPHOLOGY_OP_DILATE,
        element=morphology_pb2.StructuringElement(
            shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=3, height=3
        ),
    )
    return morphology_pb2.MorphologyRequest(input=types_pb2.ImageSource(image=image), steps=[step])


def call(stub, request):
    """Returns (status code name, device from the timing trailer or None)."""
    try:
        _, c = stub.Morphology.with_call(request, timeout=30)
        trailers = dict(c.trailing_metadata())
        device = int(re.search(r"device=(-?\d+)", trailers["cuimg-timing"]).group(1))
        return "OK", device
    except grpc.RpcError as e:
        return e.code().name, None


def metric_value(text, name, labels):
    pattern = re.escape(name) + r"\{([^}]*)\} ([0-9.eE+-]+)"
    for m in re.finditer(pattern, text):
        got = dict(kv.split("=", 1) for kv in m.group(1).split(","))
        if all(got.get(k) == f'"{v}"' for k, v in labels.items()):
            return float(m.group(2))
    return None


def health(channel, service="cuimg.v1.Imaging"):
    stub = health_pb2_grpc.HealthStub(channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def exported_names(text):
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
    return names


class MetricsAndPrometheus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, "--backend=cpu", "--cpu_devices=2")
        cls.channel = grpc.insecure_channel(cls.server.target)
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)
        for i in range(12):
            call(cls.stub, morph_request(valid=(i % 4 != 0)))

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        assert cls.server.terminate() == 0, cls.server.log()

    def test_promtool_accepts_the_live_scrape(self):
        text = self.server.metrics()
        run = subprocess.run(
            ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60
        )
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        for name in [
            "cuimg_requests_total",
            "cuimg_request_duration_seconds",
            "cuimg_stage_duration_seconds",
            "cuimg_inflight_requests",
            "cuimg_bytes_received_total",
            "cuimg_bytes_sent_total",
            "cuimg_pixels_processed_total",
            "cuimg_rejected_total",
            "cuimg_build_info",
            "cuimg_device_healthy",
            "cuimg_device_requests_total",
            "cuimg_resident_objects",
        ]:
            self.assertIn(name, exported_names(text))
        self.assertEqual(
            metric_value(
                text, "cuimg_requests_total", {"rpc": "Morphology", "code": "INVALID_ARGUMENT"}
            ),
            3.0,
        )

    def test_alert_rules_and_scrape_config_pass_promtool(self):
        for args in (
            ["check", "rules", os.path.join(DEPLOY, "prometheus/alerts.yml")],
            ["check", "config", os.path.join(DEPLOY, "prometheus/prometheus.yml")],
        ):
            run = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_dashboard_and_rules_name_only_exported_metrics(self):
        exported = exported_names(self.server.metrics())
        dashboard = json.load(open(os.path.join(DEPLOY, "grafana/cuimg-dashboard.json")))
        exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
        exprs += re.findall(
            r"expr: \|?\s*([^\n]+(?:\n\s{12,}[^\n]+)*)",
            open(os.path.join(DEPLOY, "prometheus/alerts.yml")).read(),
        )
        self.assertGreater(len(exprs), 10)
        for expr in exprs:
            for name in re.findall(r"\bcuimg_[a-z0-9_]+", expr):
                family = re.sub(r"_(bucket|sum|count)$", "", name)
                self.assertIn(family, exported, f"{name} in {expr!r}")

    def test_a_real_prometheus_scrapes_and_answers_promql(self):
        with tempfile.TemporaryDirectory() as tmp:
            config = os.path.join(tmp, "prometheus.yml")
            open(config, "w").write(
                "global: {scrape_interval: 1s}\n"
                "scrape_configs:\n"
                "  - job_name: cuimg\n"
                f"    static_configs: [{{targets: ['127.0.0.1:{self.server.metrics_port}']}}]\n"
            )
            port = free_port()
            prom = subprocess.Popen(
                [
                    "prometheus",
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp}/data",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:

                def query(q):
                    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode(
                        {"query": q}
                    )
                    return json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]

                deadline = time.time() + 60
                requests = quantile = []
                while time.time() < deadline:
                    call(self.stub, morph_request())  # traffic while Prometheus scrapes
                    try:
                        requests = query('cuimg_requests_total{rpc="Morphology",code="OK"}')
                        quantile = query(
                            "histogram_quantile(0.99, sum by (le) "
                            "(rate(cuimg_request_duration_seconds_bucket[30s])))"
                        )
                    except OSError:
                        pass
                    if requests and quantile and quantile[0]["value"][1] not in ("NaN", "0"):
                        break
                    time.sleep(0.5)
                self.assertTrue(requests, "no cuimg_requests_total series in Prometheus")
                self.assertGreater(float(requests[0]["value"][1]), 0)
                self.assertTrue(quantile)
                p99 = float(quantile[0]["value"][1])
                self.assertTrue(0 < p99 <= 10, p99)
            finally:
                prom.terminate()
                prom.wait(timeout=30)


class DeviceFaults(unittest.TestCase):
    def test_a_failed_device_leaves_rotation_and_returns(self):
        server = ServerProcess(
            SERVER,
            "--backend=cpu",
            "--cpu_devices=2",
            "--health_poll_ms=50",
            "--inject_device_failure=1:2:3000",
            "--worker_threads=1",
        )
        try:
            channel = grpc.insecure_channel(server.target)
            stub = imaging_service_pb2_grpc.ImagingStub(channel)
            codes = [call(stub, morph_request()) for _ in range(8)]
            self.assertIn(("UNAVAILABLE", None), codes)  # the request the fault hit
            time.sleep(0.3)
            text = server.metrics()
            self.assertEqual(metric_value(text, "cuimg_device_healthy", {"device": "cpu1"}), 0.0)
            self.assertEqual(health(channel), health_pb2.HealthCheckResponse.SERVING)
            # While cpu1 is out, every request runs on cpu0.
            after = [call(stub, morph_request()) for _ in range(6)]
            self.assertEqual(after, [("OK", 0)] * 6)
            # It comes back after the fault's duration and takes traffic again.
            time.sleep(3.2)
            self.assertEqual(
                metric_value(server.metrics(), "cuimg_device_healthy", {"device": "cpu1"}), 1.0
            )
            later = [call(stub, morph_request()) for _ in range(6)]
            self.assertTrue(all(code == "OK" for code, _ in later))
            before = metric_value(text, "cuimg_device_requests_total", {"device": "cpu1"})
            self.assertGreater(
                metric_value(server.metrics(), "cuimg_device_requests_total", {"device": "cpu1"}),
                before,
            )
            channel.close()
        finally:
            self.assertEqual(server.terminate(), 0)

    def test_health_is_not_serving_while_no_device_is_healthy(self):
        server = ServerProcess(
            SERVER,
            "--backend=cpu",
            "--cpu_devices=1",
            "--health_poll_ms=50",
            "--inject_device_failure=0:1:1500",
        )
        try:
            channel = grpc.insecure_channel(server.target)
            stub = imaging_service_pb2_grpc.ImagingStub(channel)
            self.assertEqual(call(stub, morph_request())[0], "OK")
            self.assertEqual(call(stub, morph_request())[0], "UNAVAILABLE")
            time.sleep(0.3)
            self.assertEqual(health(channel), health_pb2.HealthCheckResponse.NOT_SERVING)
            self.assertEqual(health(channel, ""), health_pb2.HealthCheckResponse.NOT_SERVING)
            self.assertEqual(call(stub, morph_request())[0], "UNAVAILABLE")
            time.sleep(1.6)
            self.assertEqual(health(channel), health_pb2.HealthCheckResponse.SERVING)
            self.assertEqual(call(stub, morph_request())[0], "OK")
            self.assertIn("event=health serving=0", server.log())
            channel.close()
        finally:
            self.assertEqual(server.terminate(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
