"""Gradient, Pyramid and Deform over the wire (real cuimg-server, Python grpcio), checked against
independent NumPy float64 computations; resident meshes (chunked upload, deform by handle, keep
resident, download); field-named errors; and the cuimg CLI for these RPCs. Runs on the CPU backend
in CI and on the CUDA backend on the GPU machine (CUIMG_BACKEND)."""
import os
import subprocess
import tempfile
import unittest

import grpc
import numpy as np

from cuimg.v1 import (
    deform_pb2,
    gradient_pb2,
    imaging_service_pb2_grpc,
    pyramid_pb2,
    resident_pb2,
    types_pb2,
)
from server_process import ServerProcess

SERVER = os.environ["CUIMG_SERVER"]
CLIENT = os.environ["CUIMG_CLIENT"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
DTYPES = {
    types_pb2.PIXEL_TYPE_U8: np.uint8,
    types_pb2.PIXEL_TYPE_U16: np.uint16,
    types_pb2.PIXEL_TYPE_I16: np.int16,
    types_pb2.PIXEL_TYPE_F32: np.float32,
}


def to_proto(array, pixel_type):
    return types_pb2.Image(
        pixel_type=pixel_type,
        width=array.shape[-1],
        height=array.shape[-2],
        depth=array.shape[0] if array.ndim == 3 else 0,
        data=np.ascontiguousarray(array, dtype=DTYPES[pixel_type]).tobytes(),
    )


def from_proto(image):
    shape = (
        (image.depth, image.height, image.width) if image.depth > 1 else (image.height, image.width)
    )
    return np.frombuffer(image.data, dtype=DTYPES[image.pixel_type]).reshape(shape)


def correlate_reflect101(a, taps, axis):
    r = len(taps) // 2
    pad = [(0, 0)] * a.ndim
    pad[axis] = (r, r)
    p = np.pad(a, pad, mode="reflect")  # numpy "reflect" is OpenCV's BORDER_REFLECT_101
    out = np.zeros_like(a, dtype=np.float64)
    n = a.shape[axis]
    for j, t in enumerate(taps):
        out += t * np.take(p, range(j, j + n), axis=axis)
    return out


def resize_linear(src, dw, dh):
    """OpenCV INTER_LINEAR (half-pixel centres, clamped), in float64."""
    sh, sw = src.shape

    def taps(d, s, n):
        f = (np.arange(d) + 0.5) * (s / d) - 0.5
        i0 = np.floor(f).astype(np.int64)
        w = f - i0
        w[i0 < 0] = 0
        i0[i0 < 0] = 0
        w[i0 >= s - 1] = 0
        i0[i0 >= s - 1] = s - 1
        return i0, np.minimum(i0 + 1, s - 1), w

    x0, x1, wx = taps(dw, sw, dw)
    y0, y1, wy = taps(dh, sh, dh)
    s = src.astype(np.float64)
    top = s[y0][:, x0] * (1 - wx) + s[y0][:, x1] * wx
    bot = s[y1][:, x0] * (1 - wx) + s[y1][:, x1] * wx
    return top * (1 - wy)[:, None] + bot * wy[:, None]


def torus(n, m, R=1.0, r=0.35):
    u = 2 * np.pi * np.arange(n) / n
    v = 2 * np.pi * np.arange(m) / m
    uu, vv = np.meshgrid(u, v, indexing="ij")
    pos = (
        np.stack(
            [(R + r * np.cos(vv)) * np.cos(uu), (R + r * np.cos(vv)) * np.sin(uu), r * np.sin(vv)],
            axis=-1,
        )
        .reshape(-1, 3)
        .astype(np.float32)
    )
    tris = []
    for i in range(n):
        for j in range(m):
            a, b = i * m + j, ((i + 1) % n) * m + j
            c, d = ((i + 1) % n) * m + (j + 1) % m, i * m + (j + 1) % m
            tris += [(a, b, c), (a, c, d)]
    return pos, np.array(tris, dtype=np.uint32)


def area_normals(pos, tris):
    p = pos.astype(np.float64)
    face = np.cross(p[tris[:, 1]] - p[tris[:, 0]], p[tris[:, 2]] - p[tris[:, 0]])
    acc = np.zeros_like(p)
    for k in range(3):
        np.add.at(acc, tris[:, k], face)
    norm = np.linalg.norm(acc, axis=1, keepdims=True)
    return np.where(norm > 0, acc / np.where(norm > 0, norm, 1), 0)


def box_lattice(pos, counts=(3, 3, 3)):
    lo, hi = pos.min(0) - 0.05, pos.max(0) + 0.05
    size = hi - lo
    return deform_pb2.Lattice(
        origin=types_pb2.Vec3(x=lo[0], y=lo[1], z=lo[2]),
        s=types_pb2.Vec3(x=size[0]),
        t=types_pb2.Vec3(y=size[1]),
        u=types_pb2.Vec3(z=size[2]),
        count_s=counts[0],
        count_t=counts[1],
        count_u=counts[2],
        displacements=[0.0] * (3 * int(np.prod(counts))),
    )


class RpcsOverTheWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(SERVER, f"--backend={BACKEND}")
        cls.channel = cls.server.channel()
        cls.stub = imaging_service_pb2_grpc.ImagingStub(cls.channel)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        assert cls.server.terminate() == 0, cls.server.log()

    def test_gradient_matches_numpy_float64(self):
        rng = np.random.default_rng(1)
        for pixel_type, image in [
            (types_pb2.PIXEL_TYPE_U8, rng.integers(0, 256, (67, 93), np.uint8)),
            (types_pb2.PIXEL_TYPE_F32, rng.normal(size=(4, 31, 40)).astype(np.float32)),
        ]:
            reply = self.stub.Gradient(
                gradient_pb2.GradientRequest(
                    input=types_pb2.ImageSource(image=to_proto(image, pixel_type)), magnitude=True
                ),
                timeout=60,
            )
            s, d = np.array(reply.smoothing_taps, np.float64), np.array(
                reply.derivative_taps, np.float64
            )
            self.assertEqual(len(s), 7)
            a = image.astype(np.float64)
            gx = correlate_reflect101(correlate_reflect101(a, d, -1), s, -2)
            gy = correlate_reflect101(correlate_reflect101(a, s, -1), d, -2)
            for got, want in [(from_proto(reply.gx.image), gx), (from_proto(reply.gy.image), gy)]:
                self.assertLess(np.linalg.norm(got - want) / np.linalg.norm(want), 1e-5)
            np.testing.assert_allclose(
                from_proto(reply.magnitude.image), np.hypot(gx, gy), rtol=1e-4, atol=1e-3
            )

    def test_gradient_of_a_ramp_is_one(self):
        ramp = np.tile(np.arange(64, dtype=np.float32), (20, 1))
        reply = self.stub.Gradient(
            gradient_pb2.GradientRequest(
                input=types_pb2.ImageSource(image=to_proto(ramp, types_pb2.PIXEL_TYPE_F32))
            ),
            timeout=60,
        )
        np.testing.assert_allclose(from_proto(reply.gx.image)[:, 5:-5], 1.0, rtol=1e-5)
        np.testing.assert_allclose(from_proto(reply.gy.image), 0.0, atol=1e-5)

    def test_pyramid_levels_match_opencv_rule(self):
        rng = np.random.default_rng(2)
        image = rng.integers(0, 256, (120, 161), np.uint8)
        reply = self.stub.Pyramid(
            pyramid_pb2.PyramidRequest(
                input=types_pb2.ImageSource(image=to_proto(image, types_pb2.PIXEL_TYPE_U8)),
                levels=12,
            ),
            timeout=60,
        )
        self.assertEqual(len(reply.levels), 12)
        for level in reply.levels:
            scale = 1.05**level.index
            self.assertAlmostEqual(level.scale, scale, places=12)
            self.assertEqual(level.width, int(np.floor(161 / scale + 0.5)))
            self.assertEqual(level.height, int(np.floor(120 / scale + 0.5)))
            got = from_proto(level.result.image)
            self.assertEqual(got.shape, (level.height, level.width))
            want = resize_linear(image, level.width, level.height)
            self.assertLess(np.abs(got - want).max(), 1e-4 * 255)
        # The min-size stop and the input-type output.
        reply = self.stub.Pyramid(
            pyramid_pb2.PyramidRequest(
                input=types_pb2.ImageSource(image=to_proto(image, types_pb2.PIXEL_TYPE_U8)),
                levels=64,
                ratio=1.5,
                min_width=20,
                min_height=20,
                output_type=types_pb2.PIXEL_TYPE_U8,
            ),
            timeout=60,
        )
        self.assertTrue(all(level.width >= 20 and level.height >= 20 for level in reply.levels))
        self.assertEqual(reply.levels[0].result.image.pixel_type, types_pb2.PIXEL_TYPE_U8)

    def test_pyramid_levels_returned_and_kept_resident_are_the_same(self):
        # Returned levels leave the server by reference from one packed buffer; resident ones are
        # copied into the store and, unless omitted, into the reply. Both must be the same pixels.
        rng = np.random.default_rng(3)
        image = rng.integers(0, 65536, (97, 131), np.uint16)
        request = pyramid_pb2.PyramidRequest(
            input=types_pb2.ImageSource(image=to_proto(image, types_pb2.PIXEL_TYPE_U16)),
            levels=9,
            ratio=1.3,
            output_type=types_pb2.PIXEL_TYPE_U16,
        )
        returned = self.stub.Pyramid(request, timeout=60)
        request.output.keep_resident = True
        kept = self.stub.Pyramid(request, timeout=60)
        request.output.omit_data = True
        omitted = self.stub.Pyramid(request, timeout=60)
        self.assertEqual(len(returned.levels), 9)
        for a, b, c in zip(returned.levels, kept.levels, omitted.levels):
            self.assertEqual(
                (a.index, a.width, a.height, a.scale), (b.index, b.width, b.height, b.scale)
            )
            self.assertEqual(a.result.image.data, b.result.image.data)
            self.assertEqual(len(a.result.image.data), a.width * a.height * 2)
            self.assertEqual(a.result.handle, "")
            self.assertEqual(len(c.result.image.data), 0)
            want = resize_linear(image, a.width, a.height)
            self.assertLessEqual(
                np.abs(from_proto(a.result.image).astype(np.float64) - want).max(), 1
            )
            stream = self.stub.Download(
                resident_pb2.DownloadRequest(handle=c.result.handle, chunk_bytes=65536), timeout=60
            )
            blob = b"".join(m.image.data if m.HasField("image") else m.chunk for m in stream)
            self.assertEqual(blob, a.result.image.data)
            for h in (b.result.handle, c.result.handle):
                self.stub.Release(resident_pb2.ReleaseRequest(handle=h), timeout=10)

    def test_deform_identity_and_translation(self):
        pos, tris = torus(40, 30)
        mesh = deform_pb2.Mesh(
            vertex_count=len(pos),
            triangle_count=len(tris),
            positions=pos.tobytes(),
            triangles=tris.tobytes(),
        )
        lattice = box_lattice(pos)
        reply = self.stub.Deform(
            deform_pb2.DeformRequest(mesh=deform_pb2.MeshSource(mesh=mesh), lattice=lattice),
            timeout=60,
        )
        got_pos = np.frombuffer(reply.positions, np.float32).reshape(-1, 3)
        got_n = np.frombuffer(reply.normals, np.float32).reshape(-1, 3)
        np.testing.assert_allclose(got_pos, pos, atol=1e-6 * 3)
        cos = np.sum(got_n * area_normals(pos, tris), axis=1)
        self.assertGreater(cos.min(), np.cos(1e-3))
        # Moving every control point by d moves every (inside) vertex by d.
        lattice.displacements[:] = [0.25, -0.5, 0.125] * (len(lattice.displacements) // 3)
        reply = self.stub.Deform(
            deform_pb2.DeformRequest(
                mesh=deform_pb2.MeshSource(mesh=mesh),
                lattice=lattice,
                outputs=deform_pb2.DEFORM_OUTPUTS_POSITIONS,
            ),
            timeout=60,
        )
        moved = np.frombuffer(reply.positions, np.float32).reshape(-1, 3)
        np.testing.assert_allclose(
            moved - pos, np.tile([0.25, -0.5, 0.125], (len(pos), 1)), atol=1e-5
        )
        self.assertEqual(len(reply.normals), 0)

    def test_resident_mesh_upload_deform_keep_and_download(self):
        pos, tris = torus(60, 40)
        data = pos.tobytes() + tris.tobytes()
        chunks = [
            resident_pb2.UploadRequest(
                mesh=deform_pb2.Mesh(
                    vertex_count=len(pos), triangle_count=len(tris), positions=data[:5000]
                )
            )
        ]
        chunks += [
            resident_pb2.UploadRequest(chunk=data[i : i + 7000])
            for i in range(5000, len(data), 7000)
        ]
        uploaded = self.stub.Upload(iter(chunks), timeout=60).object
        self.assertEqual(uploaded.kind, resident_pb2.RESIDENT_KIND_MESH)
        self.assertEqual((uploaded.vertex_count, uploaded.triangle_count), (len(pos), len(tris)))
        lattice = box_lattice(pos)
        lattice.displacements[:] = [0.0, 0.0, 0.3] * (len(lattice.displacements) // 3)
        reply = self.stub.Deform(
            deform_pb2.DeformRequest(
                mesh=deform_pb2.MeshSource(handle=uploaded.handle),
                lattice=lattice,
                output=types_pb2.OutputOptions(keep_resident=True, omit_data=True),
            ),
            timeout=60,
        )
        self.assertEqual(len(reply.positions), 0)
        self.assertTrue(reply.handle.startswith("mesh-"))
        stream = self.stub.Download(
            resident_pb2.DownloadRequest(handle=reply.handle, chunk_bytes=65536), timeout=60
        )
        first, rest = None, b""
        for message in stream:
            if message.HasField("mesh"):
                first = message.mesh
            else:
                rest += message.chunk
        blob = first.positions + first.triangles + rest
        self.assertEqual(len(blob), len(data))
        got_pos = np.frombuffer(blob[: len(pos) * 12], np.float32).reshape(-1, 3)
        np.testing.assert_allclose(got_pos - pos, np.tile([0, 0, 0.3], (len(pos), 1)), atol=1e-5)
        self.assertEqual(blob[len(pos) * 12 :], tris.tobytes())
        listed = {
            o.handle: o for o in self.stub.ListResident(resident_pb2.ListResidentRequest()).objects
        }
        self.assertIn(uploaded.handle, listed)
        self.assertIn(reply.handle, listed)
        for h in (uploaded.handle, reply.handle):
            self.stub.Release(resident_pb2.ReleaseRequest(handle=h), timeout=10)

    def test_bad_requests_name_the_field(self):
        image = types_pb2.ImageSource(
            image=to_proto(np.zeros((8, 8), np.uint8), types_pb2.PIXEL_TYPE_U8)
        )
        pos, tris = torus(6, 5)
        mesh = deform_pb2.Mesh(
            vertex_count=len(pos),
            triangle_count=len(tris),
            positions=pos.tobytes(),
            triangles=tris.tobytes(),
        )
        bad_tris = tris.copy()
        bad_tris[3, 1] = 999
        nan_pos = pos.copy()
        nan_pos[2, 0] = np.nan
        cases = [
            (
                self.stub.Gradient,
                gradient_pb2.GradientRequest(input=image, kernel_length=4),
                "kernel_length",
            ),
            (self.stub.Gradient, gradient_pb2.GradientRequest(input=image, sigma=-1), "sigma"),
            (self.stub.Gradient, gradient_pb2.GradientRequest(), "input"),
            (self.stub.Pyramid, pyramid_pb2.PyramidRequest(input=image, ratio=0.5), "ratio"),
            (self.stub.Pyramid, pyramid_pb2.PyramidRequest(input=image, levels=65), "levels"),
            (self.stub.Pyramid, pyramid_pb2.PyramidRequest(input=image, mode=9), "mode"),
            (
                self.stub.Pyramid,
                pyramid_pb2.PyramidRequest(input=image, output_type=types_pb2.PIXEL_TYPE_I16),
                "output_type",
            ),
            (
                self.stub.Deform,
                deform_pb2.DeformRequest(mesh=deform_pb2.MeshSource(mesh=mesh)),
                "lattice",
            ),
            (
                self.stub.Deform,
                deform_pb2.DeformRequest(
                    mesh=deform_pb2.MeshSource(
                        mesh=deform_pb2.Mesh(
                            vertex_count=len(pos),
                            triangle_count=len(tris),
                            positions=pos.tobytes(),
                            triangles=bad_tris.tobytes(),
                        )
                    ),
                    lattice=box_lattice(pos),
                ),
                "mesh.mesh.triangles",
            ),
            (
                self.stub.Deform,
                deform_pb2.DeformRequest(
                    mesh=deform_pb2.MeshSource(
                        mesh=deform_pb2.Mesh(
                            vertex_count=len(pos),
                            triangle_count=len(tris),
                            positions=nan_pos.tobytes(),
                            triangles=tris.tobytes(),
                        )
                    ),
                    lattice=box_lattice(pos),
                ),
                "mesh.mesh.positions",
            ),
            (
                self.stub.Deform,
                deform_pb2.DeformRequest(
                    mesh=deform_pb2.MeshSource(mesh=mesh), lattice=box_lattice(pos, (2, 10, 2))
                ),
                "lattice.count_t",
            ),
            (
                self.stub.Deform,
                deform_pb2.DeformRequest(
                    mesh=deform_pb2.MeshSource(handle="mesh-nope"), lattice=box_lattice(pos)
                ),
                "mesh.handle",
            ),
        ]
        flat = box_lattice(pos)
        flat.u.z = 0
        cases.append(
            (
                self.stub.Deform,
                deform_pb2.DeformRequest(mesh=deform_pb2.MeshSource(mesh=mesh), lattice=flat),
                "lattice",
            )
        )
        for method, request, field in cases:
            with self.assertRaises(grpc.RpcError) as caught:
                method(request, timeout=10)
            self.assertIn(
                caught.exception.code(),
                (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND),
                field,
            )
            self.assertIn(field, caught.exception.details())

    def test_cli_gradient_pyramid_deform_and_mesh(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(DATA, "basketball1.png")
            target = f"--target={self.server.target}"
            runs = [
                [CLIENT, target, "gradient", f"--input={src}", f"--output_prefix={tmp}/g"],
                [
                    CLIENT,
                    target,
                    "pyramid",
                    f"--input={src}",
                    f"--output_prefix={tmp}/p",
                    "--levels=8",
                ],
                [CLIENT, "mesh", "torus", "--n=40", "--m=30", f"--output={tmp}/torus.ply"],
                [
                    CLIENT,
                    target,
                    "deform",
                    f"--input={tmp}/torus.ply",
                    f"--output={tmp}/twisted.obj",
                    "--twist=60",
                    "--bulge=0.2",
                ],
                [CLIENT, target, "deform", "--input=torus:50,40", "--animate=5", "--twist=45"],
            ]
            for args in runs:
                run = subprocess.run(args, capture_output=True, text=True, timeout=180)
                self.assertEqual(run.returncode, 0, f"{args}: {run.stderr}")
            for name in [
                "g_gx.tiff",
                "g_gy.tiff",
                "g_magnitude.png",
                "p_level00.png",
                "p_level07.png",
                "p_contact_sheet.png",
                "torus.ply",
                "twisted.obj",
            ]:
                self.assertGreater(os.path.getsize(os.path.join(tmp, name)), 100, name)
            obj = open(os.path.join(tmp, "twisted.obj")).read()
            self.assertEqual(obj.count("\nv "), 1200)
            self.assertEqual(obj.count("\nvn "), 1200)
            self.assertIn("frames/s", run.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
