"""Deployment material and scale-out. Checks that the Dockerfile builds with exactly the scripts CI
runs, that the Kubernetes manifests and compose file parse (yamllint) and have the structure a GPU
deployment needs, and runs three cuimg-server replicas behind a round_robin client: load spreads
over all three, a replica killed mid-run costs no failed call (retries), and it takes traffic again
once restarted. Needs CUIMG_SERVER, CUIMG_CLIENT, CUIMG_REPO."""
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

import yaml

from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
REPO = os.environ["CUIMG_REPO"]


def read(path):
    return open(os.path.join(REPO, path)).read()


class Dockerfile(unittest.TestCase):
    def test_builds_with_the_scripts_ci_runs(self):
        text = read("Dockerfile")
        runs = [" ".join(r.split()) for r in re.findall(r"^RUN ((?:.*\\\n)*.*)", text, re.M)]
        ci = read("scripts/test.sh")
        self.assertIn("bash scripts/install_deps.sh", ci)
        self.assertIn("bash scripts/build.sh", ci)
        self.assertTrue(any(r.startswith("bash scripts/install_deps.sh build") for r in runs), runs)
        self.assertTrue(any("bash scripts/build.sh" in r for r in runs), runs)
        self.assertTrue(any("bash scripts/collect_libs.sh" in r for r in runs), runs)
        # No other build recipe hides in the Dockerfile.
        self.assertNotRegex(text, r"\b(cmake|ninja|apt-get|make)\b")
        stages = re.findall(r"^FROM (\S+) AS (\S+)", text, re.M)
        self.assertEqual([s for _, s in stages], ["build", "runtime"])
        self.assertRegex(stages[0][0], r"^nvidia/cuda:13\.\S+-devel-")
        self.assertRegex(stages[1][0], r"^nvidia/cuda:13\.\S+-runtime-")
        self.assertRegex(text, r"(?m)^USER 10001$")
        self.assertRegex(text, r'(?ms)^HEALTHCHECK .*?CMD \["cuimg", [^]]*"health"\]')
        self.assertRegex(text, r"(?m)^EXPOSE 50051 9464$")
        ignore = read(".dockerignore")
        for entry in ("build*/", "bundle/", ".git/"):
            self.assertIn(entry, ignore)


class Manifests(unittest.TestCase):
    def test_yamllint_accepts_deploy(self):
        run = subprocess.run(["yamllint", "-d", "{extends: relaxed, rules: {line-length: {max: 120}}}",
                              os.path.join(REPO, "deploy")], capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def docs(self):
        out = {}
        for name in sorted(os.listdir(os.path.join(REPO, "deploy/k8s"))):
            for doc in yaml.safe_load_all(read(f"deploy/k8s/{name}")):
                if doc and "kind" in doc:
                    out[(doc["kind"], doc["metadata"]["name"])] = doc
        return out

    def test_kubernetes_objects_have_what_a_gpu_deployment_needs(self):
        docs = self.docs()
        for key in [("Deployment", "cuimg"), ("Service", "cuimg"), ("Service", "cuimg-headless"),
                    ("ConfigMap", "cuimg-config"), ("HorizontalPodAutoscaler", "cuimg"),
                    ("PodDisruptionBudget", "cuimg")]:
            self.assertIn(key, docs)
            self.assertIn("apiVersion", docs[key])
        pod = docs[("Deployment", "cuimg")]["spec"]["template"]
        container = pod["spec"]["containers"][0]
        self.assertEqual(container["resources"]["limits"]["nvidia.com/gpu"], 1)
        # Probes use the plaintext health-only port (kubelet's gRPC probes cannot do TLS), which
        # the ConfigMap turns on.
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            self.assertEqual(container[probe]["grpc"]["port"], 50052)
        self.assertEqual(container["readinessProbe"]["grpc"]["service"], "cuimg.v1.Imaging")
        self.assertTrue(pod["spec"]["securityContext"]["runAsNonRoot"])
        self.assertTrue(container["securityContext"]["readOnlyRootFilesystem"])
        self.assertFalse(container["securityContext"]["allowPrivilegeEscalation"])
        self.assertEqual(pod["metadata"]["annotations"]["prometheus.io/port"], "9464")
        self.assertIn("--flagfile=/etc/cuimg/cuimg.flags", container["args"])
        flags = docs[("ConfigMap", "cuimg-config")]["data"]["cuimg.flags"].split()
        # Every flag in the ConfigMap is one the server knows.
        help_text = subprocess.run([SERVER, "--helpfull"], capture_output=True, text=True).stdout
        for flag in flags:
            self.assertIn("-" + flag.split("=")[0].lstrip("-") + " ", help_text, flag)
        self.assertIn("--health_listen_address=0.0.0.0:50052", flags)
        # TLS, client certificates and tokens from mounted secrets.
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        secrets = {v["name"]: v["secret"]["secretName"] for v in pod["spec"]["volumes"]
                   if "secret" in v}
        for flag, secret in (("--tls_cert_file", "cuimg-tls"), ("--tls_key_file", "cuimg-tls"),
                             ("--tls_client_ca_file", "cuimg-tls"),
                             ("--auth_tokens_file", "cuimg-tokens")):
            path = [f for f in flags if f.startswith(flag + "=")][0].split("=", 1)[1]
            self.assertEqual(secrets[mounts[os.path.dirname(path)]], secret, flag)
        self.assertIn("--require_client_cert", flags)
        grace = int([f for f in flags if f.startswith("--shutdown_grace_seconds")][0].split("=")[1])
        self.assertGreater(pod["spec"]["terminationGracePeriodSeconds"], grace + 5)
        self.assertEqual(docs[("Service", "cuimg-headless")]["spec"]["clusterIP"], "None")
        hpa = docs[("HorizontalPodAutoscaler", "cuimg")]["spec"]
        self.assertEqual(hpa["metrics"][0]["pods"]["metric"]["name"], "cuimg_inflight")
        adapter = yaml.safe_load(read("deploy/k8s/prometheus-adapter.yaml"))
        self.assertEqual(adapter["rules"]["custom"][0]["name"]["as"], "cuimg_inflight")

    def test_compose_runs_server_prometheus_and_grafana_with_the_dashboard(self):
        compose = yaml.safe_load(read("deploy/compose.yaml"))
        self.assertEqual(set(compose["services"]), {"cuimg", "prometheus", "grafana"})
        gpu = compose["services"]["cuimg"]["deploy"]["resources"]["reservations"]["devices"][0]
        self.assertIn("gpu", gpu["capabilities"])
        for volume in compose["services"]["grafana"]["volumes"]:
            source = volume.split(":")[0]
            self.assertTrue(os.path.exists(os.path.join(REPO, "deploy", source)), source)
        prom = yaml.safe_load(read("deploy/prometheus/prometheus.yml"))
        self.assertEqual(prom["scrape_configs"][0]["static_configs"][0]["targets"], ["cuimg:9464"])


def requests_on(server):
    text = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5).read().decode()
    return sum(float(v) for v in re.findall(r'cuimg_requests_total\{[^}]*rpc="Morphology"[^}]*\} (\S+)', text))


class ScaleOut(unittest.TestCase):
    def test_round_robin_spreads_load_and_survives_a_killed_replica(self):
        replicas = [ServerProcess(SERVER, "--backend=cpu", "--cpu_threads_per_request=1") for _ in range(3)]
        try:
            target = ",".join(r.target for r in replicas)
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "load.json")
                load = subprocess.Popen([CLIENT, f"--target={target}", "--timeout=20", "load",
                                         "--duration=10", "--warmup=0", "--concurrency=6",
                                         "--image_size=96x64", f"--json_out={out}", "--progress=false"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                time.sleep(3)
                victim = replicas[2]
                before_kill = requests_on(victim)
                port = victim.grpc_port
                victim.process.send_signal(signal.SIGKILL)
                victim.process.wait()
                time.sleep(1)
                restarted = ServerProcess(SERVER, "--backend=cpu", "--cpu_threads_per_request=1",
                                          listen=f"127.0.0.1:{port}")
                replicas[2] = restarted
                stdout, stderr = load.communicate(timeout=60)
                summary = json.load(open(out))
            self.assertEqual(load.returncode, 0, stdout + stderr)
            self.assertEqual(summary["codes"], {"OK": summary["requests"]})  # retries hid the kill
            total = summary["requests"]
            counts = [requests_on(r) for r in replicas[:2]] + [before_kill + requests_on(restarted)]
            for i, n in enumerate(counts):
                self.assertGreaterEqual(n, 0.2 * total, f"replica {i}: {n} of {total} ({counts})")
            self.assertGreater(requests_on(restarted), 0, "the restarted replica got no traffic")
        finally:
            for r in replicas:
                r.kill()


if __name__ == "__main__":
    unittest.main(verbosity=2)
