#!/usr/bin/env python3
"""What one unary Morphology of a CT volume costs the server (issue #34): its peak resident memory
and its copy times. A fresh cuimg-server per client, then one 9x9-disk dilation of a random
(D, H, W) int16 volume (300x512x512 = 157 MB by default) sent as one message, from the C++ CLI
(`cuimg morphology --input VOL.npy`, needs --client) and from a small Python grpcio script. After
that first call the server's VmHWM (/proc/PID/status) is read: `peak_mb` is the process's peak,
`request_peak_mb` that peak less the resident memory before the call, also as a multiple of the
volume's pixel bytes (`x_pixels`; the issue's target is <= 2.2). Then --runs more calls give the
medians of the server's stages from its `cuimg-timing` trailer (h2d_us counts the copy of the
pixels out of the received bytes and handing those back, d2h_us the result's way back) and of the
client's round trip. With --warmup a small call (2x64x64, same client and element) goes first, so
that what a process sets up on its first call (CUDA's lazily loaded kernels) is not counted as
the volume's. One JSON line per client. On the GPU machine, from the bundle:
  PYTHONPATH=bundle/python:bundle/tests/e2e python3 bundle/benchmarks/unary_footprint.py \
      --server bundle/bin/cuimg-server --client bundle/bin/cuimg --backend cuda"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import grpc
import numpy as np

from cuimg import wire_contract
from cuimg.v1 import imaging_service_pb2_grpc, morphology_pb2, types_pb2
from server_process import ServerProcess, status_kb


def python_call(stub, volume):
    """One unary dilation from grpcio: (round trip s, server stages)."""
    depth, height, width = volume.shape
    image = types_pb2.Image(
        pixel_type=types_pb2.PIXEL_TYPE_I16,
        width=width,
        height=height,
        depth=depth,
        data=volume.tobytes(),
    )
    step = morphology_pb2.MorphologyStep(
        op=morphology_pb2.MORPHOLOGY_OP_DILATE,
        element=morphology_pb2.StructuringElement(
            shape=morphology_pb2.ELEMENT_SHAPE_ELLIPSE, width=9, height=9
        ),
    )
    request = morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(image=image), steps=[step]
    )
    start = time.perf_counter()
    reply, call = stub.Morphology.with_call(request, timeout=600)
    wall = time.perf_counter() - start
    if len(reply.result.image.data) != volume.nbytes:
        raise RuntimeError(f"the server returned {len(reply.result.image.data)} bytes")
    return wall, wire_contract.timing(call.trailing_metadata())


def cli_call(client, target, path, out):
    """One unary dilation from the C++ CLI: (its round trip s, server stages)."""
    run = subprocess.run(
        [
            client,
            f"--target={target}",
            "morphology",
            f"--input={path}",
            f"--output={out}",
            "--op=dilate",
            "--shape=ellipse",
            "--size=9x9",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        raise RuntimeError(f"cuimg exited {run.returncode}: {run.stdout}{run.stderr}")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    return report["round_trip_ms"] / 1e3, wire_contract.parse_timing(report["server_timing"])


def measure(args, name, call, warmup):
    """A fresh server, one call for its memory (after `warmup` with --warmup), --runs more for
    the times."""
    server = ServerProcess(args.server, f"--backend={args.backend}", *args.server_flag)
    try:
        pid = server.process.pid
        if args.warmup:
            warmup(server.target)
        time.sleep(0.5)  # start-up's own allocations settle
        before_kb = status_kb(pid, "VmRSS")
        before_hwm_kb = status_kb(pid, "VmHWM")
        wall, first = call(server.target)
        hwm_kb = status_kb(pid, "VmHWM")
        walls, stages = [], []
        for _ in range(args.runs):
            w, s = call(server.target)
            walls.append(w)
            stages.append(s)
    finally:
        server.terminate()
    pixel_bytes = args.depth * args.height * args.width * 2
    request_peak = (hwm_kb - before_kb) * 1024
    row = {
        "workload": f"unary_footprint_dilate_disk9_i16_{args.depth}x{args.height}x{args.width}",
        "client": name,
        "backend": args.backend,
        "warmup": args.warmup,
        "pixel_mb": round(pixel_bytes / 1e6, 1),
        "rss_before_mb": round(before_kb * 1024 / 1e6, 1),
        "peak_before_mb": round(before_hwm_kb * 1024 / 1e6, 1),
        "peak_mb": round(hwm_kb * 1024 / 1e6, 1),
        "request_peak_mb": round(request_peak / 1e6, 1),
        "x_pixels": round(request_peak / pixel_bytes, 2),
        "first_round_trip_ms": round(wall * 1e3, 1),
        "first_server_us": first,
    }
    if stages:
        row["runs"] = len(stages)
        row["round_trip_ms"] = round(statistics.median(walls) * 1e3, 1)
        row["round_trip_max_ms"] = round(max(walls) * 1e3, 1)
        row["round_trips_ms"] = [round(w * 1e3, 1) for w in walls]
        row["server_us"] = {k: statistics.median(s[k] for s in stages) for k in stages[0]}
        row["h2d_plus_d2h_ms"] = round(
            (row["server_us"].get("h2d_us", 0) + row["server_us"].get("d2h_us", 0)) / 1e3, 2
        )
    print(json.dumps(row), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True, help="the cuimg-server binary")
    parser.add_argument("--client", default="", help="the cuimg CLI binary (adds its row)")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--volume", default="300x512x512", help="DxHxW of the int16 volume")
    parser.add_argument(
        "--runs",
        type=int,
        default=0,
        help="calls after the first, for median times (e.g. 10 on a GPU)",
    )
    parser.add_argument(
        "--server_flag", action="append", default=[], help="an extra server flag (repeatable)"
    )
    parser.add_argument(
        "--warmup", action="store_true", help="a small call before the measured one (see above)"
    )
    args = parser.parse_args()
    args.depth, args.height, args.width = (int(v) for v in args.volume.split("x"))
    rng = np.random.default_rng(34)
    volume = rng.integers(
        -32768, 32767, size=(args.depth, args.height, args.width), dtype=np.int16, endpoint=True
    )
    small = volume[:2, :64, :64].copy()
    options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]

    def python(target, pixels=volume):
        with grpc.insecure_channel(target, options=options) as channel:
            return python_call(imaging_service_pb2_grpc.ImagingStub(channel), pixels)

    measure(args, "python_grpcio", python, lambda target: python(target, small))
    if args.client:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "volume.npy")
            np.save(path, volume)
            small_path = os.path.join(tmp, "small.npy")
            np.save(small_path, small)
            out = os.path.join(tmp, "out.npy")
            measure(
                args,
                "cpp_cli",
                lambda target: cli_call(args.client, target, path, out),
                lambda target: cli_call(args.client, target, small_path, out),
            )


if __name__ == "__main__":
    main()
