#!/usr/bin/env python3
"""CuPy anchor for the gradient and pyramid benchmarks: the same workloads as
gradient_pyramid_bench, written as a CuPy user would (kernel time only, data already on the GPU).

Gradient (length 7, sigma 1.4, cuimg's taps): the u8 image is converted to float32, then
cupyx.scipy.ndimage.correlate1d runs 4 times (gx: derivative along x then smoothing along y; gy:
smoothing along x then derivative along y) with mode='mirror', which is reflect-101 (OpenCV's
BORDER_REFLECT_101, cuimg's border), into preallocated outputs.

Pyramid (31 levels at 1.05 from 1920x1080, cuimg's level sizes): the u8 image is converted to
float32 once, then cupyx.scipy.ndimage.zoom(order=1, mode='nearest', grid_mode=True) makes each
level from the base: half-pixel centres and clamped edges, as OpenCV's INTER_LINEAR downscale.
Outputs are views into one preallocated buffer.

Each workload: 3 warm-up calls (they also compile CuPy's kernels), then 20 calls each timed by a
cupy.cuda.Event pair on the current stream; the median is printed in microseconds as one JSON
line. Inputs rotate among 3 random arrays. After timing, input 0's result is compared in float64
on the host (SciPy's correlate1d, and the OpenCV resize rule in NumPy): "max_abs_diff" in
intensity units of the u8 input, reported, not enforced.

Usage: python3 cupy_gradient.py [--quick]
"""
import argparse
import json
import math

import numpy as np

from stream_hold import hold_cupy

HD = (1080, 1920)  # (y, x)


def gradient_taps(length=7, sigma=1.4):
    """cuimg's taps (kernels/include/cuimg/kernels/gradient_types.h), offsets -r..r."""
    r = (length - 1) // 2
    k = np.arange(-r, r + 1, dtype=np.float64)
    g = np.exp(-k * k / (2 * sigma * sigma))
    smooth = g / g.sum()
    deriv = k * g / (k * k * g).sum()
    return smooth, deriv


def pyramid_sizes(height, width, levels=31, ratio=1.05, min_side=8):
    """cuimg's level list: round half away from zero of size / ratio^i, stop below min_side."""
    sizes = []
    for i in range(levels):
        s = ratio**i
        w, h = math.floor(width / s + 0.5), math.floor(height / s + 0.5)
        if w < min_side or h < min_side:
            break
        sizes.append((h, w))
    return sizes


def resize_taps(src, dst):
    """OpenCV INTER_LINEAR taps along one axis: (i0, i1, f) arrays of length dst."""
    scale = 1.0 / (dst / src)
    f = ((np.arange(dst) + 0.5) * scale - 0.5).astype(np.float32)
    i0 = np.floor(f).astype(np.int64)
    f = f - i0.astype(np.float32)
    low = i0 < 0
    f[low], i0[low] = 0, 0
    high = i0 >= src - 1
    f[high], i0[high] = 0, src - 1
    return i0, np.minimum(i0 + 1, src - 1), f.astype(np.float64)


def resize_reference(img, h, w):
    """The OpenCV rule in float64 (cuimg's reference computes the same in float32)."""
    y0, y1, fy = resize_taps(img.shape[0], h)
    x0, x1, fx = resize_taps(img.shape[1], w)
    a = img.astype(np.float64)
    top = a[y0][:, x0] * (1 - fx) + a[y0][:, x1] * fx
    bottom = a[y1][:, x0] * (1 - fx) + a[y1][:, x1] * fx
    return top * (1 - fy)[:, None] + bottom * fy[:, None]


def random_inputs(cp, shape, n=3):
    return [
        cp.random.randint(0, 256, size=shape, dtype=np.int32).astype(np.uint8) for _ in range(n)
    ]


def time_median_us(cp, fn, inputs, warmup, runs):
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


def gradient_workload(cp, ndi, shape):
    smooth, deriv = gradient_taps()
    w_smooth, w_deriv = cp.asarray(smooth, np.float32), cp.asarray(deriv, np.float32)
    f = cp.empty(shape, np.float32)
    tmp = cp.empty(shape, np.float32)
    gx = cp.empty(shape, np.float32)
    gy = cp.empty(shape, np.float32)

    def fn(x):
        f[...] = x
        ndi.correlate1d(f, w_deriv, axis=1, output=tmp, mode="mirror")
        ndi.correlate1d(tmp, w_smooth, axis=0, output=gx, mode="mirror")
        ndi.correlate1d(f, w_smooth, axis=1, output=tmp, mode="mirror")
        ndi.correlate1d(tmp, w_deriv, axis=0, output=gy, mode="mirror")

    def check(x):
        import scipy.ndimage as sndi

        fn(x)
        a = cp.asnumpy(x).astype(np.float64)
        want_x = sndi.correlate1d(
            sndi.correlate1d(a, deriv, axis=1, mode="mirror"), smooth, axis=0, mode="mirror"
        )
        want_y = sndi.correlate1d(
            sndi.correlate1d(a, smooth, axis=1, mode="mirror"), deriv, axis=0, mode="mirror"
        )
        return max(
            float(np.abs(cp.asnumpy(gx) - want_x).max()),
            float(np.abs(cp.asnumpy(gy) - want_y).max()),
        )

    note = (
        "u8->f32 copy + 4 correlate1d (mode=mirror = reflect-101), 7 taps sigma 1.4, "
        "f32 weights and outputs"
    )
    return fn, check, note


def pyramid_workload(cp, ndi, shape):
    sizes = pyramid_sizes(*shape)
    offsets, total = [], 0
    for h, w in sizes:
        offsets.append(total)
        total += (h * w + 63) // 64 * 64  # 256-byte aligned levels, as cuimg
    out = cp.empty(total, np.float32)
    levels = [out[o : o + h * w].reshape(h, w) for o, (h, w) in zip(offsets, sizes)]
    base = cp.empty(shape, np.float32)

    def fn(x):
        base[...] = x
        for (h, w), level in zip(sizes, levels):
            ndi.zoom(
                base,
                (h / shape[0], w / shape[1]),
                output=level,
                order=1,
                mode="nearest",
                grid_mode=True,
                prefilter=False,
            )

    def check(x):
        fn(x)
        a = cp.asnumpy(x)
        worst = 0.0
        for (h, w), level in zip(sizes, levels):
            worst = max(worst, float(np.abs(cp.asnumpy(level) - resize_reference(a, h, w)).max()))
        return worst

    note = "u8->f32 copy + %d zoom(order=1, mode=nearest, grid_mode=True) from the base" % len(
        sizes
    )
    return fn, check, note


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 warm-up and 5 timed runs")
    args = parser.parse_args()
    warmup, runs = (1, 5) if args.quick else (3, 20)

    import cupy as cp
    import cupyx.scipy.ndimage as ndi

    workloads = [
        ("cupy_gradient_1080p_u8_len7", HD, gradient_workload),
        ("cupy_gradient_640x480_u8_len7", (480, 640), gradient_workload),
        ("cupy_gradient_320x240_u8_len7", (240, 320), gradient_workload),
        ("cupy_pyramid31_1080p_u8_f32", HD, pyramid_workload),
    ]
    for name, shape, make in workloads:
        inputs = None
        try:
            inputs = random_inputs(cp, shape)
            fn, check, note = make(cp, ndi, shape)
            median = time_median_us(cp, fn, inputs, warmup, runs)
            diff = check(inputs[0])
            print(
                json.dumps(
                    {
                        "anchor": "cupy",
                        "workload": name,
                        "median_us": round(median, 2),
                        "runs": runs,
                        "max_abs_diff": float("%.3g" % diff),
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
            inputs = None
            cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
