#!/usr/bin/env python3
"""CuPy anchor for the morphology benchmarks: times cupyx.scipy.ndimage grey morphology on the
same workloads as morphology_bench (kernel time only, data already on the GPU).

Each workload: 3 warm-up calls (they also compile CuPy's kernels), then 20 calls each timed by a
cupy.cuda.Event pair on the current stream; the median is printed in microseconds as one JSON line.
Inputs rotate among 3 random arrays and outputs are preallocated, so neither allocation nor cache
reuse of a single input is measured.

Border handling: mode='constant' with the neutral value (dtype min for dilation, dtype max for
erosion), which is OpenCV's default morphology border.

Usage: python3 cupy_morphology.py [--quick]
"""
import argparse
import json
import math

import numpy as np

from stream_hold import hold_cupy

VOLUME = (300, 512, 512)  # (z, y, x)
HD = (1080, 1920)  # (y, x)


def ellipse(w, h):
    """OpenCV MORPH_ELLIPSE rasterisation (getStructuringElement) as a bool (h, w) array.

    Python's round() rounds half to even, like OpenCV's cvRound.
    """
    m = np.zeros((h, w), dtype=bool)
    r, c = h // 2, w // 2
    inv_r2 = 1.0 / (r * r) if r else 0.0
    for i in range(h):
        dy = i - r
        if abs(dy) <= r:
            dx = int(round(c * math.sqrt((r * r - dy * dy) * inv_r2)))
            m[i, max(c - dx, 0) : min(c + dx + 1, w)] = True
    return m


def ball(radius):
    """(2r+1)^3 bool ball: x^2 + y^2 + z^2 <= r^2."""
    z, y, x = np.mgrid[-radius : radius + 1, -radius : radius + 1, -radius : radius + 1]
    return (x * x + y * y + z * z) <= radius * radius


def random_inputs(cp, shape, dtype, n=3):
    """n independent random arrays over the dtype's full range (drawn as int32, then narrowed)."""
    info = np.iinfo(dtype)
    return [
        cp.random.randint(int(info.min), int(info.max) + 1, size=shape, dtype=np.int32).astype(
            dtype
        )
        for _ in range(n)
    ]


def time_median_us(cp, fn, inputs, warmup, runs):
    """Median GPU time (us) of fn(input) over `runs` event-timed calls after `warmup` calls."""
    for i in range(warmup):
        fn(inputs[i % len(inputs)])
    cp.cuda.get_current_stream().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for i in range(runs):
        x = inputs[(warmup + i) % len(inputs)]
        hold_cupy(cp)
        start.record()
        fn(x)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return float(np.median(times))


def workloads(cp, ndi):
    """(name, shape, dtype, make_fn(out) -> fn(x), note) for every workload."""
    disk9 = cp.asarray(ellipse(9, 9)[None])  # (1, 9, 9): the disk in every z slice
    disk63 = cp.asarray(ellipse(63, 63))
    ball4 = cp.asarray(ball(4))

    def dilate(footprint=None, size=None):
        def make(out, dtype):
            lo = int(np.iinfo(dtype).min)
            return lambda x: ndi.grey_dilation(
                x, size=size, footprint=footprint, output=out, mode="constant", cval=lo
            )

        return make

    def erode(footprint):
        def make(out, dtype):
            hi = int(np.iinfo(dtype).max)
            return lambda x: ndi.grey_erosion(
                x, footprint=footprint, output=out, mode="constant", cval=hi
            )

        return make

    def opening(footprint):
        # cupyx grey_opening is grey_erosion then grey_dilation with ONE cval for both, which
        # cannot be neutral for both; the same two calls with per-step neutral cvals instead.
        def make(out, dtype):
            lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
            tmp = cp.empty_like(out)

            def fn(x):
                ndi.grey_erosion(x, footprint=footprint, output=tmp, mode="constant", cval=hi)
                ndi.grey_dilation(tmp, footprint=footprint, output=out, mode="constant", cval=lo)

            return fn

        return make

    return [
        (
            "cupy_dilate_volume_disk9_u8",
            VOLUME,
            np.uint8,
            dilate(footprint=disk9),
            "grey_dilation footprint (1,9,9) ellipse",
        ),
        (
            "cupy_dilate_volume_disk9_i16",
            VOLUME,
            np.int16,
            dilate(footprint=disk9),
            "grey_dilation footprint (1,9,9) ellipse",
        ),
        (
            "cupy_dilate_2d_disk63_u8",
            HD,
            np.uint8,
            dilate(footprint=disk63),
            "grey_dilation footprint 63x63 ellipse (non-separable footprint kernel)",
        ),
        (
            "cupy_dilate_2d_rect63_u8",
            HD,
            np.uint8,
            dilate(size=(63, 63)),
            "grey_dilation size=(63,63): separable path (two 1-D maximum_filter1d passes)",
        ),
        (
            "cupy_erode_volume_ball4_i16",
            VOLUME,
            np.int16,
            erode(ball4),
            "grey_erosion footprint 9x9x9 ball x2+y2+z2<=16",
        ),
        (
            "cupy_open_volume_disk9_u8",
            VOLUME,
            np.uint8,
            opening(disk9),
            "opening = grey_erosion(cval=255) + grey_dilation(cval=0), footprint (1,9,9) ellipse",
        ),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 warm-up and 5 timed runs")
    args = parser.parse_args()
    warmup, runs = (1, 5) if args.quick else (3, 20)

    import cupy as cp
    import cupyx.scipy.ndimage as ndi

    for name, shape, dtype, make, note in workloads(cp, ndi):
        try:
            inputs = random_inputs(cp, shape, dtype)
            out = cp.empty(shape, dtype=dtype)
            median = time_median_us(cp, make(out, dtype), inputs, warmup, runs)
            print(
                json.dumps(
                    {
                        "anchor": "cupy",
                        "workload": name,
                        "median_us": round(median, 2),
                        "runs": runs,
                        "note": note,
                        "cupy": cp.__version__,
                    }
                ),
                flush=True,
            )
        except Exception as e:  # one failing workload must not stop the others
            print(
                json.dumps(
                    {"anchor": "cupy", "workload": name, "error": f"{type(e).__name__}: {e}"}
                ),
                flush=True,
            )
        finally:
            inputs = out = None
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
