"""Deployment material and scale-out. Runs the Docker image's library collection on the built
binaries and its HEALTHCHECK against a server started with the image's ENTRYPOINT flags and TLS
and tokens on; renders the Kubernetes overlays with `kubectl kustomize` and validates them with
kubernetes-validate --strict (scripts/install_deploy_tools.sh), checks what a GPU deployment needs,
the NetworkPolicy, the alert rules (promtool, with their unit test), the dashboard's instance
variable and compose's loopback ports; and runs three cuimg-server replicas behind a round_robin
client: load spreads over all three, a replica killed mid-run costs no failed call (retries), and
it takes traffic again once restarted. Needs CUIMG_SERVER, CUIMG_CLIENT, CUIMG_REPO."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import yaml

from server_process import ServerProcess, free_port
from tls_material import TlsMaterial

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
REPO = os.environ["CUIMG_REPO"]
DEPLOY_TOOLS = os.environ.get(
    "CUIMG_DEPLOY_TOOLS", os.path.expanduser("~/.cache/cuimg/deploy-tools")
)
OVERLAYS = ("dev", "prod")


def read(path):
    with open(os.path.join(REPO, path)) as f:
        return f.read()


def dockerfile_instruction(text, name):
    """The JSON array of the (continued) instruction `name` (ENTRYPOINT, or HEALTHCHECK's CMD)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    line = re.search(rf"(?m)^{name} .*$", joined).group(0)
    return json.loads(line[line.index("[") :])


class Dockerfile(unittest.TestCase):
    def test_runtime_stage_collects_every_library_the_binaries_load(self):
        text = read("Dockerfile")
        collect = re.search(r"bash (scripts/collect_libs\.sh) (\S+) (.*)$", text, re.M)
        self.assertIsNotNone(collect, "the build stage no longer runs collect_libs.sh")
        # The RUN may continue past the binaries (a trailing backslash: the nvJPEG copy follows).
        libdir, binaries = collect.group(2), [b for b in collect.group(3).split() if b != "\\"]
        with tempfile.TemporaryDirectory() as tmp:
            # The image's /opt/cuimg, here under tmp: the built binaries, then the script as the
            # Dockerfile runs it.
            root = os.path.commonpath([libdir, *binaries])

            def local(path):
                return os.path.join(tmp, os.path.relpath(path, root))

            os.makedirs(os.path.dirname(local(binaries[0])))
            built = {
                "cuimg-server": SERVER,
                "cuimg": CLIENT,
                "cuimg-frame-decoder": os.environ["CUIMG_FRAME_DECODER"],
            }
            for binary in binaries:
                shutil.copy(built[os.path.basename(binary)], local(binary))
            run = subprocess.run(
                [
                    "bash",
                    os.path.join(REPO, collect.group(1)),
                    local(libdir),
                    *map(local, binaries),
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            for binary in map(local, binaries):
                ldd = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
                self.assertNotIn("not found", ldd)
                for name, path in re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M):
                    if not re.match(r"lib(c|m|pthread|dl|rt|stdc\+\+|gcc_s)\.so", name):
                        self.assertEqual(
                            os.path.dirname(os.path.normpath(path)),
                            os.path.normpath(local(libdir)),
                            f"{name} => {path}",
                        )
                version = subprocess.run(
                    [binary, "--version"],
                    capture_output=True,
                    text=True,
                    env={"PATH": "/usr/bin:/bin"},
                    timeout=30,
                )
                self.assertEqual(version.returncode, 0, version.stderr)

    def test_healthcheck_passes_with_tls_and_tokens_on(self):
        text = read("Dockerfile")
        entrypoint = dockerfile_instruction(text, "ENTRYPOINT")
        check = dockerfile_instruction(text, "HEALTHCHECK")
        self.assertEqual((entrypoint[0], check[0]), ("cuimg-server", "cuimg"))
        ports = {}

        def local(arg):  # the container's ports, as free loopback ports here
            def sub(m):
                ports.setdefault(m.group(2), free_port())
                return f"127.0.0.1:{ports[m.group(2)]}"

            return re.sub(r"(0\.0\.0\.0|127\.0\.0\.1):(\d+)", sub, arg)

        tls = TlsMaterial(clients=())
        tokens = tls.write_tokens(["alice healthcheck-test-token-0123456789"])
        server = ServerProcess(
            SERVER,
            *map(local, entrypoint[1:]),
            "--backend=cpu",
            *tls.server_flags(mtls=True, tokens=tokens),
            listen=local("0.0.0.0:50051"),
        )
        try:
            health = subprocess.run(
                [CLIENT, *map(local, check[1:])], capture_output=True, text=True, timeout=30
            )
            self.assertEqual(health.returncode, 0, health.stdout + health.stderr + server.log())
            # What the image checked before: plaintext to the gRPC port, which TLS refuses.
            plaintext = subprocess.run(
                [CLIENT, f"--target={server.target}", "--timeout=2", "--max_attempts=1", "health"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            self.assertNotEqual(plaintext.returncode, 0)
        finally:
            self.assertEqual(server.terminate(), 0, server.log())
            tls.close()
        self.assertIn("50052", ports)

    def test_base_images_are_build_arguments_defaulting_to_cuda_13(self):
        text = read("Dockerfile")
        args = dict(re.findall(r"(?m)^ARG (\w+)=(\S+)$", text))
        self.assertRegex(args["BUILD_IMAGE"], r"^nvidia/cuda:13\.\S+-devel-")
        self.assertRegex(args["RUNTIME_IMAGE"], r"^nvidia/cuda:13\.\S+-runtime-")
        stages = re.findall(r"(?m)^FROM (\S+) AS (\S+)$", text)
        self.assertEqual(stages, [("${BUILD_IMAGE}", "build"), ("${RUNTIME_IMAGE}", "runtime")])
        build = text[text.index("AS build") : text.index("AS runtime")]
        self.assertRegex(build, r"(?m)^ENV PATH=/usr/local/cuda/bin:\$PATH$")


def tool(name):
    for path in (os.path.join(DEPLOY_TOOLS, "bin", name), shutil.which(name)):
        if path and os.access(path, os.X_OK):
            return path
    raise AssertionError(
        f"{name} not found: run scripts/install_deps.sh and " "scripts/install_deploy_tools.sh"
    )


def render(overlay):
    run = subprocess.run(
        [tool("kubectl"), "kustomize", os.path.join(REPO, "deploy/k8s/overlays", overlay)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def objects(overlay):
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(render(overlay)) if d}


def flags_of(docs):
    """The Deployment's container and the flags of every --flagfile it reads, in order."""
    pod = docs[("Deployment", "cuimg")]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    config_mount = [name for name, v in volumes.items() if "configMap" in v][0]
    config = docs[("ConfigMap", volumes[config_mount]["configMap"]["name"])]
    flags = []
    for arg in container["args"]:
        path = arg.split("=", 1)[1]
        assert os.path.dirname(path) == mounts[config_mount], arg
        flags += config["data"][os.path.basename(path)].split()
    return pod, container, flags


class Manifests(unittest.TestCase):
    def test_yamllint_accepts_deploy(self):
        run = subprocess.run(
            [
                "yamllint",
                "-d",
                "{extends: relaxed, rules: {line-length: {max: 120}}}",
                os.path.join(REPO, "deploy"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_deploy_k8s_holds_only_kubernetes_objects_and_kustomizations(self):
        for dirpath, _, names in os.walk(os.path.join(REPO, "deploy/k8s")):
            for name in names:
                if not name.endswith(".yaml"):
                    continue
                with open(os.path.join(dirpath, name)) as f:
                    for doc in yaml.safe_load_all(f):
                        self.assertIn("apiVersion", doc, os.path.join(dirpath, name))
                        self.assertIn("kind", doc, os.path.join(dirpath, name))

    def test_overlays_render_and_pass_strict_schema_validation(self):
        for overlay in OVERLAYS:
            with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
                f.write(render(overlay))
                f.flush()
                run = subprocess.run(
                    [tool("kubernetes-validate"), "--strict", "--quiet", f.name],
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
            self.assertEqual(run.returncode, 0, overlay + run.stdout + run.stderr)

    def test_kubernetes_objects_have_what_a_gpu_deployment_needs(self):
        help_text = subprocess.run([SERVER, "--helpfull"], capture_output=True, text=True).stdout
        for overlay in OVERLAYS:
            docs = objects(overlay)
            for key in [
                ("Deployment", "cuimg"),
                ("Service", "cuimg"),
                ("Service", "cuimg-headless"),
                ("HorizontalPodAutoscaler", "cuimg"),
                ("NetworkPolicy", "cuimg"),
            ]:
                self.assertIn(key, docs, overlay)
            pod, container, flags = flags_of(docs)
            self.assertEqual(container["resources"]["limits"]["nvidia.com/gpu"], 1)
            # Probes use the plaintext health-only port (kubelet's gRPC probes cannot do TLS).
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                self.assertEqual(container[probe]["grpc"]["port"], 50052)
            self.assertIn("--health_listen_address=0.0.0.0:50052", flags)
            self.assertEqual(container["readinessProbe"]["grpc"]["service"], "cuimg.v1.Imaging")
            self.assertTrue(pod["spec"]["securityContext"]["runAsNonRoot"])
            self.assertTrue(container["securityContext"]["readOnlyRootFilesystem"])
            self.assertFalse(container["securityContext"]["allowPrivilegeEscalation"])
            self.assertEqual(pod["metadata"]["annotations"]["prometheus.io/port"], "9464")
            # Every flag in the flag files is one the server knows.
            for flag in flags:
                self.assertIn("--" + flag.split("=")[0].lstrip("-") + " ", help_text, flag)
            grace = [f for f in flags if f.startswith("--shutdown_grace_seconds=")][0]
            grace = int(grace.split("=")[1])
            self.assertGreater(pod["spec"]["terminationGracePeriodSeconds"], grace + 5)
            self.assertEqual(docs[("Service", "cuimg-headless")]["spec"]["clusterIP"], "None")
            hpa = docs[("HorizontalPodAutoscaler", "cuimg")]["spec"]
            self.assertEqual(hpa["metrics"][0]["pods"]["metric"]["name"], "cuimg_inflight")
        adapter = yaml.safe_load(read("deploy/prometheus-adapter/values.yaml"))
        self.assertEqual(adapter["rules"]["custom"][0]["name"]["as"], "cuimg_inflight")

    def test_dev_is_plaintext_and_prod_takes_tls_and_tokens_from_the_secrets(self):
        _, _, dev_flags = flags_of(objects("dev"))
        self.assertFalse(
            [f for f in dev_flags if f.startswith(("--tls", "--auth", "--require_client"))]
        )
        docs = objects("prod")
        pod, container, flags = flags_of(docs)
        # The pods read exactly the files test_security.py starts a server with.
        self.assertEqual(
            flags,
            read("deploy/k8s/base/cuimg.flags").split()
            + read("deploy/k8s/overlays/prod/security.flags").split(),
        )
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        secrets = {
            v["name"]: v["secret"]["secretName"] for v in pod["spec"]["volumes"] if "secret" in v
        }
        for flag, secret in (
            ("--tls_cert_file", "cuimg-tls"),
            ("--tls_key_file", "cuimg-tls"),
            ("--tls_client_ca_file", "cuimg-tls"),
            ("--auth_tokens_file", "cuimg-tokens"),
        ):
            path = [f for f in flags if f.startswith(flag + "=")][0].split("=", 1)[1]
            self.assertEqual(secrets[mounts[os.path.dirname(path)]], secret, flag)
        self.assertIn("--require_client_cert", flags)
        self.assertIn(("PodDisruptionBudget", "cuimg"), docs)
        # The README says how to create both secrets before applying.
        readme = read("README.md")
        for secret in ("cuimg-tls", "cuimg-tokens"):
            self.assertTrue(f"kubectl create secret generic {secret}" in readme, secret)

    def test_network_policy_opens_only_grpc_to_all_and_metrics_to_monitoring(self):
        docs = objects("prod")
        policy = docs[("NetworkPolicy", "cuimg")]["spec"]
        pod_labels = docs[("Deployment", "cuimg")]["spec"]["template"]["metadata"]["labels"]
        self.assertLessEqual(policy["podSelector"]["matchLabels"].items(), pod_labels.items())
        self.assertEqual(sorted(policy["policyTypes"]), ["Egress", "Ingress"])
        self.assertFalse(policy.get("egress"))  # cuimg-server connects nowhere
        open_ports, restricted = set(), set()
        for rule in policy["ingress"]:
            ports = {p["port"] for p in rule["ports"]}
            (restricted if rule.get("from") else open_ports).update(ports)
        self.assertEqual(open_ports, {50051})
        self.assertEqual(restricted, {9464})  # the health port: only the node's kubelet

    def test_compose_runs_server_prometheus_and_grafana_on_loopback(self):
        compose = yaml.safe_load(read("deploy/compose.yaml"))
        self.assertEqual(set(compose["services"]), {"cuimg", "prometheus", "grafana"})
        gpu = compose["services"]["cuimg"]["deploy"]["resources"]["reservations"]["devices"][0]
        self.assertIn("gpu", gpu["capabilities"])
        for name, service in compose["services"].items():
            for port in service["ports"]:
                self.assertRegex(port, r"^\$\{CUIMG_BIND:-127\.0\.0\.1\}:\d+:\d+$", name)
        for volume in compose["services"]["grafana"]["volumes"]:
            source = volume.split(":")[0]
            self.assertTrue(os.path.exists(os.path.join(REPO, "deploy", source)), source)
        prom = yaml.safe_load(read("deploy/prometheus/prometheus.yml"))
        self.assertEqual(prom["scrape_configs"][0]["static_configs"][0]["targets"], ["cuimg:9464"])

    def test_alert_rules_pass_promtool_and_their_unit_tests(self):
        rules = os.path.join(REPO, "deploy/prometheus/alerts.yml")
        names = {
            r["alert"]
            for g in yaml.safe_load(read("deploy/prometheus/alerts.yml"))["groups"]
            for r in g["rules"]
        }
        self.assertLessEqual({"CuimgTargetDown", "CuimgAbsent", "CuimgServingOnCpu"}, names)
        for args in (
            ["check", "rules", rules],
            ["test", "rules", os.path.join(REPO, "deploy/prometheus/alerts_test.yml")],
        ):
            run = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_dashboard_filters_every_query_by_the_instance_variable(self):
        dashboard = json.loads(read("deploy/grafana/cuimg-dashboard.json"))
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        self.assertTrue(variables["instance"]["includeAll"])
        self.assertIn("instance", variables["instance"]["definition"])
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                for selector in re.findall(r"\bcuimg_\w+(\{[^}]*\})?", target["expr"]):
                    self.assertIn('instance=~"$instance"', selector, target["expr"])
        exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
        self.assertIn("cuimg_backend_info", exprs)


def requests_on(server):
    text = server.metrics()
    return sum(
        float(v)
        for v in re.findall(r'cuimg_requests_total\{[^}]*rpc="Morphology"[^}]*\} (\S+)', text)
    )


class ScaleOut(unittest.TestCase):
    def test_round_robin_spreads_load_and_survives_a_killed_replica(self):
        replicas = [
            ServerProcess(SERVER, "--backend=cpu", "--cpu_threads_per_request=1") for _ in range(3)
        ]
        try:
            target = ",".join(r.target for r in replicas)
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "load.json")
                load = subprocess.Popen(
                    [
                        CLIENT,
                        f"--target={target}",
                        "--timeout=20",
                        "load",
                        "--duration=10",
                        "--warmup=0",
                        "--concurrency=6",
                        "--image_size=96x64",
                        f"--json_out={out}",
                        "--progress=false",
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                time.sleep(3)
                victim = replicas[2]
                before_kill = requests_on(victim)
                port = victim.grpc_port
                victim.process.send_signal(signal.SIGKILL)
                victim.process.wait()
                time.sleep(1)
                restarted = ServerProcess(
                    SERVER,
                    "--backend=cpu",
                    "--cpu_threads_per_request=1",
                    listen=f"127.0.0.1:{port}",
                )
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
