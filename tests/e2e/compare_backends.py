#!/usr/bin/env python3
"""Sends the same Morphology requests to a CUDA-backend and a CPU-backend cuimg-server and checks
the outputs are identical byte for byte (random types, shapes, sizes, anchors, ops, chains, 2D/3D).
Run on the GPU machine: compare_backends.py --server path/to/cuimg-server [--cases N]."""
import argparse
import sys

import grpc
import numpy as np

from cuimg.v1 import imaging_service_pb2_grpc, morphology_pb2, types_pb2
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
        return 0 if mismatches == 0 else 1
    finally:
        cuda.terminate()
        cpu.terminate()


if __name__ == "__main__":
    sys.exit(main())
