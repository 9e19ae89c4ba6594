#!/usr/bin/env python3
"""Scale-up across the GPUs of one host: the same GPU-bound Morphology load (1920x1080 u8, 63x63
disk dilated 20 times in one request: ~2 ms of GPU time against ~0.5 ms of copies) against a
cuimg-server that sees one GPU (CUDA_VISIBLE_DEVICES=0) and then all of them; `cuimg load` closed
loop over several channels. One JSON line per device count (impl "multi_gpu") and the ratio."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from server_process import ServerProcess  # noqa: E402


def gpu_count():
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return len([line for line in out.splitlines() if line.strip()])


def run_load(args, visible):
    """`cuimg load`'s JSON summary against a server that sees the GPUs in `visible`."""
    env_before = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = visible
    devices = len(visible.split(","))
    flags = [f"--backend={args.backend}", f"--worker_threads={args.workers}"]
    if args.backend == "cpu":  # a smoke test without GPUs: the CPU backend's scheduling units
        flags.append(f"--cpu_devices={devices}")
    server = ServerProcess(args.server, *flags)
    try:
        load = subprocess.run(
            [
                args.client,
                "load",
                f"--target={server.target}",
                f"--image_size={args.image_size}",
                "--pixel_type=u8",
                f"--steps=dilate:ellipse:63x63:{args.iterations}",
                f"--concurrency={args.concurrency}",
                f"--channels={args.channels}",
                f"--duration={args.seconds}",
                "--warmup=2",
                "--progress=false",
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.terminate()
        if env_before is None:
            del os.environ["CUDA_VISIBLE_DEVICES"]
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = env_before
    if load.returncode != 0:
        raise RuntimeError(f"cuimg load failed ({load.returncode}): {load.stderr[-500:]}")
    return json.loads(load.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--client", required=True)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--channels", type=int, default=4)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--image_size", default="1920x1080")
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--devices", type=int, default=0, help="0: every GPU nvidia-smi lists")
    args = parser.parse_args()
    count = args.devices or gpu_count()
    workload = f"dilate_disk63x{args.iterations}_{args.image_size}_u8"
    results = {}
    for devices in sorted({1, count}):
        visible = ",".join(str(i) for i in range(devices))
        summary = run_load(args, visible)
        results[devices] = summary["throughput_rps"]
        print(
            json.dumps(
                {
                    "impl": "multi_gpu",
                    "workload": workload,
                    "backend": args.backend,
                    "devices": devices,
                    "throughput_rps": summary["throughput_rps"],
                    "p50_ms": summary["latency_ms"]["p50"],
                    "p99_ms": summary["latency_ms"]["p99"],
                    "ok": summary["ok"],
                    "requests": summary["requests"],
                    "concurrency": args.concurrency,
                    "workers": args.workers,
                }
            ),
            flush=True,
        )
    if count > 1:
        print(
            json.dumps(
                {
                    "impl": "multi_gpu",
                    "workload": workload,
                    "scaling": round(results[count] / results[1], 3),
                    "devices": count,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
