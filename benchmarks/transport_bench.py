#!/usr/bin/env python3
"""Runs the transport comparison (benchmarks/echo/transport_bench.cc) under each transport setting
tried: an echo server (benchmarks/echo/echo_server.cc) and a cuimg-server started side by side with
the same settings (cuimg-server with --shared_memory, for the driver's shared-memory row), the C++
driver against both. Settings: gRPC's defaults; a 16 MiB HTTP/2 lookahead on both ends; a Unix
socket; polling workers (--worker_spin_us); warm CPUs (--warm_cpus, both servers). Prints the
driver's JSON lines (impl "transport"), or one
{"impl": "transport", "error": ...} line per setting that could not run. --client_cpus splits the
host's cores: the driver runs on those CPUs, both servers on the others (the split is printed as
{"impl": "transport", "cpu_split": ...}). --lock_order_checks runs all three processes with
Abseil's lock-order checks on, as Debian's Abseil has them by default
(cuimg/common/lock_order_checks.h), and labels its lines "<setting>_lockchecks".
Usage: transport_bench.py --server BIN --echo_server BIN --driver BIN [--backend cuda]
                          [--client_cpus N] [--lock_order_checks] [-- ARGS]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from server_process import ServerProcess

SPIN = "--worker_spin_us=2000"
# Every CPU kept from idling while a worker polls (cuimg-server) or for 2 ms after a call (the
# echo server, so that the comparison stays fair): on this host's VM a thread woken on a CPU idle
# past ~200 us starts 8-20 us later (BENCHMARKS.md, "Halted vCPUs").
WARM = "--warm_cpus=-1"
SETTINGS = [
    # label, lookahead bytes, listen over a Unix socket, further cuimg-server flags[, echo flags]
    ("default", 0, False, []),
    ("lookahead16m", 16 << 20, False, []),
    ("unix_lookahead16m", 16 << 20, True, []),
    # An idle worker polls 2 ms for the next request instead of sleeping (one core at most).
    ("default_spin", 0, False, [SPIN]),
    ("default_spin_warm", 0, False, [SPIN, WARM], [WARM]),
    ("unix_lookahead16m_spin", 16 << 20, True, [SPIN]),
    # The same with warm CPUs: every row's client is on the server's host.
    ("unix_lookahead16m_spin_warm", 16 << 20, True, [SPIN, WARM], [WARM]),
    # ... and 16 workers (streams) instead of 4, for the 64-in-flight load.
    ("default_spin_w16", 0, False, [SPIN, "--worker_threads=16"]),
    # 6 and 8 polling workers once gRPC's locks were cheaper (run 173: fewer calls than 4, and a
    # worse p99).
    ("default_spin_w6", 0, False, [SPIN, "--worker_threads=6"]),
    ("default_spin_w8", 0, False, [SPIN, "--worker_threads=8"]),
    # Workers that yield their core while waiting for the GPU (--cuda_sync=yield), 4 and 8 of
    # them (run 86: 8 yielding workers served more calls/s than 4 spinning ones, at a worse p99).
    ("default_yield", 0, False, [SPIN, "--cuda_sync=yield"]),
    ("default_yield_w8", 0, False, [SPIN, "--cuda_sync=yield", "--worker_threads=8"]),
    # 8 sleeping workers: once the pixels left protobuf's copies (wire_pixels.h) a call needs
    # less of a worker, so more of them might shorten the queue's tail (run 113: they did not,
    # 0.77x the echo at 64 in flight against 1.00x with 4).
    ("default_w8", 0, False, ["--worker_threads=8"]),
]


def start_echo(binary, lookahead, listen, workdir, flags):
    port_file = os.path.join(workdir, "echo_port.json")
    log = open(os.path.join(workdir, "echo.log"), "w")
    process = subprocess.Popen(
        [
            binary,
            f"--listen_address={listen}",
            f"--port_file={port_file}",
            f"--http2_lookahead_bytes={lookahead}",
            *flags,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 20
    while not os.path.exists(port_file):
        if process.poll() is not None or time.time() > deadline:
            process.kill()
            raise RuntimeError("echo_server did not start")
        time.sleep(0.05)
    with open(port_file) as f:
        return process, json.load(f)["grpc"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--echo_server", required=True)
    parser.add_argument("--driver", required=True)
    parser.add_argument("--backend", default="cuda")
    parser.add_argument(
        "--settings",
        default="default,lookahead16m,unix_lookahead16m,default_spin," "default_spin_warm",
    )
    parser.add_argument(
        "--client_cpus",
        type=int,
        default=0,
        help="CPUs for the driver, the rest for the servers (0: all share all)",
    )
    parser.add_argument(
        "--lock_order_checks",
        action="store_true",
        help="Abseil's lock-order checks on in both servers and the driver",
    )
    parser.add_argument("driver_args", nargs="*")
    args = parser.parse_args()
    # Children inherit the CPU mask of the process that starts them (with every thread they make).
    everything = sorted(os.sched_getaffinity(0))
    server_cpus = client_cpus = set(everything)
    if args.client_cpus:
        if not 0 < args.client_cpus < len(everything):
            parser.error(f"--client_cpus must be in 1..{len(everything) - 1}")
        client_cpus = set(everything[-args.client_cpus :])
        server_cpus = set(everything[: -args.client_cpus])
        print(
            json.dumps(
                {
                    "impl": "transport",
                    "cpu_split": {"servers": sorted(server_cpus), "driver": sorted(client_cpus)},
                }
            )
        )
    checks = ["--lock_order_checks"] if args.lock_order_checks else []
    wanted = set(args.settings.split(","))
    status = 0
    for label, lookahead, unix, flags, *echo_flags in (s for s in SETTINGS if s[0] in wanted):
        echo_flags = echo_flags[0] if echo_flags else []
        with tempfile.TemporaryDirectory() as d:
            echo = server = None
            try:
                cuimg_listen = f"unix:{d}/cuimg.sock" if unix else "127.0.0.1:0"
                echo_listen = f"unix:{d}/echo.sock" if unix else "127.0.0.1:0"
                os.sched_setaffinity(0, server_cpus)
                server = ServerProcess(
                    args.server,
                    f"--backend={args.backend}",
                    f"--http2_lookahead_bytes={lookahead}",
                    "--shared_memory",
                    *flags,
                    *checks,
                    listen=cuimg_listen,
                )
                echo, echo_port = start_echo(
                    args.echo_server, lookahead, echo_listen, d, echo_flags + checks
                )
                cuimg_target = cuimg_listen if unix else server.target
                echo_target = echo_listen if unix else f"127.0.0.1:{echo_port}"
                os.sched_setaffinity(0, client_cpus)
                run = subprocess.run(
                    [
                        args.driver,
                        f"--echo_target={echo_target}",
                        f"--cuimg_target={cuimg_target}",
                        f"--label={label}{'_lockchecks' if checks else ''}",
                        f"--http2_lookahead_bytes={lookahead}",
                        *checks,
                        *args.driver_args,
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    timeout=400,
                )
                sys.stdout.write(run.stdout)
                if run.returncode != 0:
                    status = 1
                    print(
                        json.dumps(
                            {
                                "impl": "transport",
                                "settings": label,
                                "error": f"driver exit {run.returncode}: {run.stderr[-300:]}",
                            }
                        )
                    )
            except Exception as e:  # one setting failing must not hide the others
                status = 1
                print(json.dumps({"impl": "transport", "settings": label, "error": str(e)[:300]}))
            finally:
                os.sched_setaffinity(0, everything)
                if echo is not None:
                    echo.terminate()
                    echo.wait(timeout=20)
                if server is not None:
                    server.terminate()
            sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
