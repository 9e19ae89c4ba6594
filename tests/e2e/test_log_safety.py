"""Issue #38's log and integrity attacks on the real cuimg-server binary: a handle or model name
carrying a forged log line (newline, `level=error identity=admin code=OK`, quotes) stays inside
its own escaped value and every line is valid logfmt; a 1 MiB handle gets a short error the client
receives and a short log line; a flood of refused calls writes a bounded number of lines plus
counts of the rest while the metrics count every call; a truncated JPEG is refused naming the
field; PERMISSION_DENIED and UNAUTHENTICATED lines name who was refused; a second server on a
port in use exits 1 naming the address while the first keeps serving. Needs CUIMG_SERVER and the
generated stubs on PYTHONPATH."""
import os
import subprocess
import time
import unittest

import grpc

from cuimg.v1 import (
    detection_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    resident_pb2,
    types_pb2,
)
from grpc_protocols import health_pb2, health_pb2_grpc
from server_process import ServerProcess
from tls_material import TlsMaterial

SERVER = os.environ["CUIMG_SERVER"]
DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
FORGERY = 'x" \n ts=2026-01-01T00:00:00Z level=error identity=admin code=OK message="forged'
# The server's rate for refused requests' lines (call_scope.h): 10 at once, then 5 a second.
BURST, PER_SECOND = 10, 5


def parse_logfmt(line):
    """Strict logfmt: key=bare or key="escaped" separated by single spaces; None if malformed."""
    fields, i = [], 0
    while i < len(line):
        eq = line.find("=", i)
        key = line[i:eq]
        if eq <= i or not key.replace("_", "").isalnum():
            return None
        i, value = eq + 1, ""
        if line.startswith('"', i):
            i += 1
            while True:
                if i >= len(line) or not " " <= line[i] <= "~":
                    return None
                if line[i] == '"':
                    break
                if line[i] == "\\":
                    value += line[i]
                    i += 1
                    if i >= len(line):
                        return None
                value += line[i]
                i += 1
            i += 1
        else:
            while i < len(line) and line[i] != " ":
                if not "!" <= line[i] <= "~" or line[i] in '"=':
                    return None
                value += line[i]
                i += 1
        fields.append((key, value))
        if i < len(line):
            if line[i] != " ":
                return None
            i += 1
    return fields


def log_records(server):
    """Every line of the server's own log as a dict; fails on a line that is not logfmt (gRPC's
    own messages, which start with a severity letter and are not the server's, are skipped)."""
    records = []
    for line in server.log().splitlines():
        if not line.startswith("ts="):
            continue
        fields = parse_logfmt(line)
        assert fields is not None, f"not logfmt: {line[:300]!r}"
        keys = [k for k, _ in fields]
        assert len(keys) == len(set(keys)), f"repeated keys: {line[:300]!r}"
        records.append(dict(fields))
    return records


def code_of(fn, *args, **kwargs):
    try:
        result = fn(*args, **kwargs)
        if hasattr(result, "__next__"):
            list(result)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details()


def jpeg():
    with open(os.path.join(DATA, "HappyFish.jpg"), "rb") as f:
        return f.read()


def morph(source):
    return morphology_pb2.MorphologyRequest(
        input=source,
        steps=[
            morphology_pb2.MorphologyStep(
                op=morphology_pb2.MORPHOLOGY_OP_DILATE,
                element=morphology_pb2.StructuringElement(
                    shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=3, height=3
                ),
            )
        ],
    )


class ForgedValues(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, "--backend=cpu")
        cls.channel = grpc.insecure_channel(cls.server.target)
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        assert cls.server.terminate() == 0, cls.server.log()

    def test_a_forged_line_in_a_handle_or_model_name_stays_in_its_value(self):
        calls = [
            (self.stub.Release, resident_pb2.ReleaseRequest(handle=FORGERY)),
            (self.stub.Download, resident_pb2.DownloadRequest(handle=FORGERY)),
            (self.stub.Morphology, morph(types_pb2.ImageSource(handle=FORGERY))),
            (
                self.stub.DetectPedestrians,
                detection_pb2.DetectPedestriansRequest(
                    input=types_pb2.ImageSource(encoded=jpeg()), model=FORGERY
                ),
            ),
        ]
        for call, request in calls:
            code, details = code_of(call, request, timeout=30)
            self.assertEqual(code, grpc.StatusCode.NOT_FOUND, details)
            self.assertNotIn("\n", details)
            self.assertIn("ts=2026-01-01T00:00:00Z level=error identity=admin", details)
        records = log_records(self.server)
        self.assertFalse([r for r in records if r.get("identity") == "admin"], records)
        self.assertFalse([r for r in records if r.get("ts", "").startswith("2026-01-01")])
        refused = [r for r in records if r.get("event") == "request" and r["code"] == "NOT_FOUND"]
        self.assertEqual(
            {r["rpc"] for r in refused}, {"Release", "Download", "Morphology", "DetectPedestrians"}
        )
        for r in refused:
            self.assertEqual(r["identity"], "anonymous")
            self.assertIn("level=error identity=admin code=OK", r["message"])

    def test_a_megabyte_handle_gets_a_short_error_and_a_short_line(self):
        handle = "h" * (1 << 20)
        before = len(self.server.log())
        for call, request in (
            (self.stub.Release, resident_pb2.ReleaseRequest(handle=handle)),
            (self.stub.Download, resident_pb2.DownloadRequest(handle=handle)),
        ):
            code, details = code_of(call, request, timeout=30)
            # Before the fix the 1 MiB message overflowed the client's header limit: the client saw
            # RESOURCE_EXHAUSTED ("received initial metadata size exceeds limit"), not the answer.
            # Release and Download now check a handle's length first (ValidateHandle), so the
            # handle is not echoed at all.
            self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, details)
            self.assertIn("handle: must be 1 to 128 characters", details)
            self.assertLess(len(details), 512)
        # A handle of valid length that is unknown is echoed, quoted and cut.
        code, details = code_of(
            self.stub.Release, resident_pb2.ReleaseRequest(handle="h" * 128), timeout=30
        )
        self.assertEqual(code, grpc.StatusCode.NOT_FOUND, details)
        self.assertIn("handle: no resident object 'hhhh", details)
        self.assertLess(len(details), 512)
        self.assertLess(len(self.server.log()) - before, 4096)

    def test_a_truncated_jpeg_is_refused_naming_the_field(self):
        whole = jpeg()
        reply = self.stub.DetectPedestrians(
            detection_pb2.DetectPedestriansRequest(input=types_pb2.ImageSource(encoded=whole)),
            timeout=60,
        )
        self.assertGreater(reply.levels, 0)
        for keep in (len(whole) // 2, len(whole) - 2):
            cut = types_pb2.ImageSource(encoded=whole[:keep])
            for call, request in (
                (self.stub.DetectPedestrians, detection_pb2.DetectPedestriansRequest(input=cut)),
                (self.stub.Morphology, morph(cut)),
            ):
                code, details = code_of(call, request, timeout=60)
                self.assertEqual(code, grpc.StatusCode.INVALID_ARGUMENT, (keep, details))
                self.assertIn("input.encoded: corrupt JPEG: Premature end", details)


class RefusalFlood(unittest.TestCase):
    def test_a_flood_writes_bounded_lines_and_counts_the_rest(self):
        server = ServerProcess(SERVER, "--backend=cpu")
        calls = 1500
        try:
            with grpc.insecure_channel(server.target) as channel:
                stub = imaging_service_pb2_grpc.ImagingStub(channel)
                start = time.monotonic()
                futures = [
                    stub.Release.future(resident_pb2.ReleaseRequest(handle=f"img-{i}"), timeout=60)
                    for i in range(calls)
                ]
                for f in futures:
                    self.assertEqual(f.code(), grpc.StatusCode.NOT_FOUND)
                elapsed = time.monotonic() - start
                self.assertEqual(server.request_counts()[("Release", "NOT_FOUND")], calls)
        finally:
            self.assertEqual(server.terminate(), 0)
        records = log_records(server)
        written = [r for r in records if r.get("event") == "request" and r["rpc"] == "Release"]
        self.assertLessEqual(len(written), BURST + PER_SECOND * (elapsed + 1), elapsed)
        self.assertGreaterEqual(len(written), BURST)
        reports = [r for r in records if r.get("event") == "request_lines_suppressed"]
        self.assertTrue(reports)
        for r in reports:
            self.assertEqual((r["rpc"], r["code"], r["level"]), ("Release", "NOT_FOUND", "warning"))
        # Reported once a second at most, and the last count when the server stops: nothing lost.
        self.assertLessEqual(len(reports), elapsed + 2)
        self.assertEqual(len(written) + sum(int(r["lines"]) for r in reports), calls)


class Identities(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tls = TlsMaterial(clients=())
        tokens = cls.tls.write_tokens(["batch batch-token-0123456789abcdef process"])
        cls.server = ServerProcess(SERVER, "--backend=cpu", *cls.tls.server_flags(tokens=tokens))
        cls.channel = grpc.secure_channel(cls.server.target, cls.tls.channel_credentials(None))
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        assert cls.server.terminate() == 0, cls.server.log()
        cls.tls.close()

    def test_refused_lines_name_who_was_refused(self):
        batch = [("authorization", "Bearer batch-token-0123456789abcdef")]
        for rpc, call, request in (
            ("Release", self.stub.Release, resident_pb2.ReleaseRequest(handle="img-1")),
            ("ListResident", self.stub.ListResident, resident_pb2.ListResidentRequest()),
        ):
            code, _ = code_of(call, request, metadata=batch, timeout=10)
            self.assertEqual(code, grpc.StatusCode.PERMISSION_DENIED)
            code, _ = code_of(call, request, timeout=10)
            self.assertEqual(code, grpc.StatusCode.UNAUTHENTICATED)
        lines = {
            (r["rpc"], r["code"]): r["identity"]
            for r in log_records(self.server)
            if r.get("event") == "request"
        }
        self.assertEqual(
            lines,
            {
                ("Release", "PERMISSION_DENIED"): "batch",
                ("Release", "UNAUTHENTICATED"): "unauthenticated",
                ("ListResident", "PERMISSION_DENIED"): "batch",
                ("ListResident", "UNAUTHENTICATED"): "unauthenticated",
            },
        )


class PortsInUse(unittest.TestCase):
    def test_a_second_server_on_a_port_in_use_exits_naming_the_address(self):
        first = ServerProcess(SERVER, "--backend=cpu", "--health_listen_address=127.0.0.1:0")
        try:
            taken = {
                "listen_address": f"127.0.0.1:{first.grpc_port}",
                "health_listen_address": f"127.0.0.1:{first.health_port}",
                "metrics_address": f"127.0.0.1:{first.metrics_port}",
            }
            for flag, address in taken.items():
                args = {
                    "listen_address": "127.0.0.1:0",
                    "metrics_address": "",
                    "health_listen_address": "",
                }
                args[flag] = address
                run = subprocess.run(
                    [SERVER, "--backend=cpu", *(f"--{k}={v}" for k, v in args.items())],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                self.assertEqual(run.returncode, 1, run.stderr)
                # Every line is logfmt, gRPC's own included (grpc_log_sink.h).
                lines = run.stderr.splitlines()
                self.assertTrue(all(line.startswith("ts=") for line in lines), run.stderr)
                ours = [
                    r
                    for r in (dict(parse_logfmt(line) or []) for line in lines)
                    if r and r["event"] != "grpc"
                ]
                self.assertEqual([r["event"] for r in ours], ["startup_failed"], run.stderr)
                self.assertIn(f"{flag} {address}: could not bind", ours[0]["message"])
            # The first server kept its ports and every connection.
            with grpc.insecure_channel(first.target) as channel:
                for _ in range(8):
                    with grpc.insecure_channel(first.target) as fresh:
                        health = health_pb2_grpc.HealthStub(fresh).Check(
                            health_pb2.HealthCheckRequest(service="cuimg.v1.Imaging"), timeout=10
                        )
                        self.assertEqual(health.status, health_pb2.HealthCheckResponse.SERVING)
                stub = imaging_service_pb2_grpc.ImagingStub(channel)
                self.assertEqual(
                    code_of(stub.ListResident, resident_pb2.ListResidentRequest(), timeout=10)[0],
                    grpc.StatusCode.OK,
                )
        finally:
            self.assertEqual(first.terminate(), 0, first.log())


if __name__ == "__main__":
    unittest.main()
