"""Every request limit of DESIGN.md §6 (and the ones hardening added) as a server flag, each hit
over the wire with a small value: the refusal has the right code, the ErrorInfo's reason and field
(LIMIT_EXCEEDED for a value over a limit, OVERLOADED for a capacity that is full for now), and a
message naming the limit; nothing is allocated for it, and a request just inside the limit
succeeds. Needs CUIMG_SERVER and the generated stubs on PYTHONPATH."""
import os
import threading
import time
import unittest

import grpc
import numpy as np

from bad_inputs import gray_png, torus
from cuimg import wire_contract
from cuimg.v1 import (
    deform_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    pyramid_pb2,
    resident_pb2,
    types_pb2,
)
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]


def image(width, height, depth=0, data=None):
    n = width * height * max(depth, 1)
    return types_pb2.Image(
        pixel_type=types_pb2.PIXEL_TYPE_U8,
        width=width,
        height=height,
        depth=depth,
        data=bytes(n) if data is None else data,
    )


def morph(img=None, encoded=None, steps=None, size=3, iterations=0):
    source = (
        types_pb2.ImageSource(encoded=encoded)
        if encoded is not None
        else types_pb2.ImageSource(image=img if img is not None else image(8, 8))
    )
    steps = steps or [
        morphology_pb2.MorphologyStep(
            op=morphology_pb2.MORPHOLOGY_OP_DILATE,
            iterations=iterations,
            element=morphology_pb2.StructuringElement(
                shape=morphology_pb2.ELEMENT_SHAPE_ELLIPSE, width=size, height=size
            ),
        )
    ]
    return morphology_pb2.MorphologyRequest(input=source, steps=steps)


def upload(stub, width, height, ttl=0):
    first = resident_pb2.UploadRequest(image=image(width, height), ttl_seconds=ttl)
    return stub.Upload(iter([first]), timeout=30).object.handle


class Limits(unittest.TestCase):
    def start(self, *flags):
        server = ServerProcess(SERVER, "--backend=cpu", *flags)
        channel = server.channel()

        def stop():
            channel.close()
            self.assertEqual(server.terminate(), 0, server.log())

        self.addCleanup(stop)
        return imaging_service_pb2_grpc.ImagingStub(channel)

    def refused(self, call, request, code, reason, field, *fragments):
        """The call fails with `code`, an ErrorInfo of `reason` and `field` (reason None: gRPC's
        own error, which carries none), and a message holding each fragment."""
        with self.assertRaises(grpc.RpcError) as caught:
            call(request, timeout=30)
        error = caught.exception
        self.assertEqual(error.code(), code, error.details())
        info = wire_contract.error_info(error.trailing_metadata())
        if reason is None:
            self.assertIsNone(info)
        else:
            self.assertEqual((info.reason, info.field), (reason, field), error.details())
        for fragment in fragments:
            self.assertIn(fragment, error.details())
        return error

    def test_max_receive_message_bytes(self):
        stub = self.start("--max_receive_message_bytes=1048576")
        self.refused(
            stub.Morphology,
            morph(image(1100, 1000)),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            None,
            None,
            "larger than max",
        )
        self.assertEqual(
            stub.Morphology(morph(image(1000, 1000)), timeout=30).result.image.width, 1000
        )

    def test_max_pixels_and_max_side(self):
        stub = self.start("--max_pixels=10000", "--max_side=200")
        self.refused(
            stub.Morphology,
            morph(image(101, 100)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "LIMIT_EXCEEDED",
            "input.image",
            "max_pixels=10000",
        )
        self.refused(
            stub.Morphology,
            morph(image(201, 1)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "LIMIT_EXCEEDED",
            "input.image.width",
            "200",
        )
        self.assertEqual(
            stub.Morphology(morph(image(100, 100)), timeout=30).result.image.height, 100
        )

    def test_max_element_extent_steps_and_iterations(self):
        stub = self.start("--max_element_extent=15", "--max_steps=2", "--max_iterations=3")
        self.refused(
            stub.Morphology,
            morph(size=17),
            grpc.StatusCode.INVALID_ARGUMENT,
            "ELEMENT_TOO_LARGE",
            "steps[0].element.width",
            "max_element_extent",
        )
        self.refused(
            stub.Morphology,
            morph(steps=list(morph().steps) * 3),
            grpc.StatusCode.INVALID_ARGUMENT,
            "LIMIT_EXCEEDED",
            "steps",
            "max_steps",
        )
        self.refused(
            stub.Morphology,
            morph(iterations=4),
            grpc.StatusCode.INVALID_ARGUMENT,
            "LIMIT_EXCEEDED",
            "steps[0].iterations",
            "max_iterations",
        )
        stub.Morphology(morph(size=15, iterations=3, steps=None), timeout=30)

    def test_max_pyramid_levels(self):
        stub = self.start("--max_pyramid_levels=4")
        request = pyramid_pb2.PyramidRequest(
            input=types_pb2.ImageSource(image=image(64, 64)), levels=5
        )
        self.refused(
            stub.Pyramid,
            request,
            grpc.StatusCode.INVALID_ARGUMENT,
            "LIMIT_EXCEEDED",
            "levels",
            "max_pyramid_levels",
        )
        request.levels = 4
        self.assertEqual(len(stub.Pyramid(request, timeout=30).levels), 4)

    def test_max_mesh_vertices(self):
        stub = self.start("--max_mesh_vertices=40")
        pos, tris = torus(8, 6)  # 48 vertices
        mesh = deform_pb2.Mesh(
            vertex_count=len(pos),
            triangle_count=len(tris),
            positions=pos.tobytes(),
            triangles=tris.tobytes(),
        )
        lo, size = pos.min(0) - 0.1, pos.max(0) - pos.min(0) + 0.2
        lattice = deform_pb2.Lattice(
            origin=types_pb2.Vec3(x=lo[0], y=lo[1], z=lo[2]),
            s=types_pb2.Vec3(x=size[0]),
            t=types_pb2.Vec3(y=size[1]),
            u=types_pb2.Vec3(z=size[2]),
            count_s=2,
            count_t=2,
            count_u=2,
            displacements=[0.0] * 24,
        )
        request = deform_pb2.DeformRequest(mesh=deform_pb2.MeshSource(mesh=mesh), lattice=lattice)
        self.refused(
            stub.Deform,
            request,
            grpc.StatusCode.INVALID_ARGUMENT,
            "LIMIT_EXCEEDED",
            "mesh.mesh.vertex_count",
            "max_mesh_vertices",
        )
        exception = self.refused(
            lambda r, timeout: stub.Upload(
                iter([resident_pb2.UploadRequest(mesh=mesh)]), timeout=timeout
            ),
            None,
            grpc.StatusCode.INVALID_ARGUMENT,
            "LIMIT_EXCEEDED",
            "mesh.vertex_count",
            "max_mesh_vertices",
        )
        self.assertIsNotNone(exception)

    def test_max_decoded_pixels(self):
        stub = self.start("--max_decoded_pixels=1000")
        self.refused(
            stub.Morphology,
            morph(encoded=gray_png(np.zeros((32, 32)))),
            grpc.StatusCode.INVALID_ARGUMENT,
            "LIMIT_EXCEEDED",
            "input.encoded",
            "max_decoded_pixels=1000",
        )
        reply = stub.Morphology(morph(encoded=gray_png(np.zeros((30, 30)))), timeout=30)
        self.assertEqual(reply.result.image.width, 30)

    def test_resident_budget_object_count_and_ttl(self):
        stub = self.start(
            "--resident_budget_bytes=4096",
            "--resident_max_objects=2",
            "--resident_max_ttl_seconds=60",
        )
        self.refused(
            lambda r, timeout: upload(stub, 65, 64),
            None,
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "LIMIT_EXCEEDED",
            "image",
            "budget",
        )
        # Over the byte budget, the least recently used object goes.
        first = upload(stub, 50, 50)
        second = upload(stub, 50, 50)
        handles = {o.handle for o in stub.ListResident(resident_pb2.ListResidentRequest()).objects}
        self.assertEqual(handles, {second})
        self.assertNotIn(first, handles)
        # Over the object count, too.
        small = [upload(stub, 4, 4) for _ in range(3)]
        handles = {o.handle for o in stub.ListResident(resident_pb2.ListResidentRequest()).objects}
        self.assertEqual(handles, set(small[1:]))
        self.refused(
            lambda r, timeout: upload(stub, 4, 4, ttl=61),
            None,
            grpc.StatusCode.INVALID_ARGUMENT,
            "LIMIT_EXCEEDED",
            "ttl_seconds",
            "60",
        )
        upload(stub, 4, 4, ttl=60)

    def test_max_inflight_bytes_per_device(self):
        # 1.18 MB each in flight (the 768x768 input and its result): two fit in 2.5 MiB, a third
        # waits for room; a 1500x1000 input (3 MB) never fits.
        stub = self.start(
            "--max_inflight_bytes_per_device=2621440",
            "--worker_threads=1",
            "--cpu_threads_per_request=1",
        )
        self.refused(
            stub.Morphology,
            morph(image(1500, 1000)),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "LIMIT_EXCEEDED",
            "",
            "request",
            "max_inflight_bytes_per_device=2621440",
        )
        slow = morph(
            image(
                768,
                768,
                data=np.random.default_rng(0).integers(0, 256, 768 * 768, np.uint8).tobytes(),
            ),
            size=61,
        )
        results = []

        def call():
            try:
                _, c = stub.Morphology.with_call(slow, timeout=120)
                results.append(("OK", None))
            except grpc.RpcError as e:
                results.append((e.code().name, e.trailing_metadata() or ()))

        threads = [threading.Thread(target=call) for _ in range(4)]
        for t in threads:
            t.start()
            time.sleep(0.05)
        for t in threads:
            t.join()
        codes = sorted(code for code, _ in results)
        self.assertEqual(codes, ["OK", "OK", "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"])
        for code, trailers in results:
            if code != "OK":
                self.assertEqual(dict(trailers).get("cuimg-retry-after-ms"), "100")
                self.assertEqual(wire_contract.error_info(trailers).reason, "OVERLOADED")
        stub.Morphology(slow, timeout=120)  # room again once they finished

    def test_max_inflight_requests(self):
        stub = self.start(
            "--max_inflight_requests=1", "--worker_threads=1", "--cpu_threads_per_request=1"
        )
        slow = morph(
            image(
                512,
                512,
                data=np.random.default_rng(1).integers(0, 256, 512 * 512, np.uint8).tobytes(),
            ),
            size=61,
        )
        future = stub.Morphology.future(slow, timeout=120)
        time.sleep(0.2)
        exception = self.refused(
            stub.Morphology,
            morph(),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "OVERLOADED",
            "",
            "max_inflight_requests",
        )
        self.assertEqual(dict(exception.trailing_metadata())["cuimg-retry-after-ms"], "100")
        self.assertEqual(future.result().result.image.width, 512)
        stub.Morphology(morph(), timeout=30)


if __name__ == "__main__":
    unittest.main(verbosity=2)
