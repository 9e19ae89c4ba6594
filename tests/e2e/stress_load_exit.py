"""Stress for `cuimg load`'s shutdown: many short load runs over mutual TLS against one CPU-backend
server, several at a time and beside CPU burners, counting how each run ended (exit code, signal,
gRPC assertion text). Not a ctest (minutes long); run by hand when touching client teardown:

  CUIMG_SERVER=build/server/cuimg-server CUIMG_CLIENT=build/client/cuimg \
    PYTHONPATH=tests/e2e python3 tests/e2e/stress_load_exit.py --runs=200 --parallel=4 --burners=2

Exit 0 when every run exited 0."""
import argparse
import collections
import concurrent.futures
import json
import multiprocessing
import os
import subprocess
import sys

from server_process import ServerProcess
from tls_material import TlsMaterial


def burn(stop):
    x = 0
    while not stop.is_set():
        x = (x * 1103515245 + 12345) % 2147483648


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--burners", type=int, default=2, help="busy-looping processes")
    parser.add_argument("--client", default=os.environ.get("CUIMG_CLIENT"))
    parser.add_argument("--server", default=os.environ.get("CUIMG_SERVER"))
    parser.add_argument(
        "load_args",
        nargs="*",
        default=[
            "--duration=0.3",
            "--warmup=0",
            "--concurrency=4",
            "--channels=2",
            "--image_size=32x32",
        ],
    )
    a = parser.parse_args()

    tls = TlsMaterial(clients=("alice",))
    server = ServerProcess(a.server, "--backend=cpu", *tls.server_flags(mtls=True))
    key, cert = tls.client["alice"]
    command = [
        a.client,
        f"--target={server.target}",
        f"--tls_ca_file={tls.ca_cert}",
        f"--tls_cert_file={cert}",
        f"--tls_key_file={key}",
        "--timeout=20",
        "load",
        "--progress=false",
        "--json",
        *a.load_args,
    ]
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=burn, args=(stop,)) for _ in range(a.burners)]
    for b in burners:
        b.start()

    def one(_):
        run = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if run.returncode == 0:
            return "exit 0", ""
        what = f"signal {-run.returncode}" if run.returncode < 0 else f"exit {run.returncode}"
        try:  # exit 1 with a summary: some calls failed; which codes
            codes = json.loads(run.stdout)["codes"]
            what += " codes " + ",".join(sorted(c for c in codes if c != "OK"))
        except (ValueError, KeyError):
            pass
        if "ref_counted" in run.stderr:
            what += " (ref_counted assertion)"
        return what, run.stderr.strip().splitlines()[-1:] if run.stderr.strip() else ""

    outcomes = collections.Counter()
    examples = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(a.parallel) as pool:
            for what, tail in pool.map(one, range(a.runs)):
                outcomes[what] += 1
                examples.setdefault(what, tail)
    finally:
        stop.set()
        for b in burners:
            b.join()
        server.terminate()
        tls.close()
    for what, n in sorted(outcomes.items()):
        print(f"{n:5d}  {what}  {examples[what] if what != 'exit 0' else ''}")
    return 0 if outcomes["exit 0"] == a.runs else 1


if __name__ == "__main__":
    sys.exit(main())
