"""The binaries' operator-facing surface: --help (the server's and every client subcommand's),
--helpfull and --version exit 0 and say what they should; SIGHUP drains like SIGTERM; --backend=auto
without a GPU serves on the CPU backend with a warning and cuimg_backend_info{backend="cpu"}, and
--require_gpu refuses to start instead. Needs CUIMG_SERVER, CUIMG_CLIENT, CUIMG_REPO and
CUIMG_BUILD_TYPE, and the generated stubs on PYTHONPATH."""
import os
import platform
import re
import signal
import subprocess
import time
import unittest

import grpc
import numpy as np

from cuimg.v1 import imaging_service_pb2_grpc, morphology_pb2, types_pb2
from grpc_protocols import health_pb2, health_pb2_grpc
from server_process import ServerProcess
from tls_material import TlsMaterial

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
REPO = os.environ["CUIMG_REPO"]
BUILD_TYPE = os.environ["CUIMG_BUILD_TYPE"]

SUBCOMMANDS = [
    "health",
    "morphology",
    "label",
    "gradient",
    "pyramid",
    "detect",
    "models",
    "deform",
    "mesh",
    "load",
]
CONNECTION = [
    "target",
    "timeout",
    "lb_policy",
    "max_attempts",
    "tls",
    "tls_ca_file",
    "tls_cert_file",
    "tls_key_file",
    "tls_server_name",
    "token_file",
]


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=30)


def defined_flags(path):
    """Names of the ABSL_FLAGs a source file defines."""
    with open(os.path.join(REPO, path)) as f:
        text = f.read()
    return set(re.findall(r"ABSL_FLAG\(\s*[\w:]+\s*,\s*(\w+)\s*,", text))


def listed_flags(text):
    return set(re.findall(r"(?m)^  --(\w+) \(default: ", text))


def project_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        text = f.read()
    return re.search(r"project\(cuimg VERSION (\S+)", text).group(1)


def morph(size, disk):
    data = np.random.default_rng(0).integers(0, 256, size * size, np.uint8).tobytes()
    return morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(
            image=types_pb2.Image(
                pixel_type=types_pb2.PIXEL_TYPE_U8, width=size, height=size, data=data
            )
        ),
        steps=[
            morphology_pb2.MorphologyStep(
                op=morphology_pb2.MORPHOLOGY_OP_DILATE,
                element=morphology_pb2.StructuringElement(
                    shape=morphology_pb2.ELEMENT_SHAPE_ELLIPSE, width=disk, height=disk
                ),
            )
        ],
    )


class Help(unittest.TestCase):
    def test_server_help_lists_every_server_flag_and_exits_zero(self):
        for flag in ("--help", "-help", "--helpshort"):
            out = run(SERVER, flag)
            self.assertEqual(out.returncode, 0, flag + out.stderr)
            self.assertNotIn("No flags matched", out.stdout)
            self.assertEqual(listed_flags(out.stdout), defined_flags("server/main.cc"), flag)
            self.assertIn("SIGHUP", out.stdout)

    def test_server_helpfull_adds_abseils_flags_and_exits_zero(self):
        out = run(SERVER, "--helpfull")
        self.assertEqual(out.returncode, 0, out.stderr)
        listed = listed_flags(out.stdout)
        self.assertLessEqual(defined_flags("server/main.cc"), listed)
        self.assertIn("flagfile", listed)

    def test_client_help_lists_every_client_flag_and_exits_zero(self):
        out = run(CLIENT, "--help")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(listed_flags(out.stdout), defined_flags("client/main.cc"))
        for subcommand in SUBCOMMANDS:
            self.assertIn(f"  {subcommand} ", out.stdout)
        self.assertEqual(run(CLIENT, "--helpfull").returncode, 0)

    def test_each_subcommand_help_lists_its_flags_and_the_connection_flags(self):
        union = set()
        for subcommand in SUBCOMMANDS:
            # The subcommand may come after other flags, as when running it.
            out = run(CLIENT, "--timeout=5", subcommand, "--help")
            self.assertEqual(out.returncode, 0, subcommand + out.stderr)
            listed = listed_flags(out.stdout)
            if subcommand == "mesh":
                self.assertEqual(listed, {"n", "m", "output"})
            else:
                self.assertLessEqual(set(CONNECTION), listed, subcommand)
            union |= listed
        # Every client flag belongs to some subcommand's help.
        self.assertEqual(union, defined_flags("client/main.cc"))
        morphology = listed_flags(run(CLIENT, "morphology", "--help").stdout)
        self.assertLessEqual(
            {"input", "output", "steps", "op", "shape", "size", "iterations"}, morphology
        )
        self.assertFalse({"rpc", "concurrency", "model", "levels"} & morphology)
        load = listed_flags(run(CLIENT, "load", "--help").stdout)
        self.assertLessEqual(
            {"rpc", "concurrency", "model", "levels", "kernel_length", "twist"}, load
        )

    def test_arguments_after_double_dash_are_not_usage_flags(self):
        out = run(CLIENT, "--", "--help")
        self.assertEqual(out.returncode, 2)  # an unknown subcommand "--help"
        self.assertEqual(out.stdout, "")


class Version(unittest.TestCase):
    def check(self, binary, program):
        out = run(binary, "--version")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0], f"{program} {project_version()}")
        self.assertNotIn("Debug build", out.stdout)
        self.assertEqual(lines[2], f"build type: {BUILD_TYPE}")
        commit = re.fullmatch(r"commit: (\S+)", lines[1]).group(1)
        head = subprocess.run(
            ["git", "-C", REPO, "rev-parse", "--verify", "HEAD"], capture_output=True, text=True
        )
        if head.returncode != 0:
            self.assertEqual(commit, "unknown")
        else:
            # Built from this checkout: a commit of it (HEAD when the build ran).
            self.assertRegex(commit, r"^[0-9a-f]{12}(-dirty)?$")
            exists = subprocess.run(
                ["git", "-C", REPO, "cat-file", "-e", commit.split("-")[0] + "^{commit}"]
            )
            self.assertEqual(exists.returncode, 0, commit)
        return lines

    def test_server_version(self):
        self.check(SERVER, "cuimg-server")

    def test_client_version_matches_the_server(self):
        self.assertEqual(self.check(CLIENT, "cuimg")[1:], self.check(SERVER, "cuimg-server")[1:])


class Signals(unittest.TestCase):
    def test_sighup_finishes_the_call_in_flight_and_exits_zero(self):
        server = ServerProcess(
            SERVER,
            "--backend=cpu",
            "--cpu_threads_per_request=1",
            "--worker_threads=1",
            "--shutdown_grace_seconds=60",
        )
        try:
            channel = grpc.insecure_channel(server.target)
            stub = imaging_service_pb2_grpc.ImagingStub(channel)
            call = stub.Morphology.future(morph(640, 61), timeout=120)  # about a second
            deadline = time.monotonic() + 30
            while not re.search(r"(?m)^cuimg_inflight_requests\{[^}]*\} [1-9]", server.metrics()):
                self.assertLess(time.monotonic(), deadline, "the call never arrived")
                time.sleep(0.02)
            server.process.send_signal(signal.SIGHUP)
            self.assertEqual(len(call.result().result.image.data), 640 * 640)
            self.assertEqual(server.process.wait(timeout=60), 0, server.log())
            self.assertIn(f"event=shutdown signal={int(signal.SIGHUP)}", server.log())
            self.assertIn("event=stopped", server.log())
            channel.close()
        finally:
            server.kill()


def huge_pages_available():
    """Whether glibc can be told to use transparent huge pages here (glibc >= 2.35, THP not off)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            modes = f.read()
    except OSError:
        return False
    name, version = platform.libc_ver()
    major, minor = (int(v) for v in (version or "0.0").split(".")[:2])
    return name == "glibc" and (major, minor) >= (2, 35) and "[never]" not in modes


class HugePageMalloc(unittest.TestCase):
    """The client, and the server when told (--malloc_huge_pages), start themselves again with
    GLIBC_TUNABLES glibc.malloc.hugetlb=1 (cuimg/common/malloc_policy.h); an operator's own
    setting of it wins."""

    def start(self, tunables, *flags):
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        if tunables is not None:
            env["GLIBC_TUNABLES"] = tunables
        server = ServerProcess(SERVER, "--backend=cpu", *flags, env=env)
        self.addCleanup(server.kill)
        # The exec kept the process: the pid Popen knows serves the calls.
        self.assertEqual(self.health(server.target), health_pb2.HealthCheckResponse.SERVING)
        return server

    def health(self, target):
        with grpc.insecure_channel(target) as channel:
            return (
                health_pb2_grpc.HealthStub(channel)
                .Check(health_pb2.HealthCheckRequest(), timeout=10)
                .status
            )

    def startup_line(self, server):
        lines = [line for line in server.log().splitlines() if "event=startup " in line]
        self.assertEqual(len(lines), 1, server.log())
        return lines[0]

    def test_the_server_asks_for_huge_pages_when_told_and_keeps_other_tunables(self):
        if not huge_pages_available():
            self.skipTest("no transparent huge pages or glibc < 2.35 here")
        server = self.start("glibc.malloc.arena_max=8", "--malloc_huge_pages=true")
        self.assertIn("malloc_huge_pages=on", self.startup_line(server))
        with open(f"/proc/{server.process.pid}/environ", "rb") as f:
            environ = f.read()
        # glibc parses the variable in place: its entries may be NUL-separated by then.
        self.assertIn(b"glibc.malloc.arena_max=8", environ)
        self.assertIn(b"glibc.malloc.hugetlb=1", environ)

    def test_the_server_leaves_malloc_alone_by_default(self):
        server = self.start(None)
        self.assertIn("malloc_huge_pages=off", self.startup_line(server))
        with open(f"/proc/{server.process.pid}/environ", "rb") as f:
            self.assertNotIn(b"glibc.malloc.hugetlb", f.read())

    def test_the_operators_setting_wins(self):
        server = self.start("glibc.malloc.hugetlb=0", "--malloc_huge_pages=true")
        self.assertIn("malloc_huge_pages=off", self.startup_line(server))

    def test_the_client_asks_for_huge_pages_too(self):
        if not huge_pages_available():
            self.skipTest("no transparent huge pages or glibc < 2.35 here")
        server = self.start(None)
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        # Calls of about a second each on the CPU backend: time to look at the client.
        client = subprocess.Popen(
            [
                CLIENT,
                f"--target={server.target}",
                "load",
                "--requests=2",
                "--concurrency=1",
                "--warmup=0",
                "--image_size=400x400",
                "--steps=dilate:ellipse:91x91",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            with open(f"/proc/{client.pid}/environ", "rb") as f:
                environ = f.read()
            deadline = time.monotonic() + 10
            while b"glibc.malloc.hugetlb=1" not in environ and time.monotonic() < deadline:
                time.sleep(0.01)
                with open(f"/proc/{client.pid}/environ", "rb") as f:
                    environ = f.read()
            self.assertIn(b"glibc.malloc.hugetlb=1", environ)
            _, err = client.communicate(timeout=120)
            self.assertEqual(client.returncode, 0, err)
        finally:
            client.kill()
            client.wait()


class CpuFallback(unittest.TestCase):
    def test_auto_without_a_gpu_warns_exports_the_backend_and_serves(self):
        server = ServerProcess(SERVER, "--backend=auto", "--cpu_threads_per_request=1")
        try:
            text = server.metrics()
            if 'cuimg_backend_info{backend="cuda"} 1' in text:
                self.skipTest("this machine has a GPU: --backend=auto chose CUDA")
            self.assertIsNone(re.search(r'(?m)^cuimg_\w+\{[^}]*backend="cuda"', text))
            self.assertIn('cuimg_backend_info{backend="cpu"} 1', text)
            self.assertRegex(server.log(), r"level=warning event=cpu_fallback ")
            # --worker_threads=0 (the default) gives the CPU backend 4 workers, not one a core.
            self.assertRegex(server.log(), r"event=startup .* workers=4 ")
            version = run(SERVER, "--version").stdout.split()[1]
            build_info = re.search(r"cuimg_build_info\{[^}]*\}", text).group(0)
            self.assertIn(f'version="{version}"', build_info)
            commit = re.search(r"commit: (\S+)", run(SERVER, "--version").stdout).group(1)
            self.assertIn(f'commit="{commit}"', build_info)
            with grpc.insecure_channel(server.target) as channel:
                health = health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service="cuimg.v1.Imaging"), timeout=10
                )
                self.assertEqual(health.status, health_pb2.HealthCheckResponse.SERVING)
                stub = imaging_service_pb2_grpc.ImagingStub(channel)
                reply = stub.Morphology(morph(32, 3), timeout=30)
                self.assertEqual(len(reply.result.image.data), 32 * 32)
            self.assertEqual(server.terminate(), 0, server.log())
        finally:
            server.kill()

    def test_require_gpu_refuses_the_cpu_backend(self):
        contradiction = run(SERVER, "--backend=cpu", "--require_gpu")
        self.assertEqual(contradiction.returncode, 2)
        self.assertIn("--require_gpu contradicts --backend=cpu", contradiction.stderr)
        try:
            out = subprocess.run(
                [
                    SERVER,
                    "--backend=auto",
                    "--require_gpu",
                    "--listen_address=127.0.0.1:0",
                    "--metrics_address=",
                ],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except subprocess.TimeoutExpired:
            self.skipTest("this machine has a GPU: the server started")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertRegex(
            out.stderr,
            r"level=error event=startup_failed " r"message=\"--require_gpu: no usable CUDA GPU",
        )


class TlsMistakes(unittest.TestCase):
    """The two TLS mistakes an operator makes first each get one line that names the fix."""

    @classmethod
    def setUpClass(cls):
        cls.tls = TlsMaterial(clients=("alice",))

    @classmethod
    def tearDownClass(cls):
        cls.tls.close()

    def test_a_key_that_is_not_the_certificates_is_one_clear_line(self):
        alice_key, _ = self.tls.client["alice"]
        run_ = run(
            SERVER,
            "--backend=cpu",
            "--listen_address=127.0.0.1:0",
            "--metrics_address=",
            f"--tls_cert_file={self.tls.server_cert}",
            f"--tls_key_file={alice_key}",
        )
        self.assertEqual(run_.returncode, 1, run_.stderr)
        lines = run_.stderr.splitlines()
        self.assertEqual(len(lines), 1, run_.stderr)
        self.assertIn("event=startup_failed", lines[0])
        self.assertIn(
            "tls_key_file: the private key does not belong to the first certificate "
            "of tls_cert_file",
            lines[0],
        )

    def test_a_plaintext_client_at_a_tls_port_is_told_why(self):
        server = ServerProcess(SERVER, "--backend=cpu", *self.tls.server_flags())
        try:
            run_ = run(CLIENT, f"--target={server.target}", "--timeout=5", "health")
            self.assertEqual(run_.returncode, 1, run_.stderr)
            self.assertIn("error: UNAVAILABLE", run_.stderr)
            self.assertIn("do both sides agree on TLS?", run_.stderr)
            secure = run(
                CLIENT,
                f"--target={server.target}",
                "--timeout=5",
                f"--tls_ca_file={self.tls.ca_cert}",
                "health",
            )
            self.assertEqual(secure.returncode, 0, secure.stderr)
        finally:
            self.assertEqual(server.terminate(), 0, server.log())


if __name__ == "__main__":
    unittest.main(verbosity=2)
