#!/usr/bin/env python3
"""PyTorch anchor for the morphology benchmarks: F.max_pool2d (stride 1, 'same' padding) as a
rectangular grey dilation, on the workloads where it applies.

max_pool2d has no uint8 CUDA kernel, so inputs are float32 (converted once, outside timing); it
pads with -inf, the neutral border for dilation. Each workload: warm-up, then 20 calls each timed
by a torch.cuda.Event pair; the median in microseconds is printed as one JSON line. Inputs rotate
among 3 random tensors.

Usage: python3 torch_morphology.py [--quick]
"""
import argparse
import json
import statistics

from stream_hold import hold_torch

# name, input shape (N, C, H, W), square kernel size
WORKLOADS = [
    ("torch_maxpool_2d_rect63_f32", (1, 1, 1080, 1920), 63),
    ("torch_maxpool_2d_3x3_640x480_f32", (1, 1, 480, 640), 3),
    # The 512x512x300 volume as 300 independent slices: a per-slice 9x9 rect in one call.
    ("torch_maxpool_volume_rect9_f32", (300, 1, 512, 512), 9),
]


def time_median_us(torch, fn, inputs, warmup, runs):
    """Median GPU time (us) of fn(input) over `runs` event-timed calls after `warmup` calls."""
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(runs):
        x = inputs[(warmup + i) % len(inputs)]
        hold_torch(torch)
        start.record()
        fn(x)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 warm-up and 5 timed runs")
    args = parser.parse_args()
    warmup, runs = (1, 5) if args.quick else (3, 20)

    import torch
    import torch.nn.functional as F

    for name, shape, k in WORKLOADS:
        try:
            # Random u8 values converted once to f32 (the conversion is not timed).
            inputs = [
                torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda").float()
                for _ in range(3)
            ]
            with torch.inference_mode():
                median = time_median_us(
                    torch,
                    lambda x: F.max_pool2d(x, kernel_size=k, stride=1, padding=k // 2),
                    inputs,
                    warmup,
                    runs,
                )
            print(
                json.dumps(
                    {
                        "anchor": "torch",
                        "workload": name,
                        "median_us": round(median, 2),
                        "runs": runs,
                        "note": f"F.max_pool2d kernel {k} stride 1 padding {k // 2}, "
                        f"input {list(shape)} f32",
                        "torch": torch.__version__,
                    }
                ),
                flush=True,
            )
        except Exception as e:  # one failing workload must not stop the others
            print(
                json.dumps(
                    {"anchor": "torch", "workload": name, "error": f"{type(e).__name__}: {e}"}
                ),
                flush=True,
            )
        finally:
            inputs = None
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
