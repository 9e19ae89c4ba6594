#!/usr/bin/env python3
"""Sends the same segmentation requests to a CUDA-backend and a CPU-backend cuimg-server and checks
that the outputs are identical byte for byte: random chains of the segmentation steps (every op,
pixel type, connectivity, 2D and 3D, with erosions and dilations between them) on random,
adversarial (spiral, maze, serpentine, checkerboard) and blob inputs, and Label with every option,
the label image and every column of the region table. Run on the GPU machine:
compare_segmentation_backends.py --server path/to/cuimg-server [--cases N]."""
import argparse
import sys

import grpc
import numpy as np

import segmentation_cases as cases
from cuimg.v1 import imaging_service_pb2_grpc, label_pb2, morphology_pb2, types_pb2
from server_process import ServerProcess

OP = morphology_pb2
GLOBAL_OPS = [
    OP.MORPHOLOGY_OP_FILL_HOLES,
    OP.MORPHOLOGY_OP_RECONSTRUCT_DILATE,
    OP.MORPHOLOGY_OP_RECONSTRUCT_ERODE,
    OP.MORPHOLOGY_OP_OPEN_REC,
    OP.MORPHOLOGY_OP_CLOSE_REC,
    OP.MORPHOLOGY_OP_HMAX,
    OP.MORPHOLOGY_OP_HMIN,
    OP.MORPHOLOGY_OP_THRESHOLD,
    OP.MORPHOLOGY_OP_REMOVE_SMALL,
    OP.MORPHOLOGY_OP_KEEP_LARGEST,
]


def random_input(rng, dtype, volume):
    """Random values, a 0/max mask, blobs, or an adversarial path image, of `dtype`."""
    shape = (
        (int(rng.integers(2, 20)), int(rng.integers(1, 70)), int(rng.integers(1, 90)))
        if volume
        else (int(rng.integers(1, 200)), int(rng.integers(1, 260)))
    )
    kind = rng.integers(5)
    if kind == 0:
        return cases.random_values(rng, shape, dtype, 0, int(rng.integers(1, 200)))
    if kind == 1:
        return cases.random_mask(rng, shape, dtype, rng.uniform(0.1, 0.9))
    if kind == 2:  # smooth blobs with holes: a few levels
        noise = rng.normal(size=shape)
        for axis in range(len(shape)):
            noise = np.cumsum(noise, axis=axis) / np.sqrt(np.arange(1, shape[axis] + 1)).reshape(
                [-1 if a == axis else 1 for a in range(len(shape))]
            )
        levels = np.digitize(noise, [-0.5, 0, 0.5, 1]).astype(dtype)
        return levels * (3 if dtype != np.uint8 else 50)
    if volume:
        planes = [
            cases.maze(rng, max(1, shape[1] // 2), max(1, shape[2] // 2)) for _ in range(shape[0])
        ]
        # Cast first: NumPy 2 refuses a Python int the mask's uint8 cannot hold (32767).
        return np.stack(planes).astype(dtype) * cases.top(dtype)
    h, w = max(shape[0], 3), max(shape[1], 3)
    path = cases.spiral(h, w) if kind == 3 else cases.maze(rng, h // 2, w // 2)
    return path.astype(dtype) * cases.top(dtype)


def random_step(rng, op, volume):
    step = morphology_pb2.MorphologyStep(op=op)
    if op != OP.MORPHOLOGY_OP_THRESHOLD and rng.random() < 0.7:
        step.connectivity = cases.CONNECTIVITY[int(rng.choice([6, 18, 26] if volume else [4, 8]))]
    if op in (OP.MORPHOLOGY_OP_OPEN_REC, OP.MORPHOLOGY_OP_CLOSE_REC):
        step.element.CopyFrom(
            morphology_pb2.StructuringElement(
                shape=int(rng.integers(1, 4)),
                width=int(rng.integers(1, 12)),
                height=int(rng.integers(1, 12)),
                depth=int(rng.integers(0, 4)) if volume else 0,
            )
        )
    if op in (OP.MORPHOLOGY_OP_HMAX, OP.MORPHOLOGY_OP_HMIN):
        step.h = float(rng.integers(0, 30))
    if op == OP.MORPHOLOGY_OP_THRESHOLD:
        step.lo = float(rng.integers(0, 60))
        step.hi = step.lo + float(rng.integers(0, 100))
    if op == OP.MORPHOLOGY_OP_REMOVE_SMALL:
        step.min_voxels = int(rng.integers(0, 40))
    return step


def random_request(rng):
    pixel_type, dtype = cases.TYPES[rng.integers(len(cases.TYPES))]
    volume = rng.random() < 0.4
    image = random_input(rng, dtype, volume)
    steps = []
    for _ in range(int(rng.integers(1, 4))):
        op = GLOBAL_OPS[rng.integers(len(GLOBAL_OPS))]
        if dtype == np.uint32 and op in (OP.MORPHOLOGY_OP_OPEN_REC, OP.MORPHOLOGY_OP_CLOSE_REC):
            op = OP.MORPHOLOGY_OP_FILL_HOLES  # U32 takes no element
        if dtype != np.uint32 and rng.random() < 0.25:
            steps.append(
                morphology_pb2.MorphologyStep(
                    op=int(rng.integers(1, 3)),
                    element=morphology_pb2.StructuringElement(
                        shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=3, height=3
                    ),
                )
            )
        steps.append(random_step(rng, op, volume))
    request = morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(image=cases.image_proto(image)), steps=steps
    )
    if any(
        s.op in (OP.MORPHOLOGY_OP_RECONSTRUCT_DILATE, OP.MORPHOLOGY_OP_RECONSTRUCT_ERODE)
        for s in steps
    ):
        marker = (
            cases.random_values(rng, image.shape, dtype, 0, 200)
            if rng.random() < 0.5
            else np.where(rng.random(image.shape) < 0.01, image, 0).astype(dtype)
        )
        request.marker.image.CopyFrom(cases.image_proto(marker))
    return request


def random_label_request(rng):
    _, dtype = cases.TYPES[rng.integers(len(cases.TYPES))]
    volume = rng.random() < 0.4
    image = random_input(rng, dtype, volume)
    request = label_pb2.LabelRequest(input=types_pb2.ImageSource(image=cases.image_proto(image)))
    if rng.random() < 0.7:
        request.connectivity = cases.CONNECTIVITY[
            int(rng.choice([6, 18, 26] if volume else [4, 8]))
        ]
    if rng.random() < 0.4:
        request.threshold.lo = float(rng.integers(0, 50))
        request.threshold.hi = request.threshold.lo + float(rng.integers(0, 200))
    if rng.random() < 0.3:
        request.min_voxels = int(rng.integers(0, 20))
    if rng.random() < 0.5:
        _, itype = cases.TYPES[rng.integers(len(cases.TYPES))]
        values = cases.random_values(rng, image.shape, itype, 0, 1000)
        if itype == np.float32 and rng.random() < 0.3:
            values.ravel()[rng.integers(values.size)] = np.nan
        request.intensity.image.CopyFrom(cases.image_proto(values))
    return request


def outcome(call, request):
    """The response's bytes, or the refusal's code and message (the same on both backends)."""
    try:
        return call(request, timeout=300).SerializeToString(deterministic=True)
    except grpc.RpcError as e:
        return f"{e.code().name}: {e.details()}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--cases", type=int, default=300)
    # The script's own check, without a GPU: --first_backend=cpu compares two CPU servers.
    parser.add_argument("--first_backend", default="cuda")
    args = parser.parse_args()
    cuda = ServerProcess(args.server, f"--backend={args.first_backend}")
    cpu = ServerProcess(args.server, "--backend=cpu")
    try:
        stubs = [
            imaging_service_pb2_grpc.ImagingStub(
                grpc.insecure_channel(s.target, options=[("grpc.max_receive_message_length", -1)])
            )
            for s in (cuda, cpu)
        ]
        rng = np.random.default_rng(48)
        mismatches = refused = 0
        for i in range(args.cases):
            request = random_request(rng)
            a, b = (outcome(stub.Morphology, request) for stub in stubs)
            refused += isinstance(a, str)
            if a != b:
                mismatches += 1
                print(f"steps case {i}: MISMATCH {list(request.steps)}")
        print(
            f"segmentation steps {args.first_backend} vs cpu: "
            f"{args.cases - mismatches}/{args.cases} identical ({refused} refused by both)"
        )
        label_mismatches = refused = 0
        for i in range(args.cases):
            request = random_label_request(rng)
            # Everything, the region table's columns included, equal byte for byte.
            a, b = (outcome(stub.Label, request) for stub in stubs)
            refused += isinstance(a, str)
            if a != b:
                label_mismatches += 1
                print(
                    f"label case {i}: MISMATCH connectivity {request.connectivity} "
                    f"threshold {request.threshold} min_voxels {request.min_voxels}"
                )
        print(
            f"label {args.first_backend} vs cpu: "
            f"{args.cases - label_mismatches}/{args.cases} identical ({refused} refused by both)"
        )
        return 0 if mismatches == 0 and label_mismatches == 0 else 1
    finally:
        cuda.terminate()
        cpu.terminate()


if __name__ == "__main__":
    sys.exit(main())
