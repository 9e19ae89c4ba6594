#!/usr/bin/env python3
"""cuCIM's (and CuPy's) segmentation functions on the inputs cuimg's benchmarks dumped
(`label_bench --dump DIR`, `reconstruction_bench --dump DIR`: DIR/<workload>.in.npy, .out.npy,
.intensity.npy): each anchor timed on the same data (median of 10 runs after 2 warm-ups, CUDA
events around the call, data already on the GPU), and its result compared with cuimg's.

  python3 cucim_segmentation.py DIR [--cpu]

--cpu runs the same calls through NumPy, SciPy and scikit-image (cuCIM's CPU counterparts), to
check this script where there is no GPU. One JSON line per anchor."""
import glob
import json
import math
import os
import sys
import time

import numpy as np

CPU = "--cpu" in sys.argv
if CPU:
    import numpy as xp
    import scipy.ndimage as ndi
    from skimage import measure, morphology

    HAVE_CUCIM, CUCIM_ERROR = True, ""
else:
    import cupy as xp
    import cupyx.scipy.ndimage as ndi

    try:
        from cucim.skimage import measure, morphology

        HAVE_CUCIM, CUCIM_ERROR = True, ""
    except Exception as e:  # the wheel is carried only when the bundle has room
        HAVE_CUCIM, CUCIM_ERROR = False, repr(e)[:200]


def median_ms(fn, runs=10):
    """Median milliseconds of fn() (GPU: CUDA events; CPU: wall clock)."""
    times = []
    for i in range(runs + 2):
        if CPU:
            t0 = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t0) * 1e3
        else:
            start, stop = xp.cuda.Event(), xp.cuda.Event()
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            ms = xp.cuda.get_elapsed_time(start, stop)
        if i >= 2:
            times.append(ms)
    return float(np.median(times))


def structure(ndim, connectivity):
    """The neighbourhood of cuimg's connectivity (4/8 in 2D, 6/18/26 in 3D) as SciPy's rank."""
    rank = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}[connectivity]
    return ndi.generate_binary_structure(ndim, rank)


def connectivity_of(name, ndim):
    for c in (26, 18, 8, 6, 4):
        if f"conn{c}" in name:
            return c
    return 4 if ndim == 2 else 6  # the segmentation steps' default: face connectivity


def opencv_ellipse(size):
    """cv::getStructuringElement(MORPH_ELLIPSE, (size, size)) for odd size: cuimg's ellipse."""
    r = c = size // 2
    fp = np.zeros((size, size), bool)
    for i in range(size):
        dy = i - r
        dx = int(round(c * math.sqrt((r * r - dy * dy) / (r * r)))) if r else 0
        fp[i, max(c - dx, 0) : min(c + dx + 1, size)] = True
    return fp


def emit(**fields):
    print(json.dumps(fields), flush=True)


def reconstruction_anchor(name, inp, out):
    ndim = inp.ndim
    conn = connectivity_of(name, ndim)
    fp = structure(ndim, conn)
    img = xp.asarray(inp)
    info = np.iinfo(inp.dtype) if inp.dtype.kind in "iu" else np.finfo(inp.dtype)
    if name.startswith("fill_holes"):
        seed = xp.full_like(img, info.max)
        border = [slice(None)] * ndim
        for axis in range(ndim):
            for end in (0, -1):
                index = list(border)
                index[axis] = end
                seed[tuple(index)] = img[tuple(index)]
        method = "erosion"
    elif name.startswith("open_rec"):
        ellipse = xp.asarray(opencv_ellipse(9))
        # cuimg's neutral border: outside pixels never win the erosion.
        seed = ndi.grey_erosion(img, footprint=ellipse, mode="constant", cval=int(info.max))
        method = "dilation"
    elif name.startswith("hmax"):
        h = int(name.split("_")[0][len("hmax") :])
        seed = xp.maximum(img.astype(np.int32) - h, int(info.min)).astype(img.dtype)
        method = "dilation"
    else:
        return
    expected = xp.asarray(out)
    if "spiral" in name or "maze" in name:
        # cuCIM's reconstruction and CuPy's binary_fill_holes iterate once per pixel of the
        # geodesic path (up to about a million here): the C++ bench's cucim_class_loop rows
        # measure that loop with a pass cap instead.
        emit(impl="cucim_reconstruction", workload=name, skipped="path-length bound")
        return
    if HAVE_CUCIM:
        result = morphology.reconstruction(seed, img, method=method, footprint=fp)
        equal = bool((result.astype(img.dtype) == expected).all())
        ms = median_ms(lambda: morphology.reconstruction(seed, img, method=method, footprint=fp))
        emit(
            impl="cucim_reconstruction",
            workload=name,
            median_ms=round(ms, 3),
            equals_cuimg=equal,
            connectivity=conn,
        )
    else:
        emit(impl="cucim_reconstruction", workload=name, skipped=CUCIM_ERROR)
    if name.startswith("fill_holes") and len(np.unique(inp)) <= 2:
        fg = img != 0
        result = ndi.binary_fill_holes(fg, structure=fp)
        filled = xp.where(result, int(inp.max()), 0).astype(img.dtype)
        ms = median_ms(lambda: ndi.binary_fill_holes(fg, structure=fp))
        emit(
            impl="cupyx_binary_fill_holes" if not CPU else "scipy_binary_fill_holes",
            workload=name,
            median_ms=round(ms, 3),
            equals_cuimg=bool((filled == expected).all()),
            connectivity=conn,
        )


def same_partition(a, b):
    """True when two label images give the same regions (whatever their numbers)."""
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    if ((a == 0) != (b == 0)).any():
        return False
    pairs = np.unique(np.stack([a[a != 0], b[b != 0]]), axis=1)
    return len(np.unique(pairs[0])) == pairs.shape[1] == len(np.unique(pairs[1]))


def label_anchor(name, inp, out, intensity):
    ndim = inp.ndim
    conn = connectivity_of(name, ndim)
    mask = xp.asarray(inp) != 0
    fp = structure(ndim, conn)
    if name.startswith("label"):
        labels, n = ndi.label(mask, structure=fp)
        ms = median_ms(lambda: ndi.label(mask, structure=fp))
        host = labels.get() if not CPU else labels
        emit(
            impl="cupyx_label" if not CPU else "scipy_label",
            workload=name,
            median_ms=round(ms, 3),
            regions=int(n),
            equals_cuimg=bool((host == out).all()),
            same_regions=same_partition(host, out),
            connectivity=conn,
        )
        if HAVE_CUCIM:
            rank = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}[conn]
            ms = median_ms(lambda: measure.label(mask, connectivity=rank))
            emit(impl="cucim_label", workload=name, median_ms=round(ms, 3), connectivity=conn)
            props = ["area", "bbox", "centroid"]
            extra = {}
            if intensity is not None:
                props += ["intensity_min", "intensity_max", "intensity_mean"]
                extra["intensity_image"] = xp.asarray(intensity)
            ms = median_ms(
                lambda: measure.regionprops_table(labels, properties=props, **extra), runs=3
            )
            emit(
                impl="cucim_regionprops_table",
                workload=name,
                median_ms=round(ms, 3),
                properties=props,
                regions=int(n),
            )
    elif name.startswith("fill_holes"):
        reconstruction_anchor(name, inp, out)


def main():
    folder = [a for a in sys.argv[1:] if not a.startswith("--")][0]
    for path in sorted(glob.glob(os.path.join(folder, "*.in.npy"))):
        name = os.path.basename(path)[: -len(".in.npy")]
        inp = np.load(path)
        out = np.load(path.replace(".in.npy", ".out.npy"))
        ipath = path.replace(".in.npy", ".intensity.npy")
        intensity = np.load(ipath) if os.path.exists(ipath) else None
        if name.startswith(("label", "remove_small", "keep_largest")) or out.dtype == np.uint32:
            label_anchor(name, inp, out, intensity)
        else:
            reconstruction_anchor(name, inp, out)


if __name__ == "__main__":
    main()
