#!/usr/bin/env python3
"""End-to-end RPC times: a cuimg-server (CUDA backend by default) and a Python grpcio client on
the same host, median wall-clock round trip over rotated inputs, with the server's own stage
breakdown from the `cuimg-timing` trailer: Morphology on random inputs, Deform of a resident
90,601-vertex torus (3x3x3 lattice, positions and normals back), and DetectPedestrians on
1080p JPEG frames (CUIMG_DATA/vtest_1080p_NN.jpg, which the GPU bundle carries), also under load:
`--concurrency` calls in flight for `--load_seconds`, frames per second and latency percentiles;
and a DetectStream of `--stream_frames` 768x576 vtest JPEGs (CUIMG_DATA/vtest_NN.jpg), frames per
second and per-frame latency.
The Python client's rows (cuimg.Client, NumPy in and out) time the same volume dilation unary and
streamed over `--volume_streams` connections (`--python_volume`, 300x512x512 by default; smaller
for the CPU backend). One JSON line per workload."""
import argparse
import glob
import json
import os
import statistics
import threading
import time

import grpc
import numpy as np

from cuimg import wire_contract
from cuimg.v1 import (
    deform_pb2,
    detection_pb2,
    gradient_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    pyramid_pb2,
    resident_pb2,
    types_pb2,
)
from server_process import ServerProcess

WORKLOADS = {
    # name: (shape (z, y, x), pixel type, numpy dtype, element (shape, w, h, d))
    "rpc_dilate_volume_disk9_i16": (
        (300, 512, 512),
        types_pb2.PIXEL_TYPE_I16,
        np.int16,
        (morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 9, 9, 0),
    ),
    "rpc_dilate_2d_3x3_640x480_u8": (
        (1, 480, 640),
        types_pb2.PIXEL_TYPE_U8,
        np.uint8,
        (morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3, 0),
    ),
    "rpc_dilate_2d_disk63_u8": (
        (1, 1080, 1920),
        types_pb2.PIXEL_TYPE_U8,
        np.uint8,
        (morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 63, 63, 0),
    ),
}


# Transport settings of this run, reported with every workload.
TRANSPORT = {}


def torus(n, m, major=1.0, minor=0.35):
    """n x m torus grid (n * m vertices, 2 n m triangles), as the deform benchmark's MakeTorus."""
    u = 2 * np.pi * np.arange(n) / n
    v = 2 * np.pi * np.arange(m) / m
    uu, vv = np.meshgrid(u, v, indexing="ij")
    pos = (
        np.stack(
            [
                (major + minor * np.cos(vv)) * np.cos(uu),
                (major + minor * np.cos(vv)) * np.sin(uu),
                minor * np.sin(vv),
            ],
            axis=-1,
        )
        .reshape(-1, 3)
        .astype(np.float32)
    )
    i, j = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    a, b = i * m + j, ((i + 1) % n) * m + j
    c, d = ((i + 1) % n) * m + (j + 1) % m, i * m + (j + 1) % m
    tris = np.stack([np.stack([a, b, c], -1), np.stack([a, c, d], -1)], axis=2).reshape(-1, 3)
    return pos, tris.astype(np.uint32)


def timed_unary(method, requests, runs, timeout=60):
    """Median wall time over `runs` calls after 2 warm-ups (inputs rotated), the stages' medians
    from the timing trailer, and the last reply."""
    walls, stages = [], []
    for i in range(runs + 2):
        start = time.perf_counter()
        reply, call = method.with_call(requests[i % len(requests)], timeout=timeout)
        wall = time.perf_counter() - start
        if i >= 2:
            walls.append(wall)
            stages.append(wire_contract.timing(call.trailing_metadata()))
    median = {k: statistics.median(s[k] for s in stages) for k in stages[0]}
    return statistics.median(walls), median, reply


def deform_workload(stub, args):
    """The issue's end-to-end Deform: a resident 301x301 torus (uploaded once), a 3x3x3 lattice with
    random displacements per call, positions and normals back."""
    pos, tris = torus(301, 301)
    data = pos.tobytes() + tris.tobytes()
    chunk = 1 << 20
    uploads = [
        resident_pb2.UploadRequest(
            mesh=deform_pb2.Mesh(
                vertex_count=len(pos), triangle_count=len(tris), positions=data[:chunk]
            )
        )
    ]
    uploads += [
        resident_pb2.UploadRequest(chunk=data[k : k + chunk])
        for k in range(chunk, len(data), chunk)
    ]
    handle = stub.Upload(iter(uploads), timeout=120).object.handle
    lo, hi = pos.min(0) - 0.05, pos.max(0) + 0.05
    rng = np.random.default_rng(3)
    requests = [
        deform_pb2.DeformRequest(
            mesh=deform_pb2.MeshSource(handle=handle),
            lattice=deform_pb2.Lattice(
                origin=types_pb2.Vec3(x=lo[0], y=lo[1], z=lo[2]),
                s=types_pb2.Vec3(x=hi[0] - lo[0]),
                t=types_pb2.Vec3(y=hi[1] - lo[1]),
                u=types_pb2.Vec3(z=hi[2] - lo[2]),
                count_s=3,
                count_t=3,
                count_u=3,
                displacements=rng.normal(scale=0.1, size=81).tolist(),
            ),
        )
        for _ in range(3)
    ]
    wall, median, reply = timed_unary(stub.Deform, requests, args.runs)
    print(
        json.dumps(
            {
                **TRANSPORT,
                "impl": "rpc",
                "workload": "rpc_deform_torus301_3x3x3_normals",
                "backend": args.backend,
                "median_ms": round(wall * 1e3, 3),
                "payload_mb": round((len(reply.positions) + len(reply.normals)) / 1e6, 2),
                "server_us": median,
                "runs": args.runs,
                "vertices": len(pos),
                "triangles": len(tris),
            }
        ),
        flush=True,
    )
    stub.Release(resident_pb2.ReleaseRequest(handle=handle), timeout=10)


def gradient_pyramid_workloads(stub, args, selected):
    """Issue 4's end-to-end times at 1080p: Gradient (u8 in, gx and gy f32 back) and the 31-level
    1.05 Pyramid (u8 in, every level f32 back), random frames."""
    rng = np.random.default_rng(1)
    images = [
        types_pb2.Image(
            pixel_type=types_pb2.PIXEL_TYPE_U8,
            width=1920,
            height=1080,
            data=rng.integers(0, 255, size=(1080, 1920), dtype=np.uint8, endpoint=True).tobytes(),
        )
        for _ in range(3)
    ]
    if selected("rpc_gradient_1080p_u8"):
        requests = [
            gradient_pb2.GradientRequest(input=types_pb2.ImageSource(image=image), kernel_length=7)
            for image in images
        ]
        wall, median, reply = timed_unary(stub.Gradient, requests, args.runs)
        payload = len(reply.gx.image.data) + len(reply.gy.image.data)
        print(
            json.dumps(
                {
                    **TRANSPORT,
                    "impl": "rpc",
                    "workload": "rpc_gradient_1080p_u8",
                    "backend": args.backend,
                    "median_ms": round(wall * 1e3, 3),
                    "payload_mb": round(payload / 1e6, 2),
                    "server_us": median,
                    "runs": args.runs,
                }
            ),
            flush=True,
        )
    if selected("rpc_pyramid31_1080p_u8_f32"):
        requests = [
            pyramid_pb2.PyramidRequest(
                input=types_pb2.ImageSource(image=image), levels=31, ratio=1.05
            )
            for image in images
        ]
        wall, median, reply = timed_unary(stub.Pyramid, requests, args.runs)
        payload = sum(len(level.result.image.data) for level in reply.levels)
        print(
            json.dumps(
                {
                    **TRANSPORT,
                    "impl": "rpc",
                    "workload": "rpc_pyramid31_1080p_u8_f32",
                    "backend": args.backend,
                    "median_ms": round(wall * 1e3, 3),
                    "payload_mb": round(payload / 1e6, 2),
                    "server_us": median,
                    "runs": args.runs,
                    "levels": len(reply.levels),
                }
            ),
            flush=True,
        )


def detect_workload(stub, args):
    data = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
    files = sorted(glob.glob(os.path.join(data, "vtest_1080p_*.jpg")))
    name = "rpc_detect_1080p_jpeg"
    if not files:
        print(
            json.dumps(
                {
                    **TRANSPORT,
                    "impl": "rpc",
                    "workload": name,
                    "error": f"no vtest_1080p_*.jpg in {data}",
                }
            ),
            flush=True,
        )
        return
    requests = []
    for path in files:
        with open(path, "rb") as f:
            requests.append(
                detection_pb2.DetectPedestriansRequest(
                    input=types_pb2.ImageSource(encoded=f.read())
                )
            )
    wall, median, reply = timed_unary(stub.DetectPedestrians, requests, args.runs, timeout=300)
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
    print(
        json.dumps(
            {
                **TRANSPORT,
                "impl": "rpc",
                "workload": name,
                "backend": args.backend,
                "median_ms": round(wall * 1e3, 3),
                "payload_mb": round(
                    statistics.mean(len(r.input.encoded) for r in requests) / 1e6, 2
                ),
                "server_us": median,
                "runs": args.runs,
                "detections": len(reply.detections),
                # decode_device in server_us: the GPU the JPEG decoded on, -1 for the CPU.
                "decoder": "gpu" if median.get("decode_device", -1) >= 0 else "cpu",
                "concurrency": args.concurrency,
                "throughput_fps": round(len(latencies) / elapsed, 1),
                "p50_ms_loaded": round(latencies[len(latencies) // 2] * 1e3, 3),
                "p99_ms_loaded": round(latencies[int(len(latencies) * 0.99)] * 1e3, 3),
            }
        ),
        flush=True,
    )


def detect_stream_workload(stub, args):
    """Issue 33's stream row: `--stream_frames` vtest frames (768x576 JPEG, CUIMG_DATA/vtest_NN.jpg
    cycled) over one DetectStream, at most `--stream_window` frames sent and unanswered (a camera
    client that keeps a few frames in flight). Frames per second over the stream, and each frame's
    latency from its send to its result."""
    data = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")
    files = sorted(glob.glob(os.path.join(data, "vtest_[0-9][0-9].jpg")))
    name = "rpc_detect_stream_vtest_jpeg"
    if not files:
        print(
            json.dumps(
                {
                    **TRANSPORT,
                    "impl": "rpc",
                    "workload": name,
                    "error": f"no vtest_NN.jpg in {data}",
                }
            ),
            flush=True,
        )
        return
    jpegs = []
    for path in files:
        with open(path, "rb") as f:
            jpegs.append(f.read())

    def run(count):
        window = threading.Semaphore(args.stream_window)
        sent = []

        def frames():
            for i in range(count):
                window.acquire()
                sent.append(time.perf_counter())
                yield detection_pb2.DetectFrame(
                    id=str(i),
                    request=detection_pb2.DetectPedestriansRequest(
                        input=types_pb2.ImageSource(encoded=jpegs[i % len(jpegs)])
                    ),
                )

        latencies, detections = [], 0
        began = time.perf_counter()
        call = stub.DetectStream(frames(), timeout=300)
        for reply in call:
            latencies.append(time.perf_counter() - sent[reply.index])
            detections += len(reply.result.detections)
            window.release()
        elapsed = time.perf_counter() - began
        return (
            elapsed,
            sorted(latencies),
            detections,
            wire_contract.timing(call.trailing_metadata()),
        )

    run(min(30, args.stream_frames))  # warm-up: workers, CUDA streams, pinned pools
    elapsed, latencies, detections, timing = run(args.stream_frames)
    n = len(latencies)
    print(
        json.dumps(
            {
                **TRANSPORT,
                "impl": "rpc",
                "workload": name,
                "backend": args.backend,
                "frames": n,
                "window": args.stream_window,
                "payload_kb": round(statistics.mean(len(j) for j in jpegs) / 1e3, 1),
                "frames_per_s": round(n / elapsed, 1),
                "p50_ms": round(latencies[n // 2] * 1e3, 3),
                "p99_ms": round(latencies[min(n - 1, int(n * 0.99))] * 1e3, 3),
                "max_ms": round(latencies[-1] * 1e3, 3),
                "detections": detections,
                "server_stage_sums_us": timing,
            }
        ),
        flush=True,
    )


def detect_raw_workload(stub, args):
    """DetectPedestrians on raw 1080p RGB frames (6.2 MB of pixels inline): random frames, so the
    detections are few; what it times is moving the pixels in."""
    rng = np.random.default_rng(2)
    requests = [
        detection_pb2.DetectPedestriansRequest(
            input=types_pb2.ImageSource(
                image=types_pb2.Image(
                    pixel_type=types_pb2.PIXEL_TYPE_U8,
                    width=1920,
                    height=1080,
                    channels=3,
                    data=rng.integers(0, 256, size=1080 * 1920 * 3, dtype=np.uint8).tobytes(),
                )
            )
        )
        for _ in range(3)
    ]
    wall, median, reply = timed_unary(stub.DetectPedestrians, requests, args.runs, timeout=300)
    print(
        json.dumps(
            {
                **TRANSPORT,
                "impl": "rpc",
                "workload": "rpc_detect_1080p_raw_rgb",
                "backend": args.backend,
                "median_ms": round(wall * 1e3, 3),
                "payload_mb": round(len(requests[0].input.image.data) / 1e6, 2),
                "server_us": median,
                "runs": args.runs,
                "detections": len(reply.detections),
            }
        ),
        flush=True,
    )


def deform_cpp_client(client, target, args):
    """The same Deform as deform_workload from the C++ client (`cuimg deform --animate`): the
    torus uploaded once, one lattice per frame, positions and normals back, p50 of the frames."""
    import re
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        mesh = os.path.join(tmp, "torus.ply")
        subprocess.run(
            [client, "mesh", "torus", "--n=301", "--m=301", f"--output={mesh}"],
            check=True,
            capture_output=True,
        )
        frames = max(args.runs * 20, 100)
        run = subprocess.run(
            [client, "deform", f"--target={target}", f"--input={mesh}", f"--animate={frames}"],
            check=True,
            capture_output=True,
            text=True,
        )
    found = re.search(
        r"([0-9.]+) frames/s, round trip p50 ([0-9.]+) ms p99 ([0-9.]+) ms", run.stdout
    )
    if not found:
        print(
            json.dumps(
                {
                    **TRANSPORT,
                    "impl": "rpc",
                    "workload": "rpc_deform_torus301_cpp_client",
                    "error": run.stdout[-300:],
                }
            ),
            flush=True,
        )
        return
    print(
        json.dumps(
            {
                **TRANSPORT,
                "impl": "rpc",
                "workload": "rpc_deform_torus301_cpp_client",
                "backend": args.backend,
                "frames": frames,
                "frames_per_s": float(found.group(1)),
                "median_ms": float(found.group(2)),
                "p99_ms": float(found.group(3)),
            }
        ),
        flush=True,
    )


def python_client_workloads(target, args, selected):
    """The issue's PACS case through the Python client: a (D, H, W) int16 volume dilated by a
    9x9 disk, array in and writable array out, unary (one message) and streamed (split over
    --volume_streams connections); median wall time after 2 warm-ups, inputs rotated. Both
    results must be equal, bit for bit."""
    import cuimg

    depth, height, width = (int(v) for v in args.python_volume.split("x"))
    rng = np.random.default_rng(4)
    volumes = [
        rng.integers(-32768, 32767, size=(depth, height, width), dtype=np.int16, endpoint=True)
        for _ in range(2)
    ]
    name = f"rpc_python_client_dilate_volume_disk9_i16_{depth}x{height}x{width}"
    results = {}
    for mode, threshold in (("unary", None), ("streamed", 0)):
        if not selected(f"{name}_{mode}"):
            continue
        with cuimg.Client(
            target, timeout=600, stream_threshold=threshold, volume_streams=args.volume_streams
        ) as client:
            walls = []
            for i in range(args.runs + 2):
                start = time.perf_counter()
                out = client.morphology(volumes[i % len(volumes)], "dilate:ellipse:9x9")
                if i >= 2:
                    walls.append(time.perf_counter() - start)
            results[mode] = out  # of volumes[(runs + 1) % 2], the same input for both modes
            row = {
                **TRANSPORT,
                "impl": "python_client",
                "workload": f"{name}_{mode}",
                "backend": args.backend,
                "median_ms": round(statistics.median(walls) * 1e3, 3),
                "payload_mb": round(volumes[0].nbytes / 1e6, 1),
                "runs": args.runs,
                "server_timing": client.last_timing,
            }
            if mode == "streamed":
                row.update(
                    streams=len(client.last_stream.timings), slabs=client.last_stream.result_slabs
                )
            print(json.dumps(row), flush=True)
    if len(results) == 2:
        equal = results["unary"].tobytes() == results["streamed"].tobytes()
        print(
            json.dumps(
                {
                    "impl": "python_client",
                    "workload": f"{name}_streamed_equals_unary",
                    "equal": equal,
                }
            ),
            flush=True,
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--load_seconds", type=float, default=10)
    parser.add_argument(
        "--stream_frames",
        type=int,
        default=300,
        help="frames of the DetectStream row (vtest_NN.jpg cycled)",
    )
    parser.add_argument(
        "--stream_window",
        type=int,
        default=4,
        help="the DetectStream row's frames sent and unanswered at most",
    )
    parser.add_argument(
        "--lookahead_bytes",
        type=int,
        default=0,
        help="HTTP/2 lookahead on the server and the client channel (0: gRPC's default)",
    )
    parser.add_argument(
        "--client", default="", help="the cuimg client binary: adds the C++ client's Deform row"
    )
    parser.add_argument(
        "--python_volume",
        default="300x512x512",
        help="DxHxW of the Python client's volume rows (e.g. 40x256x256 on CPU)",
    )
    parser.add_argument(
        "--volume_streams",
        type=int,
        default=4,
        help="connections the Python client's streamed row splits a volume over",
    )
    parser.add_argument(
        "--server_flag",
        action="append",
        default=[],
        help="an extra cuimg-server flag, repeatable (e.g. --server_flag=--jpeg_decoder=cpu "
        "for the CPU-decode baseline of rpc_detect_1080p_jpeg); every row records them",
    )
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated workload names (or prefixes) to run; default all",
    )
    args = parser.parse_args()
    wanted = [w for w in args.only.split(",") if w]

    def selected(name):
        return not wanted or any(name.startswith(w) for w in wanted)

    server_flags = [f"--backend={args.backend}", *args.server_flag]
    if args.server_flag:
        TRANSPORT["server_flags"] = " ".join(args.server_flag)
    options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
    if args.lookahead_bytes:
        server_flags.append(f"--http2_lookahead_bytes={args.lookahead_bytes}")
        options.append(("grpc.http2.lookahead_bytes", args.lookahead_bytes))
    TRANSPORT["lookahead_bytes"] = args.lookahead_bytes
    server = ServerProcess(args.server, *server_flags)
    try:
        channel = grpc.insecure_channel(server.target, options=options)
        stub = imaging_service_pb2_grpc.ImagingStub(channel)
        rng = np.random.default_rng(0)
        for name, (shape, pixel_type, dtype, (el_shape, w, h, d)) in WORKLOADS.items():
            if not selected(name):
                continue
            info = np.iinfo(dtype)
            requests = []
            for _ in range(3):
                data = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
                image = types_pb2.Image(
                    pixel_type=pixel_type,
                    width=shape[2],
                    height=shape[1],
                    depth=shape[0] if shape[0] > 1 else 0,
                    data=data.tobytes(),
                )
                step = morphology_pb2.MorphologyStep(
                    op=morphology_pb2.MORPHOLOGY_OP_DILATE,
                    element=morphology_pb2.StructuringElement(
                        shape=el_shape, width=w, height=h, depth=d
                    ),
                )
                requests.append(
                    morphology_pb2.MorphologyRequest(
                        input=types_pb2.ImageSource(image=image), steps=[step]
                    )
                )
            wall, median, _ = timed_unary(stub.Morphology, requests, args.runs, timeout=300)
            print(
                json.dumps(
                    {
                        **TRANSPORT,
                        "impl": "rpc",
                        "workload": name,
                        "backend": args.backend,
                        "median_ms": round(wall * 1e3, 3),
                        "payload_mb": round(len(requests[0].input.image.data) / 1e6, 1),
                        "server_us": median,
                        "runs": args.runs,
                    }
                ),
                flush=True,
            )
        gradient_pyramid_workloads(stub, args, selected)
        if selected("rpc_deform_torus301_3x3x3_normals"):
            deform_workload(stub, args)
        if args.client and selected("rpc_deform_torus301_cpp_client"):
            deform_cpp_client(args.client, server.target, args)
        if selected("rpc_detect_1080p_jpeg"):
            detect_workload(stub, args)
        if selected("rpc_detect_stream_vtest_jpeg"):
            detect_stream_workload(stub, args)
        if selected("rpc_detect_1080p_raw_rgb"):
            detect_raw_workload(stub, args)
        python_client_workloads(server.target, args, selected)  # selects its rows itself
        channel.close()
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
