#!/usr/bin/env python3
"""A well-behaved client beside a mixed attack (issue 38): does it keep its latency, and does the
server keep its memory?

One cuimg-server (shared memory on). A well-behaved client calls Morphology (a `--good_size`
u8 image, 3x3 dilate, one call in flight) for `--baseline_seconds` alone, then for
`--attack_seconds` while these run beside it, each on its own threads:
- stalled uploads: Upload streams that declare a 32768x32768 F32 image (4 GiB) or a 64 MiB one,
  send one 1 KiB chunk and fall silent (up to `--stalled_uploads` open at once, reopened when the
  server ends one);
- expired deadlines: heavy Morphology chains (`--heavy_size` u8, 8 steps of a 63x63 ellipse) with
  a 50 ms deadline, and the issue's over-cap chain (64 steps of 1023x1023 on 4096x4096), back to
  back;
- shrinking regions: a shared-memory object registered, a heavy Morphology reading it and writing
  into it, and the object truncated to one page while the request runs;
- log injection and refusal floods: handles and model names holding newlines, quotes and forged
  logfmt, and 1 MiB handles;
- DetectPedestrians with hit_threshold = -1e9 on a 1024x1024 frame.
The good client runs in a process of its own (the attackers' threads would hold its GIL). The
server's resident set (/proc/PID/status VmRSS) is sampled every 0.25 s. One JSON line: the
good client's p50/p99 alone and under attack and their ratio, its errors, the RSS peak, the
attacks' status codes, whether the server lived, and the log's line count and longest line."""
import argparse
import json
import multiprocessing
import os
import statistics
import threading
import time

import grpc
import numpy as np

from cuimg.v1 import (
    detection_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    resident_pb2,
    shared_memory_pb2,
    types_pb2,
)
from server_process import ServerProcess

ATTACKS = (
    "stalled_uploads",
    "expired_deadlines",
    "shrinking_regions",
    "log_injection",
    "quadratic_grouping",
)
FORGED = '\nts=0 level=error rpc=Release identity=admin code=OK msg="forged" "quote'


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def u8_image(side, rng):
    return types_pb2.Image(
        pixel_type=types_pb2.PIXEL_TYPE_U8,
        width=side,
        height=side,
        data=rng.integers(0, 256, side * side, dtype=np.uint8).tobytes(),
    )


def step(shape, w, h, op=morphology_pb2.MORPHOLOGY_OP_DILATE):
    return morphology_pb2.MorphologyStep(
        op=op, element=morphology_pb2.StructuringElement(shape=shape, width=w, height=h)
    )


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Codes:
    """Status codes seen per attack, counted across threads."""

    def __init__(self):
        self._lock = threading.Lock()
        self.counts = {}

    def add(self, attack, code):
        with self._lock:
            per = self.counts.setdefault(attack, {})
            per[code] = per.get(code, 0) + 1


def call_code(fn):
    try:
        fn()
        return "OK"
    except grpc.RpcError as e:
        return e.code().name


def good_client(target, side, stop, results):
    """The well-behaved client, in a process of its own: the attackers' threads hold this
    process's GIL while they build and parse messages, which would otherwise count in its
    latencies. Sends ([(start time, seconds)], [status code names]) through `results`."""
    stub = imaging_service_pb2_grpc.ImagingStub(grpc.insecure_channel(target))
    request = morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(image=u8_image(side, np.random.default_rng(1))),
        steps=[step(morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3)],
    )
    latencies, errors = [], []
    while not stop.is_set():
        start = time.perf_counter()
        try:
            stub.Morphology(request, timeout=30)
            latencies.append((time.time(), time.perf_counter() - start))
        except grpc.RpcError as e:
            errors.append(e.code().name)
    results.send((latencies, errors))


def stalled_uploads(channel_target, stop, codes, limit):
    """Keeps `limit` Upload streams open, each stalled after its first 1 KiB."""

    def one(declared_side, pixel_type):
        channel = grpc.insecure_channel(channel_target)
        stub = imaging_service_pb2_grpc.ImagingStub(channel)
        release = threading.Event()

        def messages():
            yield resident_pb2.UploadRequest(
                image=types_pb2.Image(
                    pixel_type=pixel_type,
                    width=declared_side,
                    height=declared_side,
                    data=b"\0" * 1024,
                )
            )
            while not release.wait(0.2) and not stop.is_set():
                pass

        future = stub.Upload.future(messages(), timeout=None)
        while not stop.is_set() and not future.done():
            time.sleep(0.1)
        release.set()
        if future.done():  # the server ended the stalled stream
            codes.add("stalled_upload", call_code(future.result))
        else:  # still held open when the attack stopped
            future.cancel()
            codes.add("stalled_upload", "STILL_OPEN_AT_END")
        channel.close()

    def keep(declared_side, pixel_type):
        while not stop.is_set():
            one(declared_side, pixel_type)

    threads = [threading.Thread(target=keep, args=(32768, types_pb2.PIXEL_TYPE_F32))]
    threads += [
        threading.Thread(target=keep, args=(8192, types_pb2.PIXEL_TYPE_U8))
        for _ in range(max(0, limit - 1))
    ]
    return threads


def expired_deadlines(stub, stop, codes, heavy_side, rng):
    heavy = morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(image=u8_image(heavy_side, rng)),
        steps=[step(morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 63, 63)] * 8,
    )
    over_cap = morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(
            image=types_pb2.Image(
                pixel_type=types_pb2.PIXEL_TYPE_U8, width=4096, height=4096, data=bytes(4096 * 4096)
            )
        ),
        steps=[step(morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 1023, 1023)] * 64,
    )

    def run():
        while not stop.is_set():
            codes.add("expired_deadline", call_code(lambda: stub.Morphology(heavy, timeout=0.05)))
            codes.add("over_cap", call_code(lambda: stub.Morphology(over_cap, timeout=0.05)))

    return [threading.Thread(target=run)]


def shrinking_regions(stub, stop, codes, heavy_side, rng):
    from shm_objects import ShmObject  # POSIX objects as a local client makes them

    def run():
        size = heavy_side * heavy_side
        while not stop.is_set():
            shm = ShmObject(2 * size, prefix="cuimg-attack")
            try:
                shm.buf[:size] = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
                try:
                    region = stub.RegisterSharedMemory(
                        shared_memory_pb2.RegisterSharedMemoryRequest(
                            key=shm.key, byte_size=2 * size
                        ),
                        timeout=5,
                    ).region
                except grpc.RpcError as e:
                    codes.add("shrink_register", e.code().name)
                    time.sleep(0.2)
                    continue
                shape = types_pb2.Image(
                    pixel_type=types_pb2.PIXEL_TYPE_U8, width=heavy_side, height=heavy_side
                )
                request = morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(
                        shared_memory=types_pb2.SharedMemoryImage(
                            region=region.handle, offset=0, image=shape
                        )
                    ),
                    steps=[step(morphology_pb2.ELEMENT_SHAPE_ELLIPSE, 63, 63)] * 4,
                    output=types_pb2.OutputOptions(
                        shared_memory=types_pb2.SharedMemoryTarget(
                            region=region.handle, offset=size
                        )
                    ),
                )
                future = stub.Morphology.future(request, timeout=10)
                time.sleep(0.02)
                os.ftruncate(shm.shm._fd, 4096)
                try:
                    future.result()
                    codes.add("shrink", "OK")
                except grpc.RpcError as e:
                    codes.add("shrink", e.code().name)
                codes.add(
                    "shrink_unregister",
                    call_code(
                        lambda: stub.UnregisterSharedMemory(
                            shared_memory_pb2.UnregisterSharedMemoryRequest(handle=region.handle),
                            timeout=5,
                        )
                    ),
                )
            finally:
                shm.close()

    return [threading.Thread(target=run)]


def log_injection(stub, stop, codes, rng):
    big = "h" * (1 << 20)
    frame = u8_image(64, rng)

    def run():
        while not stop.is_set():
            codes.add(
                "inject_handle",
                call_code(
                    lambda: stub.Release(
                        resident_pb2.ReleaseRequest(handle="x" + FORGED), timeout=5
                    )
                ),
            )
            codes.add(
                "inject_model",
                call_code(
                    lambda: stub.DetectPedestrians(
                        detection_pb2.DetectPedestriansRequest(
                            input=types_pb2.ImageSource(image=frame), model="m" + FORGED
                        ),
                        timeout=5,
                    )
                ),
            )
            codes.add(
                "huge_handle",
                call_code(
                    lambda: stub.Morphology(
                        morphology_pb2.MorphologyRequest(
                            input=types_pb2.ImageSource(handle=big),
                            steps=[step(morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3)],
                        ),
                        timeout=5,
                    )
                ),
            )

    return [threading.Thread(target=run)]


def quadratic_grouping(stub, stop, codes, rng):
    frame = u8_image(1024, rng)
    request = detection_pb2.DetectPedestriansRequest(
        input=types_pb2.ImageSource(image=frame), hit_threshold=-1e9
    )

    def run():
        while not stop.is_set():
            codes.add("hit_flood", call_code(lambda: stub.DetectPedestrians(request, timeout=2)))

    return [threading.Thread(target=run)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--baseline_seconds", type=float, default=15)
    parser.add_argument("--attack_seconds", type=float, default=60)
    parser.add_argument("--good_size", type=int, default=256)
    parser.add_argument("--heavy_size", type=int, default=1024)
    parser.add_argument("--stalled_uploads", type=int, default=8)
    parser.add_argument(
        "--attacks",
        default=",".join(ATTACKS),
        help="comma-separated subset of "
        + ",".join(ATTACKS)
        + " (to find which one costs the good client its latency)",
    )
    parser.add_argument(
        "--server_flag",
        action="append",
        default=[],
        help="a further cuimg-server flag (repeatable)",
    )
    args = parser.parse_args()
    rng = np.random.default_rng(38)
    server = ServerProcess(
        args.server, f"--backend={args.backend}", "--shared_memory", *args.server_flag
    )
    result = {
        "impl": "attack",
        "backend": args.backend,
        "attacks": args.attacks,
        "good_size": args.good_size,
        "heavy_size": args.heavy_size,
        "attack_seconds": args.attack_seconds,
    }
    rss = []
    sampling = threading.Event()

    def sample():
        while not sampling.is_set() and server.process.poll() is None:
            rss.append((time.time(), rss_bytes(server.process.pid)))
            sampling.wait(0.25)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        channel = grpc.insecure_channel(server.target)
        stub = imaging_service_pb2_grpc.ImagingStub(channel)
        good_channel = grpc.insecure_channel(server.target)
        good_stub = imaging_service_pb2_grpc.ImagingStub(good_channel)
        image = u8_image(args.good_size, rng)

        spawn = multiprocessing.get_context("spawn")  # a fresh interpreter: no shared gRPC state
        stop_good = spawn.Event()
        receive, send = spawn.Pipe(duplex=False)
        good = spawn.Process(
            target=good_client, args=(server.target, args.good_size, stop_good, send)
        )
        good.start()
        time.sleep(args.baseline_seconds)
        attack_start = time.time()
        baseline_rss_peak = max(b for _, b in rss)

        stop = threading.Event()
        codes = Codes()
        start_attack = {
            "stalled_uploads": lambda: stalled_uploads(
                server.target, stop, codes, args.stalled_uploads
            ),
            "expired_deadlines": lambda: expired_deadlines(stub, stop, codes, args.heavy_size, rng),
            "shrinking_regions": lambda: shrinking_regions(stub, stop, codes, args.heavy_size, rng),
            "log_injection": lambda: log_injection(stub, stop, codes, rng),
            "quadratic_grouping": lambda: quadratic_grouping(stub, stop, codes, rng),
        }
        attackers = []
        for name in args.attacks.split(","):
            attackers += start_attack[name]()
        for t in attackers:
            t.start()
        time.sleep(args.attack_seconds)
        stop.set()
        attack_end = time.time()
        stop_good.set()
        latencies, errors = receive.recv()
        good.join()
        for t in attackers:
            t.join(timeout=30)

        alone = [s for t, s in latencies if t < attack_start]
        attacked = [s for t, s in latencies if attack_start <= t <= attack_end]
        result.update(
            {
                "good_calls_alone": len(alone),
                "good_calls_attacked": len(attacked),
                "good_errors": {code: errors.count(code) for code in set(errors)},
                "p50_alone_ms": statistics.median(alone) * 1e3 if alone else None,
                "p99_alone_ms": percentile(alone, 0.99) * 1e3,
                "p50_attacked_ms": statistics.median(attacked) * 1e3 if attacked else None,
                "p99_attacked_ms": percentile(attacked, 0.99) * 1e3,
                "attack_codes": codes.counts,
                "rss_before_attack_mib": baseline_rss_peak / 2**20,
                "rss_peak_mib": max(b for _, b in rss) / 2**20,
                "rss_end_mib": rss[-1][1] / 2**20,
            }
        )
        result["p99_ratio"] = result["p99_attacked_ms"] / result["p99_alone_ms"]
        result["server_alive"] = server.process.poll() is None
        # The server must still answer after the attack ends.
        result["after_attack"] = call_code(
            lambda: good_stub.Morphology(
                morphology_pb2.MorphologyRequest(
                    input=types_pb2.ImageSource(image=image),
                    steps=[step(morphology_pb2.ELEMENT_SHAPE_RECT, 3, 3)],
                ),
                timeout=30,
            )
        )
    finally:
        sampling.set()
        sampler.join()
        result["exit_code"] = (
            server.terminate(timeout=60)
            if server.process.poll() is None
            else server.process.returncode
        )
        lines = server.log().splitlines()
        result["log_lines"] = len(lines)
        result["log_longest_line"] = max((len(line) for line in lines), default=0)
        result["log_forged_lines"] = sum(
            1 for line in lines if 'msg="forged"' in line and line.startswith("ts=0")
        )
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
