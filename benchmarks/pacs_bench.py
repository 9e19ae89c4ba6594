#!/usr/bin/env python3
"""Issue 49's end-to-end CLI row: a compressed CT series folder -> its dilation written as a
derived series, timed as `cuimg morphology` runs (process start, reading, the call, writing), on
one cuimg-server (CUDA backend by default):

  today_j2k            the JPEG 2000 series decoded by the client (GDCM, --send_frames=false),
                       raw pixels on the wire, the result written uncompressed (explicit)
  frames_j2k_htj2k     the same series sent as its frames, the result written as HTJ2K
  frames_htj2k_htj2k   the HTJ2K series sent as its frames, the result written as HTJ2K
  today_native         the uncompressed series, raw wire, uncompressed out (no decode anywhere)

Today's path cannot take the HTJ2K series (GDCM 3.0 has no HTJ2K decoder), so the issue's row
compares frames_htj2k_htj2k and frames_j2k_htj2k with today_j2k on the same volume. The series
(default 300 slices of 512x512, unsigned 12-bit CT with noise, rescale intercept -1024) is
written here without pydicom (explicit VR little endian), then compressed by cuimg itself: a
1x1x1 erosion (the identity) written with --output_syntax=htj2k (the server's encoder) and j2k
(OpenJPEG in the client). The dilated results of today's path and of the frames are checked equal
(as .npy) before timing. One JSON line per workload (median of --runs, every run's seconds,
the request's bytes from the CLI's report, the server's timing trailer), then a summary line.
Needs only numpy and the bundle (tests/e2e/server_process.py on PYTHONPATH)."""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import tempfile
import time

import numpy as np

from server_process import ServerProcess

EXPLICIT_LE = "1.2.840.10008.1.2.1"
CT_STORAGE = "1.2.840.10008.5.1.4.1.1.2"
ROOT = "1.2.826.0.1.3680043.10.543.49"  # UIDs of the synthetic series only


def element(group, number, vr, value):
    """One explicit VR little endian element; `value` bytes or str, padded to even length."""
    if isinstance(value, str):
        value = value.encode("ascii")
        if len(value) % 2:
            value += b"\0" if vr == "UI" else b" "
    if vr in ("OB", "OW", "SQ", "UN", "UT"):
        return struct.pack("<HH2sHI", group, number, vr.encode(), 0, len(value)) + value
    return struct.pack("<HH2sH", group, number, vr.encode(), len(value)) + value


def us(value):
    return struct.pack("<H", value)


def write_slice(path, stored, z, study, series, spacing):
    sop = f"{series}.{z + 1}"
    meta = b"".join(
        [
            element(0x0002, 0x0001, "OB", b"\0\1"),
            element(0x0002, 0x0002, "UI", CT_STORAGE),
            element(0x0002, 0x0003, "UI", sop),
            element(0x0002, 0x0010, "UI", EXPLICIT_LE),
            element(0x0002, 0x0012, "UI", ROOT),
        ]
    )
    rows, columns = stored.shape
    data = b"".join(
        [
            element(0x0008, 0x0016, "UI", CT_STORAGE),
            element(0x0008, 0x0018, "UI", sop),
            element(0x0008, 0x0060, "CS", "CT"),
            element(0x0010, 0x0010, "PN", "Bench^Pacs"),
            element(0x0020, 0x000D, "UI", study),
            element(0x0020, 0x000E, "UI", series),
            element(0x0020, 0x0011, "IS", "7"),
            element(0x0020, 0x0013, "IS", str(z + 1)),
            element(0x0020, 0x0032, "DS", f"-180\\-180\\{z * spacing[2]:.2f}"),
            element(0x0020, 0x0037, "DS", "1\\0\\0\\0\\1\\0"),
            element(0x0028, 0x0002, "US", us(1)),
            element(0x0028, 0x0004, "CS", "MONOCHROME2"),
            element(0x0028, 0x0010, "US", us(rows)),
            element(0x0028, 0x0011, "US", us(columns)),
            element(0x0028, 0x0030, "DS", f"{spacing[1]}\\{spacing[0]}"),
            element(0x0028, 0x0100, "US", us(16)),
            element(0x0028, 0x0101, "US", us(12)),
            element(0x0028, 0x0102, "US", us(11)),
            element(0x0028, 0x0103, "US", us(0)),
            element(0x0028, 0x1052, "DS", "-1024"),
            element(0x0028, 0x1053, "DS", "1"),
            element(0x7FE0, 0x0010, "OW", stored.astype("<u2").tobytes()),
        ]
    )
    with open(path, "wb") as f:
        f.write(b"\0" * 128 + b"DICM")
        f.write(element(0x0002, 0x0000, "UL", struct.pack("<I", len(meta))) + meta)
        f.write(data)


def ct_volume(depth, size, seed):
    """Hounsfield units: air, a body ellipse of soft tissue with noise (sigma 20 HU), a bone
    ring, lungs; what a CT reconstruction's noise does to a lossless codec's ratio."""
    rng = np.random.default_rng(seed)
    z, y, x = np.mgrid[0:depth, 0:size, 0:size].astype(np.float32)
    cy, cx = size / 2, size / 2
    r = ((y - cy) / (0.38 * size)) ** 2 + ((x - cx) / (0.45 * size)) ** 2
    hu = np.full((depth, size, size), -1000, np.float32)
    hu[r < 1] = 40 + 10 * np.sin(z[r < 1] / 9)
    hu[(r > 0.85) & (r < 1)] = 700
    lungs = (
        ((y - cy) / (0.22 * size)) ** 2 + ((np.abs(x - cx) - 0.2 * size) / (0.12 * size)) ** 2
    ) < 1
    hu[lungs] = -850
    hu += rng.normal(0, 20, hu.shape).astype(np.float32)
    return np.clip(np.rint(hu), -1024, 3071).astype(np.int16)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--client", required=True)
    parser.add_argument(
        "--frame_decoder", default="", help="cuimg-frame-decoder (default: beside the server)"
    )
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--server_flag", action="append", default=[])
    parser.add_argument("--slices", type=int, default=300)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", default="dilate:rect:3x3x3")
    args = parser.parse_args()
    decoder = args.frame_decoder or os.path.join(
        os.path.dirname(args.server), "cuimg-frame-decoder"
    )
    helper = [f"--frame_decoder={decoder}"] if os.path.exists(decoder) else []
    server = ServerProcess(args.server, f"--backend={args.backend}", *helper, *args.server_flag)
    tmp = tempfile.mkdtemp(prefix="pacs_bench_")
    try:

        def cli(*extra):
            start = time.perf_counter()
            run = subprocess.run(
                [args.client, "morphology", f"--target={server.target}", "--json", *extra],
                capture_output=True,
                text=True,
                timeout=600,
            )
            seconds = time.perf_counter() - start
            if run.returncode != 0:
                raise SystemExit(f"cuimg {extra}: exit {run.returncode}: {run.stderr}")
            return seconds, json.loads(run.stdout)

        native = os.path.join(tmp, "native")
        os.makedirs(native)
        hu = ct_volume(args.slices, args.size, 49)
        study, series = f"{ROOT}.1", f"{ROOT}.2"
        for z in range(args.slices):
            write_slice(
                os.path.join(native, f"ct{z:04d}.dcm"),
                (hu[z] + 1024).astype(np.uint16),
                z,
                study,
                series,
                (0.7, 0.7, 1.25),
            )
        series_dirs = {"native": native}
        for syntax in ("htj2k", "j2k"):
            series_dirs[syntax] = os.path.join(tmp, syntax)
            cli(
                f"--input={native}",
                f"--output={series_dirs[syntax]}",
                "--steps=erode:rect:1x1x1",
                f"--output_syntax={syntax}",
            )

        def folder_bytes(path):
            return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))

        # The two paths give the same dilation before anything is timed.
        today = os.path.join(tmp, "today.npy")
        frames = os.path.join(tmp, "frames.npy")
        cli(
            f"--input={series_dirs['j2k']}",
            f"--output={today}",
            f"--steps={args.steps}",
            "--send_frames=false",
        )
        cli(f"--input={series_dirs['htj2k']}", f"--output={frames}", f"--steps={args.steps}")
        if not np.array_equal(np.load(today), np.load(frames)):
            raise SystemExit("the frames' result differs from today's path")

        workloads = {
            "today_j2k": ("j2k", ["--send_frames=false"]),
            "frames_j2k_htj2k": ("j2k", ["--output_syntax=htj2k"]),
            "frames_htj2k_htj2k": ("htj2k", ["--output_syntax=htj2k"]),
            "today_native": ("native", []),
        }
        results = {}
        for name, (source, extra) in workloads.items():
            runs, report = [], None
            for k in range(args.runs):
                out = os.path.join(tmp, f"out_{name}_{k}")
                seconds, report = cli(
                    f"--input={series_dirs[source]}",
                    f"--output={out}",
                    f"--steps={args.steps}",
                    *extra,
                )
                runs.append(seconds)
                shutil.rmtree(out)
            results[name] = statistics.median(runs)
            print(
                json.dumps(
                    {
                        "workload": f"pacs_cli_{name}",
                        "shape": [args.slices, args.size, args.size],
                        "median_s": round(results[name], 4),
                        "runs_s": [round(s, 4) for s in runs],
                        "sent_bytes": report["sent_bytes"],
                        "input_folder_bytes": folder_bytes(series_dirs[source]),
                        "server_timing": report["server_timing"],
                        "backend": args.backend,
                    }
                ),
                flush=True,
            )
        raw = args.slices * args.size * args.size * 2
        print(
            json.dumps(
                {
                    "workload": "pacs_cli_summary",
                    "raw_bytes": raw,
                    "speedup_htj2k_vs_today_j2k": round(
                        results["today_j2k"] / results["frames_htj2k_htj2k"], 2
                    ),
                    "speedup_j2k_frames_vs_today_j2k": round(
                        results["today_j2k"] / results["frames_j2k_htj2k"], 2
                    ),
                    "htj2k_series_bytes_vs_raw": round(folder_bytes(series_dirs["htj2k"]) / raw, 3),
                    "target": ">= 3x faster than today's path; HTJ2K bytes <= 0.5x raw",
                }
            ),
            flush=True,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        code = server.terminate()
        if code != 0:
            print(server.log())


if __name__ == "__main__":
    main()
