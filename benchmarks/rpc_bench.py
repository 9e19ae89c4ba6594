#!/usr/bin/env python3
"""End-to-end RPC times: a cuimg-server (CUDA backend by default) and a Python grpcio client on
the same host, median wall-clock round trip over rotated inputs, with the server's own stage
breakdown from the `cuimg-timing` trailer: Morphology on random inputs, and DetectPedestrians on
1080p JPEG frames (CUIMG_DATA/vtest_1080p_NN.jpg, which the GPU bundle carries), also under load:
`--concurrency` calls in flight for `--load_seconds`, frames per second and latency percentiles.
One JSON line per workload."""
import argparse
import glob
import json
import os
import statistics
import threading
import time

import grpc
import numpy as np

from cuimg.v1 import detection_pb2, imaging_service_pb2_grpc, morphology_pb2, types_pb2
from server_process import ServerProcess

WORKLOADS = {
    # name: (shape (z, y, x), pixel type, numpy dtype, element (shape, w, h, d))
    "rpc_dilate_volume_disk9_i16": ((300, 512, 512), types_pb2.PIXEL_TYPE_I16, np.int16,
                                    (morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 9, 9, 0)),
    "rpc_dilate_2d_3x3_640x480_u8": ((1, 480, 640), types_pb2.PIXEL_TYPE_U8, np.uint8,
                                     (morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3, 0)),
    "rpc_dilate_2d_disk63_u8": ((1, 1080, 1920), types_pb2.PIXEL_TYPE_U8, np.uint8,
                                (morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 63, 63, 0)),
}


def timing_fields(trailers):
    for key, value in trailers:
        if key == "cuimg-timing":
            return {k: float(v) for k, v in (kv.split("=") for kv in value.split())}
    return {}


def detect_workload(stub, args):
    data = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
    files = sorted(glob.glob(os.path.join(data, "vtest_1080p_*.jpg")))
    name = "rpc_detect_1080p_jpeg"
    if not files:
        print(json.dumps({"impl": "rpc", "workload": name, "error": f"no vtest_1080p_*.jpg in {data}"}),
              flush=True)
        return
    requests = []
    for path in files:
        with open(path, "rb") as f:
            requests.append(detection_pb2.DetectPedestriansRequest(
                input=types_pb2.ImageSource(encoded=f.read())))
    walls, stages = [], []
    for i in range(args.runs + 2):
        start = time.perf_counter()
        reply, call = stub.DetectPedestrians.with_call(requests[i % len(requests)], timeout=300)
        wall = time.perf_counter() - start
        if i >= 2:
            walls.append(wall)
            stages.append(timing_fields(call.trailing_metadata()))
    median = {k: statistics.median(s[k] for s in stages) for k in stages[0]}
    # Closed loop under load: `concurrency` threads, each one call in flight.
    latencies, lock, deadline = [], threading.Lock(), time.perf_counter() + args.load_seconds

    def worker(k):
        i = k
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            stub.DetectPedestrians(requests[i % len(requests)], timeout=300)
            with lock:
                latencies.append(time.perf_counter() - start)
            i += args.concurrency

    began = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    latencies.sort()
    print(json.dumps({"impl": "rpc", "workload": name, "backend": args.backend,
                      "median_ms": round(statistics.median(walls) * 1e3, 3),
                      "payload_mb": round(statistics.mean(len(r.input.encoded) for r in requests) / 1e6, 2),
                      "server_us": median, "runs": args.runs, "detections": len(reply.detections),
                      "concurrency": args.concurrency, "throughput_fps": round(len(latencies) / elapsed, 1),
                      "p50_ms_loaded": round(latencies[len(latencies) // 2] * 1e3, 3),
                      "p99_ms_loaded": round(latencies[int(len(latencies) * 0.99)] * 1e3, 3)}),
          flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--load_seconds", type=float, default=10)
    args = parser.parse_args()
    server = ServerProcess(args.server, f"--backend={args.backend}")
    try:
        channel = grpc.insecure_channel(server.target, options=[
            ("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)])
        stub = imaging_service_pb2_grpc.ImagingStub(channel)
        rng = np.random.default_rng(0)
        for name, (shape, pixel_type, dtype, (el_shape, w, h, d)) in WORKLOADS.items():
            info = np.iinfo(dtype)
            requests = []
            for _ in range(3):
                data = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
                image = types_pb2.Image(pixel_type=pixel_type, width=shape[2], height=shape[1],
                                        depth=shape[0] if shape[0] > 1 else 0, data=data.tobytes())
                step = morphology_pb2.MorphologyStep(
                    op=morphology_pb2.MORPHOLOGY_OP_DILATE,
                    element=morphology_pb2.StructuringElement(shape=el_shape, width=w, height=h,
                                                              depth=d))
                requests.append(morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(image=image), steps=[step]))
            walls, stages = [], []
            for i in range(args.runs + 2):
                start = time.perf_counter()
                _, call = stub.Morphology.with_call(requests[i % 3], timeout=300)
                wall = time.perf_counter() - start
                if i >= 2:  # warm-up
                    walls.append(wall)
                    stages.append(timing_fields(call.trailing_metadata()))
            median = {k: statistics.median(s[k] for s in stages) for k in stages[0]}
            print(json.dumps({"impl": "rpc", "workload": name, "backend": args.backend,
                              "median_ms": round(statistics.median(walls) * 1e3, 3),
                              "payload_mb": round(len(requests[0].input.image.data) / 1e6, 1),
                              "server_us": median, "runs": args.runs}), flush=True)
        detect_workload(stub, args)
        channel.close()
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
