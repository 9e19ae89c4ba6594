"""A fresh server's first calls: where they wait.

Run it as soon as the server answers health. --threads clients (one channel each) call
DetectPedestrians on --input (a JPEG) --waves times in a row, all at once; for each wave it
prints the slowest and fastest latency and the cuimg-timing trailers of the slowest calls, whose
stages (queue, decode, kernel) say what a cold server makes them wait for (BENCHMARKS.md, "a fresh
server's first seconds"). Needs the cuimg Python package (PYTHONPATH) and grpcio.

    python3 benchmarks/first_calls.py --target=127.0.0.1:50051 --input=data/vtest_1080p_00.jpg
"""

import argparse
import threading
import time

from cuimg.client import Client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--input", required=True, help="a JPEG file")
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--show", type=int, default=4, help="slowest calls shown a wave")
    args = parser.parse_args()
    with open(args.input, "rb") as f:
        jpeg = f.read()
    calls = [[None] * args.waves for _ in range(args.threads)]
    start = time.monotonic()

    def run(i: int) -> None:
        client = Client(args.target)
        for wave in range(args.waves):
            t = time.monotonic()
            client.detect(encoded=jpeg)
            calls[i][wave] = (t - start, time.monotonic() - t, client.last_timing)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for wave in range(args.waves):
        done = sorted((c[wave] for c in calls), key=lambda c: -c[1])
        print(f"wave {wave}: latency max {done[0][1]:.3f} s, min {done[-1][1]:.3f} s")
        for began, latency, timing in done[: args.show]:
            print(f"   start {began:.3f} s, latency {latency:.3f} s: {timing}")


if __name__ == "__main__":
    main()
