"""TLS, mutual TLS and bearer tokens on the real cuimg-server binary, from Python grpcio and the
cuimg CLI: plaintext and unverified clients are refused, identities (client certificate or token)
namespace resident objects (another identity's handle is NOT_FOUND), missing or unknown tokens are
UNAUTHENTICATED and tokens without the right are PERMISSION_DENIED, health and reflection are open
or protected by flag, the plaintext health port serves only health, and tokens never reach the
log. Certificates are made at test time with openssl (tls_material.py). Needs CUIMG_SERVER,
CUIMG_CLIENT and the generated stubs on PYTHONPATH."""
import json
import os
import subprocess
import tempfile
import unittest

import grpc
import numpy as np

from cuimg.v1 import imaging_service_pb2_grpc, morphology_pb2, resident_pb2, types_pb2
from grpc_protocols import health_pb2, health_pb2_grpc, reflection_pb2, reflection_pb2_grpc
from server_process import ServerProcess
from tls_material import TlsMaterial

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
ALICE_TOKEN = "alice-token-0123456789abcdef"
BATCH_TOKEN = "batch-token-0123456789abcdef"
CAROL_TOKEN = "carol-token-0123456789abcdef"


def image_request(keep=False, handle=None):
    image = np.arange(64, dtype=np.uint8).reshape(8, 8)
    source = (
        types_pb2.ImageSource(handle=handle)
        if handle
        else types_pb2.ImageSource(
            image=types_pb2.Image(
                pixel_type=types_pb2.PIXEL_TYPE_U8, width=8, height=8, data=image.tobytes()
            )
        )
    )
    return morphology_pb2.MorphologyRequest(
        input=source,
        output=types_pb2.OutputOptions(keep_resident=keep),
        steps=[
            morphology_pb2.MorphologyStep(
                op=morphology_pb2.MORPHOLOGY_OP_DILATE,
                element=morphology_pb2.StructuringElement(
                    shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=3, height=3
                ),
            )
        ],
    )


def bearer(token):
    return [("authorization", f"Bearer {token}")]


def code_of(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details()


def upload_image(stub, metadata=None):
    data = np.zeros((4, 4), np.uint8).tobytes()
    first = resident_pb2.UploadRequest(
        image=types_pb2.Image(pixel_type=types_pb2.PIXEL_TYPE_U8, width=4, height=4, data=data)
    )
    return stub.Upload(iter([first]), metadata=metadata, timeout=10).object.handle


class Material:
    tls = None

    @classmethod
    def get(cls):
        if cls.tls is None:
            cls.tls = TlsMaterial(clients=("alice", "bob"))
            cls.other = TlsMaterial(clients=("mallory",), ca_name="other-ca")
        return cls


class MutualTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        m = Material.get()
        cls.m = m.tls
        cls.other = m.other
        cls.server = ServerProcess(
            SERVER,
            "--backend=cpu",
            "--health_listen_address=127.0.0.1:0",
            *cls.m.server_flags(mtls=True),
        )

    @classmethod
    def tearDownClass(cls):
        assert cls.server.terminate() == 0, cls.server.log()

    def stub(self, creds):
        channel = grpc.secure_channel(self.server.target, creds)
        self.addCleanup(channel.close)
        return imaging_service_pb2_grpc.ImagingStub(channel), channel

    def test_plaintext_and_certless_and_foreign_ca_clients_are_refused(self):
        plain = grpc.insecure_channel(self.server.target)
        self.addCleanup(plain.close)
        code, _ = code_of(
            imaging_service_pb2_grpc.ImagingStub(plain).Morphology, image_request(), timeout=5
        )
        self.assertEqual(code, grpc.StatusCode.UNAVAILABLE)
        for creds in (
            self.m.channel_credentials(None),  # no client certificate
            self.other.channel_credentials("mallory"),
        ):  # wrong CA both ways
            stub, _ = self.stub(creds)
            code, _ = code_of(stub.Morphology, image_request(), timeout=5)
            self.assertEqual(code, grpc.StatusCode.UNAVAILABLE)
        # A client certificate from another CA, trusting the right server CA.
        key, cert = (self.other.read(p) for p in self.other.client["mallory"])
        stub, _ = self.stub(grpc.ssl_channel_credentials(self.m.read(self.m.ca_cert), key, cert))
        code, _ = code_of(stub.Morphology, image_request(), timeout=5)
        self.assertEqual(code, grpc.StatusCode.UNAVAILABLE)

    def test_certificate_identities_namespace_resident_objects(self):
        alice, _ = self.stub(self.m.channel_credentials("alice"))
        bob, _ = self.stub(self.m.channel_credentials("bob"))
        reply = alice.Morphology(image_request(keep=True), timeout=10)
        handle = reply.result.handle
        self.assertTrue(handle)
        self.assertEqual(
            alice.Morphology(image_request(handle=handle), timeout=10).result.image.width, 8
        )
        for call, request in (
            (bob.Morphology, image_request(handle=handle)),
            (bob.Release, resident_pb2.ReleaseRequest(handle=handle)),
        ):
            code, details = code_of(call, request, timeout=5)
            self.assertEqual(code, grpc.StatusCode.NOT_FOUND)
            self.assertIn("handle", details)
        code, _ = code_of(
            lambda: list(bob.Download(resident_pb2.DownloadRequest(handle=handle), timeout=5))
        )
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND)
        self.assertEqual(
            len(bob.ListResident(resident_pb2.ListResidentRequest(), timeout=5).objects), 0
        )
        listed = alice.ListResident(resident_pb2.ListResidentRequest(), timeout=5).objects
        self.assertIn(handle, [o.handle for o in listed])
        alice.Release(resident_pb2.ReleaseRequest(handle=handle), timeout=5)

    def test_plaintext_health_port_serves_health_only(self):
        channel = grpc.insecure_channel(f"127.0.0.1:{self.server.health_port}")
        self.addCleanup(channel.close)
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="cuimg.v1.Imaging"), timeout=5
        )
        self.assertEqual(reply.status, health_pb2.HealthCheckResponse.SERVING)
        code, _ = code_of(
            imaging_service_pb2_grpc.ImagingStub(channel).Morphology, image_request(), timeout=5
        )
        self.assertEqual(code, grpc.StatusCode.UNIMPLEMENTED)

    def test_cli_speaks_mutual_tls(self):
        alice_key, alice_cert = self.m.client["alice"]
        base = [
            CLIENT,
            f"--target={self.server.target}",
            f"--tls_ca_file={self.m.ca_cert}",
            f"--tls_cert_file={alice_cert}",
            f"--tls_key_file={alice_key}",
            "--timeout=20",
        ]
        run = subprocess.run(base + ["health"], capture_output=True, text=True, timeout=60)
        self.assertEqual((run.returncode, run.stdout.strip()), (0, "SERVING"), run.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "load.json")
            run = subprocess.run(
                base
                + [
                    "load",
                    "--duration=1",
                    "--warmup=0",
                    "--concurrency=2",
                    "--image_size=32x32",
                    f"--json_out={out}",
                    "--progress=false",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            with open(out) as f:
                summary = json.load(f)
            self.assertEqual(summary["codes"], {"OK": summary["requests"]})
        # Without the client certificate the handshake fails.
        run = subprocess.run(
            base[:3] + ["--timeout=5", "--max_attempts=1", "health"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(run.returncode, 1)
        self.assertIn("UNAVAILABLE", run.stderr)


class BearerTokens(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.m = Material.get().tls
        cls.tokens = cls.m.write_tokens(
            [
                "# identity token rights",
                f"alice {ALICE_TOKEN} process,resident",
                f"batch {BATCH_TOKEN} process",
                f"carol {CAROL_TOKEN}",
            ]
        )
        cls.server = ServerProcess(SERVER, "--backend=cpu", *cls.m.server_flags(tokens=cls.tokens))
        cls.channel = grpc.secure_channel(cls.server.target, cls.m.channel_credentials(None))
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        assert cls.server.terminate() == 0, cls.server.log()
        log = cls.server.log()
        for token in (ALICE_TOKEN, BATCH_TOKEN, CAROL_TOKEN, "not-a-known-token-at-all"):
            assert token not in log, "a token reached the log"

    def test_missing_malformed_and_unknown_tokens_are_unauthenticated(self):
        for metadata in (
            None,
            [("authorization", "Basic " + ALICE_TOKEN)],
            bearer("not-a-known-token-at-all"),
            bearer(ALICE_TOKEN[:-1]),
        ):
            for call, request in (
                (self.stub.Morphology, image_request()),
                (self.stub.ListResident, resident_pb2.ListResidentRequest()),
            ):
                code, details = code_of(call, request, metadata=metadata, timeout=5)
                self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED, metadata)
                self.assertIn("authorization", details)
        code, _ = code_of(upload_image, self.stub, None)
        self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED)

    def test_a_token_without_the_resident_right_is_permission_denied(self):
        reply = self.stub.Morphology(image_request(), metadata=bearer(BATCH_TOKEN), timeout=10)
        self.assertEqual(reply.result.image.width, 8)
        for call, request in (
            (self.stub.Morphology, image_request(keep=True)),
            (self.stub.Morphology, image_request(handle="img-0")),
            (self.stub.ListResident, resident_pb2.ListResidentRequest()),
            (self.stub.Release, resident_pb2.ReleaseRequest(handle="img-0")),
        ):
            code, details = code_of(call, request, metadata=bearer(BATCH_TOKEN), timeout=5)
            self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED, request)
            self.assertIn("'batch' lacks the 'resident' right", details)
        code, _ = code_of(upload_image, self.stub, bearer(BATCH_TOKEN))
        self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED)

    def test_token_identities_namespace_objects_even_on_one_connection(self):
        # One channel (one connection) carries both identities' calls.
        handle = upload_image(self.stub, bearer(ALICE_TOKEN))
        code, details = code_of(
            self.stub.Morphology,
            image_request(handle=handle),
            metadata=bearer(CAROL_TOKEN),
            timeout=5,
        )
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("input.handle", details)
        carol = self.stub.ListResident(
            resident_pb2.ListResidentRequest(), metadata=bearer(CAROL_TOKEN), timeout=5
        )
        self.assertNotIn(handle, [o.handle for o in carol.objects])
        code, _ = code_of(
            self.stub.Release,
            resident_pb2.ReleaseRequest(handle=handle),
            metadata=bearer(CAROL_TOKEN),
            timeout=5,
        )
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND)
        reply = self.stub.Morphology(
            image_request(handle=handle), metadata=bearer(ALICE_TOKEN), timeout=5
        )
        self.assertEqual(reply.result.image.width, 4)
        self.stub.Release(
            resident_pb2.ReleaseRequest(handle=handle), metadata=bearer(ALICE_TOKEN), timeout=5
        )

    def test_health_and_reflection_are_open_by_default(self):
        reply = health_pb2_grpc.HealthStub(self.channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
        self.assertEqual(reply.status, health_pb2.HealthCheckResponse.SERVING)
        replies = reflection_pb2_grpc.ServerReflectionStub(self.channel).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
        )
        names = {s.name for r in replies for s in r.list_services_response.service}
        self.assertIn("cuimg.v1.Imaging", names)
        # An unknown token is refused even where none is needed.
        code, _ = code_of(
            health_pb2_grpc.HealthStub(self.channel).Check,
            health_pb2.HealthCheckRequest(),
            metadata=bearer("x" * 20),
            timeout=5,
        )
        self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED)

    def test_cli_sends_the_token_from_a_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            token_file = os.path.join(tmp, "token")
            with open(token_file, "w") as f:
                f.write(ALICE_TOKEN + "\n")
            base = [
                CLIENT,
                f"--target={self.server.target}",
                f"--tls_ca_file={self.m.ca_cert}",
                "--timeout=20",
            ]
            out = os.path.join(tmp, "load.json")
            run = subprocess.run(
                base
                + [
                    f"--token_file={token_file}",
                    "load",
                    "--duration=1",
                    "--warmup=0",
                    "--concurrency=2",
                    "--image_size=32x32",
                    f"--json_out={out}",
                    "--progress=false",
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            with open(out) as f:
                self.assertEqual(json.load(f)["codes"].keys(), {"OK"})
            run = subprocess.run(
                base
                + ["--max_attempts=1", "load", "--requests=1", "--warmup=0", "--progress=false"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(run.returncode, 1)
            self.assertIn("UNAUTHENTICATED", run.stdout + run.stderr)
            # Usage errors: a token without TLS, an unreadable token file.
            for args in (
                [f"--target={self.server.target}", f"--token_file={token_file}"],
                base[1:] + [f"--token_file={tmp}/missing"],
            ):
                run = subprocess.run(
                    [CLIENT, *args, "health"], capture_output=True, text=True, timeout=60
                )
                self.assertEqual(run.returncode, 2, run.stderr)
                self.assertIn("--token_file", run.stderr)


class ProtectedHealthAndReflection(unittest.TestCase):
    def test_flag_makes_health_and_reflection_need_a_token(self):
        m = Material.get().tls
        tokens = m.write_tokens([f"alice {ALICE_TOKEN}"], name="tokens_protected")
        server = ServerProcess(
            SERVER, "--backend=cpu", "--auth_health_and_reflection", *m.server_flags(tokens=tokens)
        )
        try:
            channel = grpc.secure_channel(server.target, m.channel_credentials(None))
            health = health_pb2_grpc.HealthStub(channel)
            code, details = code_of(health.Check, health_pb2.HealthCheckRequest(), timeout=5)
            self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED)
            self.assertIn("authorization", details)
            reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
            code, _ = code_of(
                lambda: list(
                    reflection.ServerReflectionInfo(
                        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
                    )
                )
            )
            self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED)
            reply = health.Check(
                health_pb2.HealthCheckRequest(), metadata=bearer(ALICE_TOKEN), timeout=5
            )
            self.assertEqual(reply.status, health_pb2.HealthCheckResponse.SERVING)
            channel.close()
        finally:
            self.assertEqual(server.terminate(), 0)


class DeployedFlags(unittest.TestCase):
    def test_the_configmap_flags_serve_mtls_tokens_and_plaintext_health(self):
        repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        # The prod overlay's pods read both files (test_deploy.py checks the rendered objects).
        flags = []
        for path in ("deploy/k8s/base/cuimg.flags", "deploy/k8s/overlays/prod/security.flags"):
            with open(os.path.join(repo, path)) as f:
                flags += f.read().split()
        m = Material.get().tls
        tokens = m.write_tokens([f"alice {ALICE_TOKEN}"], name="tokens_deployed")
        mounted = {
            "/etc/cuimg-tls/tls.crt": m.server_cert,
            "/etc/cuimg-tls/tls.key": m.server_key,
            "/etc/cuimg-tls/ca.crt": m.ca_cert,
            "/etc/cuimg-auth/tokens": tokens,
        }
        # Addresses and paths of the pod replaced by local ones (the models: the source tree's).
        local = {
            "--listen_address": None,
            "--metrics_address": None,
            "--backend": "cpu",
            "--health_listen_address": "127.0.0.1:0",
            "--models_dir": None,
        }
        args = []
        for flag in flags:
            name, _, value = flag.partition("=")
            if name in local:
                if local[name] is not None:
                    args.append(f"{name}={local[name]}")
            else:
                args.append(f"{name}={mounted.get(value, value)}" if value else name)
        server = ServerProcess(SERVER, *args)
        try:
            channel = grpc.secure_channel(server.target, m.channel_credentials("alice"))
            stub = imaging_service_pb2_grpc.ImagingStub(channel)
            self.assertEqual(
                stub.Morphology(
                    image_request(), metadata=bearer(ALICE_TOKEN), timeout=10
                ).result.image.width,
                8,
            )
            code, _ = code_of(stub.Morphology, image_request(), timeout=5)
            self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED)
            channel.close()
            health = grpc.insecure_channel(f"127.0.0.1:{server.health_port}")
            reply = health_pb2_grpc.HealthStub(health).Check(
                health_pb2.HealthCheckRequest(service="cuimg.v1.Imaging"), timeout=5
            )
            self.assertEqual(reply.status, health_pb2.HealthCheckResponse.SERVING)
            health.close()
        finally:
            self.assertEqual(server.terminate(), 0, server.log())


class InconsistentSettings(unittest.TestCase):
    def test_server_refuses_to_start_and_names_the_flag(self):
        m = Material.get().tls
        tokens = m.write_tokens([f"alice {ALICE_TOKEN}"], name="tokens_bad")
        cases = [
            ([f"--auth_tokens_file={tokens}"], "auth_tokens_file: bearer tokens need TLS"),
            ([f"--tls_cert_file={m.server_cert}"], "tls_cert_file, tls_key_file"),
            (
                [
                    f"--tls_cert_file={m.server_cert}",
                    f"--tls_key_file={m.server_key}",
                    "--require_client_cert",
                ],
                "require_client_cert: needs tls_client_ca_file",
            ),
            (
                [
                    f"--tls_cert_file={m.server_cert}",
                    f"--tls_key_file={m.server_key}",
                    f"--auth_tokens_file={m.dir}/missing",
                ],
                "auth_tokens_file:",
            ),
            (
                [f"--tls_cert_file={tokens}", f"--tls_key_file={m.server_key}"],
                "tls_cert_file: " + tokens + " holds no PEM block",
            ),
        ]
        for args, message in cases:
            run = subprocess.run(
                [
                    SERVER,
                    "--backend=cpu",
                    "--listen_address=127.0.0.1:0",
                    "--metrics_address=",
                    *args,
                ],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(run.returncode, 1, args)
            self.assertIn(message, run.stderr, args)


if __name__ == "__main__":
    unittest.main(verbosity=2)
