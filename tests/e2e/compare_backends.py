#!/usr/bin/env python3
"""Sends the same Morphology requests to a CUDA-backend and a CPU-backend cuimg-server and checks
the outputs are identical byte for byte (random types, shapes, sizes, anchors, ops, chains, 2D/3D);
then Gradient, Pyramid and Deform within their tolerances, and DetectPedestrians: every window's
score within 1e-4 and detections with precision and recall >= 0.95 at IoU >= 0.5.
Run on the GPU machine: compare_backends.py --server path/to/cuimg-server [--cases N]."""
import argparse
import glob
import os
import sys

import grpc
import numpy as np

from cuimg.v1 import (
    deform_pb2,
    detection_pb2,
    gradient_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    pyramid_pb2,
    types_pb2,
)
from server_process import ServerProcess

TYPES = [
    (types_pb2.PIXEL_TYPE_U8, np.uint8),
    (types_pb2.PIXEL_TYPE_U16, np.uint16),
    (types_pb2.PIXEL_TYPE_I16, np.int16),
    (types_pb2.PIXEL_TYPE_F32, np.float32),
]


def random_request(rng):
    pixel_type, dtype = TYPES[rng.integers(len(TYPES))]
    volume = rng.random() < 0.4
    shape = (
        int(rng.integers(1, 24)) if volume else 1,
        int(rng.integers(1, 90)),
        int(rng.integers(1, 120)),
    )
    if dtype == np.float32:
        data = rng.normal(scale=100, size=shape).astype(np.float32)
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
    image = types_pb2.Image(
        pixel_type=pixel_type,
        width=shape[2],
        height=shape[1],
        depth=shape[0] if volume else 0,
        data=data.tobytes(),
    )
    steps = []
    for _ in range(int(rng.integers(1, 3))):
        el = morphology_pb2.StructuringElement(
            shape=int(rng.integers(1, 5)),
            width=int(rng.integers(1, 26)),
            height=int(rng.integers(1, 26)),
            depth=int(rng.integers(1, 6)) if volume and rng.random() < 0.5 else 0,
        )
        d = max(el.depth, 1)
        if el.shape == morphology_pb2.ELEMENT_SHAPE_CUSTOM:
            mask = (rng.random(el.width * el.height * d) < 0.3).astype(np.uint8)
            mask[rng.integers(mask.size)] = 1
            el.mask = mask.tobytes()
        if rng.random() < 0.3:
            el.anchor_x, el.anchor_y = int(rng.integers(el.width)), int(rng.integers(el.height))
            el.anchor_z = int(rng.integers(d))
        step = morphology_pb2.MorphologyStep(
            op=int(rng.integers(1, 8)), element=el, iterations=int(rng.integers(1, 3))
        )
        if rng.random() < 0.3:
            step.border_mode = morphology_pb2.BORDER_MODE_CONSTANT
            step.border_value = float(rng.integers(-50, 300))
        steps.append(step)
    return morphology_pb2.MorphologyRequest(input=types_pb2.ImageSource(image=image), steps=steps)


def compare_other_rpcs(stubs, rng, pieces_stub):
    """Gradient (float rounding), Pyramid (bit for bit) and Deform (tolerance) on both backends.
    `pieces_stub`: a CUDA server whose pyramids come back in pieces of at most 64 KiB (several
    pinned buffers and D2H copies per call), also bit for bit."""
    failures = 0
    for i in range(20):
        h, w = int(rng.integers(1, 200)), int(rng.integers(1, 200))
        image = rng.integers(0, 65536, (h, w), dtype=np.uint16)
        src = types_pb2.ImageSource(
            image=types_pb2.Image(
                pixel_type=types_pb2.PIXEL_TYPE_U16, width=w, height=h, data=image.tobytes()
            )
        )
        length = int(rng.choice([3, 7, 15]))
        g = [
            stub.Gradient(gradient_pb2.GradientRequest(input=src, kernel_length=length), timeout=60)
            for stub in stubs
        ]
        a, b = (np.frombuffer(r.gx.image.data, np.float32).astype(np.float64) for r in g)
        # float32 (CUDA) vs float64 (CPU) sums: 1e-5 relative, with a floor of 1e-7 of the input's
        # scale per pixel (heavy smoothing of noise leaves gradients far below the terms summed).
        err, ref = np.linalg.norm(a - b), np.linalg.norm(b)
        if err > 1e-5 * ref + 1e-7 * float(image.max()) * np.sqrt(a.size):
            failures += 1
            print(
                f"gradient case {i} ({w}x{h}, length {length}): "
                f"MISMATCH |cuda-cpu| {err:.3g}, |cpu| {ref:.3g}"
            )
        if min(h, w) >= 8:
            out = rng.choice([types_pb2.PIXEL_TYPE_U16, types_pb2.PIXEL_TYPE_F32])
            p = [
                stub.Pyramid(
                    pyramid_pb2.PyramidRequest(input=src, levels=10, output_type=out), timeout=60
                )
                for stub in stubs + [pieces_stub]
            ]
            want = [level.result.image.data for level in p[1].levels]
            if [level.result.image.data for level in p[0].levels] != want or [
                level.result.image.data for level in p[2].levels
            ] != want:
                failures += 1
                print(f"pyramid case {i}: MISMATCH")
    n = 500
    pos = rng.normal(size=(n, 3)).astype(np.float32)
    tris = rng.integers(0, n, size=(900, 3)).astype(np.uint32)
    lattice = deform_pb2.Lattice(
        origin=types_pb2.Vec3(x=-2, y=-2, z=-2),
        s=types_pb2.Vec3(x=4),
        t=types_pb2.Vec3(x=0.5, y=4),
        u=types_pb2.Vec3(z=4),
        count_s=4,
        count_t=3,
        count_u=5,
        displacements=rng.normal(scale=0.2, size=180).tolist(),
    )
    mesh = deform_pb2.MeshSource(
        mesh=deform_pb2.Mesh(
            vertex_count=n, triangle_count=900, positions=pos.tobytes(), triangles=tris.tobytes()
        )
    )
    d = [
        stub.Deform(deform_pb2.DeformRequest(mesh=mesh, lattice=lattice), timeout=60)
        for stub in stubs
    ]
    pa, pb = (np.frombuffer(r.positions, np.float32) for r in d)
    if np.abs(pa - pb).max() > 1e-5 * 4:
        failures += 1
        print("deform positions: MISMATCH")
    print(f"backends cuda vs cpu (gradient, pyramid, deform): {failures} mismatches")
    return failures


def iou(a, b):
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    if x1 <= x0 or y1 <= y0:
        return 0.0
    inter = (x1 - x0) * (y1 - y0)
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def match(found, reference, min_iou=0.5):
    """Greedy one-to-one matching by descending IoU: the number of matched pairs."""
    pairs = sorted(
        (
            (iou(f, r), i, j)
            for i, f in enumerate(found)
            for j, r in enumerate(reference)
            if iou(f, r) >= min_iou
        ),
        reverse=True,
    )
    used_f, used_r, matched = set(), set(), 0
    for _, i, j in pairs:
        if i not in used_f and j not in used_r:
            used_f.add(i)
            used_r.add(j)
            matched += 1
    return matched


def synthetic(rng, h, w, channels):
    y, x = np.mgrid[0:h, 0:w]
    fx, fy = rng.uniform(0.02, 0.12, size=2)
    base = 128 + 90 * np.sin(x * fx)[..., None] * np.cos(y * fy)[..., None] * np.ones(channels)
    noise = rng.integers(-15, 16, size=(h, w, channels))
    return np.clip(base + noise, 0, 255).astype(np.uint8).squeeze()


def image_source(array):
    h, w = array.shape[:2]
    channels = 1 if array.ndim == 2 else array.shape[2]
    return types_pb2.ImageSource(
        image=types_pb2.Image(
            pixel_type=types_pb2.PIXEL_TYPE_U8,
            width=w,
            height=h,
            channels=channels,
            data=array.tobytes(),
        )
    )


def compare_detections(stubs, rng):
    """DetectPedestrians, CUDA vs CPU: every window (hit_threshold far below, no grouping) scored
    within 1e-4 on synthetic images of odd sizes and 1/3/4 channels; grouped detections on real
    images (basketball1/2, fruits, vtest_NN.jpg frames) with precision and recall >= 0.95."""
    failures = 0
    every = dict(hit_threshold=-1e9, grouping=detection_pb2.GROUPING_NONE)
    cases = [
        (synthetic(rng, int(rng.integers(128, 300)), int(rng.integers(64, 400)), int(c)), spec)
        for c, spec in [
            (1, {}),
            (3, dict(gamma_correction=False)),
            (4, dict(scale=1.3)),
            (3, dict(model="opencv_daimler_48x96")),
            (1, dict(win_stride=16, scale=1.5)),
        ]
    ]
    for i, (array, spec) in enumerate(cases):
        replies = [
            stub.DetectPedestrians(
                detection_pb2.DetectPedestriansRequest(input=image_source(array), **every, **spec),
                timeout=300,
            )
            for stub in stubs
        ]
        keyed = [
            {(d.x, d.y, d.width, d.height, round(d.scale, 9)): d.score for d in r.detections}
            for r in replies
        ]
        worst = max(
            (abs(keyed[0][k] - keyed[1][k]) for k in keyed[1] if k in keyed[0]), default=0.0
        )
        if (
            keyed[0].keys() != keyed[1].keys()
            or replies[0].windows != replies[1].windows
            or worst > 1e-4
        ):
            failures += 1
            print(
                f"detect windows case {i} {array.shape} {spec}: MISMATCH windows "
                f"{replies[0].windows} vs {replies[1].windows}, keys equal "
                f"{keyed[0].keys() == keyed[1].keys()}, max |score diff| {worst:.3g}"
            )
    data = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
    files = [os.path.join(data, n) for n in ("basketball1.png", "basketball2.png", "fruits.jpg")]
    files += sorted(glob.glob(os.path.join(data, "vtest_[0-9][0-9].jpg")))
    matched = found = reference = 0
    for path in files:
        with open(path, "rb") as f:
            encoded = types_pb2.ImageSource(encoded=f.read())
        for spec in (
            {},
            dict(padding=32, scale=1.1),
            dict(model="opencv_daimler_48x96", hit_threshold=0.5),
        ):
            cuda, cpu = (
                stub.DetectPedestrians(
                    detection_pb2.DetectPedestriansRequest(input=encoded, **spec), timeout=300
                )
                for stub in stubs
            )
            a = [(d.x, d.y, d.width, d.height) for d in cuda.detections]
            b = [(d.x, d.y, d.width, d.height) for d in cpu.detections]
            matched += match(a, b)
            found += len(a)
            reference += len(b)
    precision = matched / found if found else 1.0
    recall = matched / reference if reference else 1.0
    print(
        f"backends cuda vs cpu (detections on {len(files)} images x 3 specs): {matched} of {found} "
        f"matched {reference}: precision {precision:.4f} recall {recall:.4f}"
    )
    if precision < 0.95 or recall < 0.95 or reference == 0:
        failures += 1
    print(f"backends cuda vs cpu (detect): {failures} mismatches")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--cases", type=int, default=200)
    args = parser.parse_args()
    cuda = ServerProcess(args.server, "--backend=cuda")
    cpu = ServerProcess(args.server, "--backend=cpu")
    cuda_pieces = ServerProcess(args.server, "--backend=cuda", "--pinned_message_max_bytes=65536")
    try:
        stubs = [
            imaging_service_pb2_grpc.ImagingStub(
                grpc.insecure_channel(s.target, options=[("grpc.max_receive_message_length", -1)])
            )
            for s in (cuda, cpu, cuda_pieces)
        ]
        pieces_stub = stubs.pop()
        rng = np.random.default_rng(7)
        mismatches = 0
        for i in range(args.cases):
            request = random_request(rng)
            a, b = (stub.Morphology(request, timeout=300) for stub in stubs)
            if a.result.image.data != b.result.image.data:
                mismatches += 1
                print(f"case {i}: MISMATCH {request.steps}")
        print(f"backends cuda vs cpu: {args.cases - mismatches}/{args.cases} identical")
        other = compare_other_rpcs(stubs, rng, pieces_stub)
        detect = compare_detections(stubs, rng)
        return 0 if mismatches == 0 and other == 0 and detect == 0 else 1
    finally:
        cuda.terminate()
        cpu.terminate()
        cuda_pieces.terminate()


if __name__ == "__main__":
    sys.exit(main())
