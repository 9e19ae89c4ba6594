#!/usr/bin/env python3
"""Sends the same Morphology requests to a CUDA-backend and a CPU-backend cuimg-server and checks
the outputs are identical byte for byte (random types, shapes, sizes, anchors, ops, chains, 2D/3D).
Run on the GPU machine: compare_backends.py --server path/to/cuimg-server [--cases N]."""
import argparse
import sys

import grpc
import numpy as np

from cuimg.v1 import (deform_pb2, gradient_pb2, imaging_service_pb2_grpc, morphology_pb2,
                      pyramid_pb2, types_pb2)
from server_process import ServerProcess

TYPES = [(types_pb2.PIXEL_TYPE_U8, np.uint8), (types_pb2.PIXEL_TYPE_U16, np.uint16),
         (types_pb2.PIXEL_TYPE_I16, np.int16), (types_pb2.PIXEL_TYPE_F32, np.float32)]


def random_request(rng):
    pixel_type, dtype = TYPES[rng.integers(len(TYPES))]
    volume = rng.random() < 0.4
    shape = (int(rng.integers(1, 24)) if volume else 1, int(rng.integers(1, 90)),
             int(rng.integers(1, 120)))
    if dtype == np.float32:
        data = rng.normal(scale=100, size=shape).astype(np.float32)
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    image = types_pb2.Image(pixel_type=pixel_type, width=shape[2], height=shape[1],
                            depth=shape[0] if volume else 0, data=data.tobytes())
    steps = []
    for _ in range(int(rng.integers(1, 3))):
        el = morphology_pb2.StructuringElement(
            shape=int(rng.integers(1, 5)), width=int(rng.integers(1, 26)),
            height=int(rng.integers(1, 26)), depth=int(rng.integers(1, 6)) if volume and rng.random() < 0.5 else 0)
        d = max(el.depth, 1)
        if el.shape == morphology_pb2.ELEMENT_SHAPE_CUSTOM:
            mask = (rng.random(el.width * el.height * d) < 0.3).astype(np.uint8)
            mask[rng.integers(mask.size)] = 1
            el.mask = mask.tobytes()
        if rng.random() < 0.3:
            el.anchor_x, el.anchor_y = int(rng.integers(el.width)), int(rng.integers(el.height))
            el.anchor_z = int(rng.integers(d))
        step = morphology_pb2.MorphologyStep(op=int(rng.integers(1, 8)), element=el,
                                             iterations=int(rng.integers(1, 3)))
        if rng.random() < 0.3:
            step.border_mode = morphology_pb2.BORDER_MODE_CONSTANT
            step.border_value = float(rng.integers(-50, 300))
        steps.append(step)
    return morphology_pb2.MorphologyRequest(input=types_pb2.ImageSource(image=image), steps=steps)


def compare_other_rpcs(stubs, rng):
    """Gradient (float rounding), Pyramid (bit for bit) and Deform (tolerance) on both backends."""
    failures = 0
    for i in range(20):
        h, w = int(rng.integers(1, 200)), int(rng.integers(1, 200))
        image = rng.integers(0, 65536, (h, w), dtype=np.uint16)
        src = types_pb2.ImageSource(image=types_pb2.Image(
            pixel_type=types_pb2.PIXEL_TYPE_U16, width=w, height=h, data=image.tobytes()))
        length = int(rng.choice([3, 7, 15]))
        g = [stub.Gradient(gradient_pb2.GradientRequest(input=src, kernel_length=length), timeout=60)
             for stub in stubs]
        a, b = (np.frombuffer(r.gx.image.data, np.float32).astype(np.float64) for r in g)
        # float32 (CUDA) vs float64 (CPU) sums: 1e-5 relative, with a floor of 1e-7 of the input's
        # scale per pixel (heavy smoothing of noise leaves gradients far below the terms summed).
        err, ref = np.linalg.norm(a - b), np.linalg.norm(b)
        if err > 1e-5 * ref + 1e-7 * float(image.max()) * np.sqrt(a.size):
            failures += 1
            print(f"gradient case {i} ({w}x{h}, length {length}): MISMATCH |cuda-cpu| {err:.3g}, |cpu| {ref:.3g}")
        if min(h, w) >= 8:
            p = [stub.Pyramid(pyramid_pb2.PyramidRequest(input=src, levels=10, output_type=types_pb2.PIXEL_TYPE_U16),
                              timeout=60) for stub in stubs]
            if [l.result.image.data for l in p[0].levels] != [l.result.image.data for l in p[1].levels]:
                failures += 1
                print(f"pyramid case {i}: MISMATCH")
    n = 500
    pos = rng.normal(size=(n, 3)).astype(np.float32)
    tris = rng.integers(0, n, size=(900, 3)).astype(np.uint32)
    lattice = deform_pb2.Lattice(origin=types_pb2.Vec3(x=-2, y=-2, z=-2), s=types_pb2.Vec3(x=4),
                                 t=types_pb2.Vec3(x=0.5, y=4), u=types_pb2.Vec3(z=4), count_s=4,
                                 count_t=3, count_u=5, displacements=rng.normal(scale=0.2, size=180).tolist())
    mesh = deform_pb2.MeshSource(mesh=deform_pb2.Mesh(vertex_count=n, triangle_count=900,
                                                      positions=pos.tobytes(), triangles=tris.tobytes()))
    d = [stub.Deform(deform_pb2.DeformRequest(mesh=mesh, lattice=lattice), timeout=60) for stub in stubs]
    pa, pb = (np.frombuffer(r.positions, np.float32) for r in d)
    if np.abs(pa - pb).max() > 1e-5 * 4:
        failures += 1
        print("deform positions: MISMATCH")
    print(f"backends cuda vs cpu (gradient, pyramid, deform): {failures} mismatches")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--cases", type=int, default=200)
    args = parser.parse_args()
    cuda = ServerProcess(args.server, "--backend=cuda")
    cpu = ServerProcess(args.server, "--backend=cpu")
    try:
        stubs = [imaging_service_pb2_grpc.ImagingStub(grpc.insecure_channel(s.target))
                 for s in (cuda, cpu)]
        rng = np.random.default_rng(7)
        mismatches = 0
        for i in range(args.cases):
            request = random_request(rng)
            a, b = (stub.Morphology(request, timeout=300) for stub in stubs)
            if a.result.image.data != b.result.image.data:
                mismatches += 1
                print(f"case {i}: MISMATCH {request.steps}")
        print(f"backends cuda vs cpu: {args.cases - mismatches}/{args.cases} identical")
        other = compare_other_rpcs(stubs, rng)
        return 0 if mismatches == 0 and other == 0 else 1
    finally:
        cuda.terminate()
        cpu.terminate()


if __name__ == "__main__":
    sys.exit(main())
