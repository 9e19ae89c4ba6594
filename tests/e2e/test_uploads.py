"""Uploads and resident objects under attack, over the wire on the CPU backend (issue #38: items 3
and 6). A stalled Upload must hold only the bytes it sent, end after --upload_idle_timeout_ms,
and never lock other clients out; evictions are signalled to the owner; resident objects obey a
server-wide cap; Deform keeps no non-finite mesh; Release and Download check handles like every
other RPC. Needs CUIMG_SERVER and the generated stubs on PYTHONPATH."""
import os
import re
import threading
import time
import unittest

import grpc
import numpy as np

from cuimg.v1 import deform_pb2, imaging_service_pb2_grpc, morphology_pb2, resident_pb2, types_pb2
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
MiB = 1 << 20


def image(width, height, pixel_type=types_pb2.PIXEL_TYPE_U8, data=None):
    size = 4 if pixel_type == types_pb2.PIXEL_TYPE_F32 else 1
    return types_pb2.Image(
        pixel_type=pixel_type,
        width=width,
        height=height,
        data=bytes(width * height * size) if data is None else data,
    )


def dilate(width=64, height=64):
    return morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(image=image(width, height)),
        steps=[
            morphology_pb2.MorphologyStep(
                op=morphology_pb2.MORPHOLOGY_OP_DILATE,
                element=morphology_pb2.StructuringElement(
                    shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=3, height=3
                ),
            )
        ],
    )


def upload(stub, width, height, ttl=0):
    first = resident_pb2.UploadRequest(image=image(width, height), ttl_seconds=ttl)
    return stub.Upload(iter([first]), timeout=30).object.handle


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class StalledUpload:
    """An Upload that sends `messages`, then nothing until released (or the server ends it).
    `sent` is set once the messages are sent (never for a call refused before reading)."""

    def __init__(self, stub, messages):
        self._release = threading.Event()
        self.sent = threading.Event()

        def requests():
            yield from messages
            self.sent.set()
            self._release.wait()

        self.future = stub.Upload.future(requests(), timeout=120)

    def outcome(self, timeout):
        """(code, details, seconds waited) once the call ends."""
        start = time.monotonic()
        try:
            self.future.result(timeout=timeout)
            return grpc.StatusCode.OK, "", time.monotonic() - start
        except grpc.RpcError as e:
            return e.code(), e.details(), time.monotonic() - start

    def release(self):
        self._release.set()


class Uploads(unittest.TestCase):
    def start(self, *flags):
        server = ServerProcess(SERVER, "--backend=cpu", *flags)
        channel = server.channel()
        stalled = []

        def stop():
            for s in stalled:
                s.release()
            channel.close()
            self.assertEqual(server.terminate(), 0, server.log())

        self.addCleanup(stop)
        self.server = server
        self.stalled = stalled
        return imaging_service_pb2_grpc.ImagingStub(channel)

    def stall(self, stub, messages):
        s = StalledUpload(stub, messages)
        self.stalled.append(s)
        return s

    def metrics(self):
        return self.server.metrics()

    def wait_open_uploads(self, n):
        """Until the server has `n` Upload calls open: a client yields its messages before the
        server has seen the call, so `sent` alone does not order two uploads."""
        pattern = re.compile(r'^cuimg_inflight_requests\{rpc="Upload"\} (\S+)$', re.M)
        deadline = time.monotonic() + 30
        while True:
            match = pattern.search(self.metrics())
            if match and float(match.group(1)) >= n:
                return
            self.assertLess(time.monotonic(), deadline, f"{n} uploads never open")
            time.sleep(0.02)

    def refused(self, call, code, *fragments):
        with self.assertRaises(grpc.RpcError) as caught:
            call()
        self.assertEqual(caught.exception.code(), code, caught.exception.details())
        for fragment in fragments:
            self.assertIn(fragment, caught.exception.details())
        return caught.exception

    def test_a_huge_declared_upload_that_stalls_holds_only_what_it_sent(self):
        # Default budgets (4 GiB in flight, one device); an upload may declare half of it.
        stub = self.start("--upload_idle_timeout_ms=3000")
        stub.Morphology(dilate(), timeout=30)
        before = rss_bytes(self.server.process.pid)
        # 32768^2 F32 is the whole 4 GiB budget: refused at once, nothing allocated.
        whole = self.stall(
            stub,
            [
                resident_pb2.UploadRequest(
                    image=image(32768, 32768, types_pb2.PIXEL_TYPE_F32, data=bytes(1024))
                )
            ],
        )
        code, details, _ = whole.outcome(timeout=30)
        self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED, details)
        self.assertIn("exceeds the largest upload", details)
        self.assertEqual(dict(whole.future.trailing_metadata())["grpc-retry-pushback-ms"], "-1")
        # 16384^2 F32 (1 GiB) is allowed, and stalls after 1 KiB: it used to reserve and zero-fill
        # the whole GiB on a gRPC thread.
        huge = self.stall(
            stub,
            [
                resident_pb2.UploadRequest(
                    image=image(16384, 16384, types_pb2.PIXEL_TYPE_F32, data=bytes(1024))
                )
            ],
        )
        self.wait_open_uploads(1)
        time.sleep(0.5)
        grown = rss_bytes(self.server.process.pid) - before
        self.assertLess(grown, 64 * MiB, f"RSS grew {grown} bytes for a 1 KiB upload")
        # Another client's calls keep succeeding meanwhile, large ones too.
        for _ in range(3):
            self.assertEqual(
                stub.Morphology(dilate(2048, 2048), timeout=30).result.image.width, 2048
            )
        self.assertFalse(huge.future.done())
        # The idle timeout ends it, naming the flag (that it frees what it held: the slot test).
        code, details, waited = huge.outcome(timeout=30)
        self.assertEqual(code, grpc.StatusCode.DEADLINE_EXCEEDED, details)
        self.assertIn("upload_idle_timeout_ms", details)
        self.assertLess(waited, 10)

    def test_a_stalled_upload_never_locks_others_out_of_the_in_flight_budget(self):
        # 64 MiB in flight: a 32 MiB upload declared (the per-identity share) used to reserve it
        # all at once, leaving too little for a 3072^2 Morphology (about 36 MiB).
        stub = self.start(
            "--max_inflight_bytes_per_device=67108864", "--upload_idle_timeout_ms=5000"
        )
        stalled = self.stall(
            stub,
            [
                resident_pb2.UploadRequest(
                    image=image(4096, 2048, types_pb2.PIXEL_TYPE_F32, data=bytes(1024))
                )
            ],
        )
        self.wait_open_uploads(1)
        time.sleep(0.3)
        reply = stub.Morphology(dilate(3072, 3072), timeout=60)
        self.assertEqual(reply.result.image.width, 3072)
        self.assertFalse(stalled.future.done())

    def test_many_stalled_medium_uploads(self):
        stub = self.start("--upload_idle_timeout_ms=4000", "--max_uploads_per_identity=8")
        before = rss_bytes(self.server.process.pid)
        # 80 uploads declaring 64 MiB each (5 GiB: more than the whole budget), each 1 MiB sent.
        uploads = [
            self.stall(
                stub,
                [
                    resident_pb2.UploadRequest(
                        image=image(4096, 4096, types_pb2.PIXEL_TYPE_F32, data=bytes(MiB))
                    )
                ],
            )
            for _ in range(80)
        ]
        deadline = time.monotonic() + 30
        while not all(u.sent.is_set() or u.future.done() for u in uploads):
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        time.sleep(1)
        refused = [u for u in uploads if u.future.done()]
        self.assertEqual(len(refused), 72)
        for u in refused:
            code, details, _ = u.outcome(timeout=1)
            self.assertEqual(code, grpc.StatusCode.RESOURCE_EXHAUSTED, details)
            self.assertIn("max_uploads_per_identity", details)
            self.assertEqual(dict(u.future.trailing_metadata())["cuimg-retry-after-ms"], "100")
        self.assertLess(rss_bytes(self.server.process.pid) - before, 128 * MiB)
        self.assertEqual(stub.Morphology(dilate(2048, 2048), timeout=30).result.image.width, 2048)
        # The open ones end after the idle timeout, and their slots are free again.
        for u in uploads:
            if u not in refused:
                code, details, _ = u.outcome(timeout=30)
                self.assertEqual(code, grpc.StatusCode.DEADLINE_EXCEEDED, details)
        upload(stub, 64, 64)

    def test_idle_timeout_frees_the_slot_and_spares_slow_but_steady_uploads(self):
        stub = self.start("--upload_idle_timeout_ms=1000", "--max_uploads_per_identity=1")
        stalled = self.stall(
            stub, [resident_pb2.UploadRequest(image=image(256, 256, data=bytes(1000)))]
        )
        self.wait_open_uploads(1)
        # The one slot is taken while it stalls.
        self.refused(
            lambda: upload(stub, 8, 8),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "max_uploads_per_identity",
        )
        code, details, waited = stalled.outcome(timeout=30)
        self.assertEqual(code, grpc.StatusCode.DEADLINE_EXCEEDED, details)
        self.assertIn("upload_idle_timeout_ms", details)
        self.assertLess(waited, 5)

        # A chunk every 0.4 s for 2.4 s: never idle for 1 s, so it completes.
        def steady():
            yield resident_pb2.UploadRequest(image=image(64, 96, data=b""))
            for _ in range(6):
                time.sleep(0.4)
                yield resident_pb2.UploadRequest(chunk=bytes(1024))

        reply = stub.Upload(steady(), timeout=30)
        self.assertEqual(reply.object.height, 96)
        counts = self.server.request_counts()
        self.assertEqual(counts[("Upload", "DEADLINE_EXCEEDED")], 1)

    def test_chunked_upload_round_trips(self):
        stub = self.start()
        pixels = np.random.default_rng(3).integers(0, 256, 3000 * 1000, np.uint8).tobytes()
        first = resident_pb2.UploadRequest(image=image(3000, 1000, data=pixels[:100]))
        chunks = [
            resident_pb2.UploadRequest(chunk=pixels[i : i + 700001])
            for i in range(100, len(pixels), 700001)
        ]
        handle = stub.Upload(iter([first] + chunks), timeout=30).object.handle
        got = b"".join(
            m.image.data if m.HasField("image") else m.chunk
            for m in stub.Download(resident_pb2.DownloadRequest(handle=handle), timeout=30)
        )
        self.assertEqual(got, pixels)

    def test_evictions_are_logged_counted_and_told_to_the_owner(self):
        stub = self.start("--resident_budget_bytes=4096")
        first = upload(stub, 50, 50)
        second = upload(stub, 50, 50)
        request = morphology_pb2.MorphologyRequest(
            input=types_pb2.ImageSource(handle=first), steps=dilate().steps
        )
        error = self.refused(
            lambda: stub.Morphology(request, timeout=30),
            grpc.StatusCode.NOT_FOUND,
            first,
            "was evicted",
            "resident_budget_bytes",
        )
        self.assertIn("input.handle", error.details())
        self.refused(
            lambda: stub.Release(resident_pb2.ReleaseRequest(handle=first), timeout=30),
            grpc.StatusCode.NOT_FOUND,
            "handle",
            "was evicted",
        )
        self.refused(
            lambda: stub.Release(resident_pb2.ReleaseRequest(handle="img-nope"), timeout=30),
            grpc.StatusCode.NOT_FOUND,
            "no resident object",
        )
        stub.Release(resident_pb2.ReleaseRequest(handle=second), timeout=30)
        self.assertRegex(
            self.server.log(),
            rf"event=resident_evicted identity=anonymous handle={first} "
            r"kind=image bytes=2500 reason=budget",
        )
        self.assertIn('cuimg_resident_evictions_total{reason="budget"} 1', self.metrics())

    def test_server_wide_resident_cap(self):
        stub = self.start("--resident_max_total_bytes=4096", "--resident_budget_bytes=1048576")
        self.refused(
            lambda: upload(stub, 65, 64),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "image",
            "resident_max_total_bytes",
        )
        first = upload(stub, 50, 50)
        upload(stub, 50, 50)
        self.refused(
            lambda: stub.Release(resident_pb2.ReleaseRequest(handle=first), timeout=30),
            grpc.StatusCode.NOT_FOUND,
            "was evicted",
            "resident_max_total_bytes",
        )
        # keep_resident outputs obey it too.
        request = dilate(65, 64)
        request.output.keep_resident = True
        self.refused(
            lambda: stub.Morphology(request, timeout=30),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "output.keep_resident",
            "resident_max_total_bytes",
        )
        self.assertIn('cuimg_resident_evictions_total{reason="server_cap"} 1', self.metrics())

    def test_deform_keeps_no_mesh_that_upload_would_refuse(self):
        stub = self.start()
        pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
        tris = np.array([[0, 1, 2], [0, 1, 3]], np.uint32)
        mesh = deform_pb2.Mesh(
            vertex_count=4, triangle_count=2, positions=pos.tobytes(), triangles=tris.tobytes()
        )
        lattice = deform_pb2.Lattice(
            origin=types_pb2.Vec3(x=-0.5, y=-0.5, z=-0.5),
            s=types_pb2.Vec3(x=2),
            t=types_pb2.Vec3(y=2),
            u=types_pb2.Vec3(z=2),
            count_s=2,
            count_t=2,
            count_u=2,
            displacements=[1e300] * 24,
        )
        for omit in (False, True):
            request = deform_pb2.DeformRequest(
                mesh=deform_pb2.MeshSource(mesh=mesh), lattice=lattice
            )
            request.output.keep_resident = True
            request.output.omit_data = omit
            self.refused(
                lambda: stub.Deform(request, timeout=30),
                grpc.StatusCode.INVALID_ARGUMENT,
                "output.keep_resident",
                "must be finite",
            )
        self.assertEqual(len(stub.ListResident(resident_pb2.ListResidentRequest()).objects), 0)
        # The same lattice without keeping: the positions are returned as computed.
        reply = stub.Deform(
            deform_pb2.DeformRequest(mesh=deform_pb2.MeshSource(mesh=mesh), lattice=lattice),
            timeout=30,
        )
        self.assertFalse(np.isfinite(np.frombuffer(reply.positions, np.float32)).all())

    def test_release_and_download_check_handles_like_every_rpc(self):
        stub = self.start()
        for handle in ("", "x" * 129):
            for call in (
                lambda: stub.Release(resident_pb2.ReleaseRequest(handle=handle), timeout=30),
                lambda: list(
                    stub.Download(resident_pb2.DownloadRequest(handle=handle), timeout=30)
                ),
            ):
                error = self.refused(
                    call, grpc.StatusCode.INVALID_ARGUMENT, "handle", "1 to 128 characters"
                )
                self.assertNotIn("x" * 129, error.details())


if __name__ == "__main__":
    unittest.main(verbosity=2)
