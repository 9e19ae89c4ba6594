#!/usr/bin/env python3
"""Soak: 100,000 mixed requests against one cuimg-server, and whether host or device memory grows
after warm-up. Five `cuimg load` runs go at once, one per RPC (Morphology 640x480 u8 3x3,
Gradient 640x480, a 10-level Pyramid of 640x480, DetectPedestrians on a 768x576 JPEG, Deform of a
101x101 torus), each a fixed number of calls. The server's resident set (/proc/PID/status VmRSS)
and device memory (`cuimg_device_memory_bytes{kind="used"}`, all processes on the device) are
sampled every 0.5 s with the pinned staging pool's bytes (page-locked host memory the server keeps
once allocated, part of its RSS); "after warm-up" is the sample once the first 10% of the run's
time has passed, and the samples at each quarter show whether growth levels off.
One JSON line (impl "soak")."""
import argparse
import json
import os
import subprocess
import threading
import time
import urllib.request

from server_process import ServerProcess

# rpc, calls, extra flags for cuimg load
MIX = [
    ("morphology", 55000, ["--image_size=640x480", "--steps=dilate:rect:3x3"]),
    ("gradient", 15000, ["--image_size=640x480"]),
    ("pyramid", 10000, ["--image_size=640x480", "--levels=10"]),
    ("detect", 10000, []),  # --input added: a JPEG frame
    ("deform", 10000, ["--input=torus:101,101"]),
]


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def scrape(metrics_port):
    """(device memory used, pinned staging bytes held: used + cached), summed over devices."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read()
    device = staging = 0.0
    for line in text.decode().splitlines():
        if line.startswith("cuimg_device_memory_bytes{") and 'kind="used"' in line:
            device += float(line.rsplit(" ", 1)[1])
        elif line.startswith("cuimg_pinned_staging_bytes{"):
            staging += float(line.rsplit(" ", 1)[1])
    return device, staging


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--client", required=True)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every call count")
    parser.add_argument(
        "--server_flag",
        action="append",
        default=[],
        help="a further cuimg-server flag (repeatable)",
    )
    parser.add_argument(
        "--jpeg", default=os.path.join(os.environ.get("CUIMG_DATA", ""), "vtest_00.jpg")
    )
    args = parser.parse_args()
    server = ServerProcess(args.server, f"--backend={args.backend}", *args.server_flag)
    samples = []  # (calls done fraction proxy: seconds, rss, device)
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            samples.append(
                (time.time(), rss_bytes(server.process.pid), *scrape(server.metrics_port))
            )
            stop.wait(0.5)

    try:
        sampler = threading.Thread(target=sample)
        sampler.start()
        start = time.time()
        runs = []
        total_calls = 0
        for rpc, calls, flags in MIX:
            calls = max(1, int(calls * args.scale))
            total_calls += calls
            extra = [f"--input={args.jpeg}"] if rpc == "detect" else []
            runs.append(
                (
                    rpc,
                    calls,
                    subprocess.Popen(
                        [
                            args.client,
                            "load",
                            f"--target={server.target}",
                            f"--rpc={rpc}",
                            f"--requests={calls}",
                            "--concurrency=8",
                            "--warmup=0",
                            "--progress=false",
                            "--json",
                            *flags,
                            *extra,
                        ],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                    ),
                )
            )
        results = {}
        for rpc, calls, process in runs:
            out, err = process.communicate(timeout=900)
            summary = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
            results[rpc] = {
                "calls": calls,
                "ok": summary.get("ok", 0),
                "throughput_rps": summary.get("throughput_rps", 0),
                "exit": process.returncode,
                "stderr": err[-200:] if err else "",
            }
        seconds = time.time() - start
    finally:
        stop.set()
        sampler.join()
        server.terminate()
    # The warm-up sample: 10% of the run's time in (the calls run at a steady rate); then the
    # samples at each further quarter, to tell a plateau (caches filled) from steady growth.
    warm = [s for s in samples if s[0] >= start + 0.1 * seconds] or samples
    after_warmup, end = warm[0], samples[-1]

    def at(fraction):
        return next((s for s in samples if s[0] >= start + fraction * seconds), samples[-1])

    quarters = [at(f) for f in (0.25, 0.5, 0.75, 1.0)]
    print(
        json.dumps(
            {
                "impl": "soak",
                "workload": "mixed_100k",
                "backend": args.backend,
                "calls": total_calls,
                "server_flags": args.server_flag,
                "ok": sum(r["ok"] for r in results.values()),
                "seconds": round(seconds, 1),
                "rss_after_warmup_mb": round(after_warmup[1] / 2**20, 1),
                "rss_end_mb": round(end[1] / 2**20, 1),
                "rss_max_mb": round(max(s[1] for s in warm) / 2**20, 1),
                "device_used_after_warmup_mb": round(after_warmup[2] / 2**20, 1),
                "device_used_end_mb": round(end[2] / 2**20, 1),
                "device_used_max_mb": round(max(s[2] for s in warm) / 2**20, 1),
                "rss_quarters_mb": [round(q[1] / 2**20, 1) for q in quarters],
                "device_used_quarters_mb": [round(q[2] / 2**20, 1) for q in quarters],
                "pinned_staging_quarters_mb": [round(q[3] / 2**20, 1) for q in quarters],
                "per_rpc": results,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
