"""The segmentation steps computed by scikit-image and SciPy: the oracle of
reconstruction_reference_test.cc.

Usage: segmentation_oracle.py DIR. DIR/manifest.json lists the cases; each case's input is
DIR/<name>.in (and DIR/<name>.marker when it has one), raw pixels of its dtype and shape (x
fastest). The oracle writes DIR/<name>.out, and for a single fill_holes step on a 0/max image also
DIR/<name>.scipy (scipy.ndimage.binary_fill_holes as a 0/max image).

Each step is the definition the proto and MorphOp state, computed with
skimage.morphology.reconstruction, plus the documented rules skimage does not have: the marker is
clamped (min(marker, mask) for dilation, max for erosion), and in f32 a NaN mask pixel stays NaN
and blocks propagation while a NaN marker pixel seeds nothing.
"""

import json
import os
import sys

import numpy as np
from scipy import ndimage
from skimage.morphology import reconstruction

RANK = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}


def footprint(ndim, conn):
    return ndimage.generate_binary_structure(ndim, RANK[conn])


def type_max(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


def type_lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def prepared(a, dilate):
    """NaN as the value that never propagates."""
    if a.dtype.kind != "f":
        return a
    worst = type_lowest(a.dtype) if dilate else type_max(a.dtype)
    return np.where(np.isnan(a), a.dtype.type(worst), a)


def recon(marker, mask, dilate, conn):
    m = prepared(marker, dilate)
    g = prepared(mask, dilate)
    seed = np.minimum(m, g) if dilate else np.maximum(m, g)
    out = reconstruction(
        seed, g, method="dilation" if dilate else "erosion", footprint=footprint(mask.ndim, conn)
    )
    out = out.astype(mask.dtype)
    if mask.dtype.kind == "f":
        out = np.where(np.isnan(mask), mask, out)
    return out


def fill_holes_marker(a):
    border = np.zeros(a.shape, bool)
    for axis in range(a.ndim):
        index = [slice(None)] * a.ndim
        index[axis] = 0
        border[tuple(index)] = True
        index[axis] = -1
        border[tuple(index)] = True
    return np.where(border, a, a.dtype.type(type_max(a.dtype)))


def height_marker(a, h, dilate):
    if a.dtype.kind == "f":
        h32 = np.float32(h)
        return (a - h32 if dilate else a + h32).astype(a.dtype)
    v = a.astype(np.float64) + (-h if dilate else h)
    info = np.iinfo(a.dtype)
    return np.clip(np.rint(v), info.min, info.max).astype(a.dtype)


def element_pass(a, fp, erode):
    if erode:
        return ndimage.grey_erosion(a, footprint=fp, mode="constant", cval=type_max(a.dtype))
    return ndimage.grey_dilation(a, footprint=fp, mode="constant", cval=type_lowest(a.dtype))


def run_step(a, marker, step):
    op = step["op"]
    conn = step.get("conn")
    if op == "fill_holes":
        return recon(fill_holes_marker(a), a, False, conn)
    if op in ("reconstruct_dilate", "reconstruct_erode"):
        return recon(marker, a, op == "reconstruct_dilate", conn)
    if op in ("open_rec", "close_rec"):
        fp = np.array(step["footprint"], bool)
        eroded = a
        for _ in range(step["iterations"]):
            eroded = element_pass(eroded, fp, op == "open_rec")
        return recon(eroded, a, op == "open_rec", conn)
    if op in ("hmax", "hmin"):
        dilate = op == "hmax"
        return recon(height_marker(a, float(step["h"]), dilate), a, dilate, conn)
    if op == "threshold":
        d = a.astype(np.float64)
        inside = (d >= float(step["lo"])) & (d <= float(step["hi"]))
        on = 1 if a.dtype.kind == "f" else np.iinfo(a.dtype).max
        return np.where(inside, on, 0).astype(a.dtype)
    if op in ("remove_small", "keep_largest"):
        # The labelling's definitions: components of the non-zero pixels (NaN is background)
        # under the connectivity; kept pixels keep their values, the others become 0.
        fg = (a != 0) & ~(np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool))
        labels, count = ndimage.label(fg, footprint(a.ndim, conn))
        sizes = np.bincount(labels.ravel(), minlength=count + 1)
        if op == "remove_small":
            keep = sizes >= int(step["min_voxels"])
        else:
            keep = np.zeros(count + 1, bool)
            if count > 0:
                keep[1 + int(np.argmax(sizes[1:]))] = True  # ties: the lowest label
        keep[0] = True
        return np.where(keep[labels], a, a.dtype.type(0))
    raise ValueError("unknown step " + op)


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "manifest.json")) as f:
        cases = json.load(f)["cases"]
    for case in cases:
        dtype = np.dtype(case["dtype"])
        shape = tuple(case["shape"])
        base = os.path.join(folder, case["name"])
        a = np.fromfile(base + ".in", dtype).reshape(shape)
        marker = None
        if case.get("marker"):
            marker = np.fromfile(base + ".marker", dtype).reshape(shape)
        image = a
        for step in case["steps"]:
            image = run_step(image, marker, step)
        image.astype(dtype).tofile(base + ".out")
        steps = case["steps"]
        on = type_max(dtype) if dtype.kind != "f" else 1
        if len(steps) == 1 and steps[0]["op"] == "fill_holes" and np.all((a == 0) | (a == on)):
            filled = ndimage.binary_fill_holes(a != 0, footprint(a.ndim, steps[0]["conn"]))
            np.where(filled, on, 0).astype(dtype).tofile(base + ".scipy")


if __name__ == "__main__":
    main()
