"""The labelling references (label_reference_tool) equal SciPy bit for bit.

Labels equal scipy.ndimage.label's (raster order of first voxels), with min_voxels applied as
"drop, then renumber"; boxes equal find_objects; centroids are float(sum of coordinates) /
float(voxels); intensity sums are the exact sums rounded once (math.fsum for f32, Python ints
for integers); remove_small and keep_largest follow label's sizes; hole filling equals
binary_fill_holes with the connectivity's structure; marker seeding equals binary_propagation.
Every pixel type, 2D and 3D, every connectivity, random masks of several densities and
adversarial ones (spirals and mazes whose paths are as long as the image, checkerboards, one
component, none, single pixels). Cases are generated here from a fixed seed; nothing is stored.

Usage: label_reference_scipy_test.py PATH_TO_label_reference_tool
"""

import math
import subprocess
import sys

import numpy as np
from scipy import ndimage as ndi

TYPES = {"u8": np.uint8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32, "f32": np.float32}
CONNECTIVITIES_2D = {4: 1, 8: 2}
CONNECTIVITIES_3D = {6: 1, 18: 2, 26: 3}


def structure(shape, connectivity):
    rank = len(shape)
    table = CONNECTIVITIES_2D if rank == 2 else CONNECTIVITIES_3D
    return ndi.generate_binary_structure(rank, table[connectivity])


class Tool:
    def __init__(self, path):
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, op, image, connectivity, param=0, lo=None, extra=None, fill=0.0):
        shape = image.shape if image.ndim == 3 else (1,) + image.shape
        type_name = next(k for k, v in TYPES.items() if v == image.dtype)
        extra_name = "-" if extra is None else next(k for k, v in TYPES.items() if v == extra.dtype)
        lo_text, hi_text = ("-", "-") if lo is None else (repr(float(lo[0])), repr(float(lo[1])))
        header = (
            f"{op} {type_name} {shape[2]} {shape[1]} {shape[0]} {connectivity} {param} "
            f"{lo_text} {hi_text} {extra_name} {fill!r}\n"
        )
        self.proc.stdin.write(header.encode())
        self.proc.stdin.write(np.ascontiguousarray(image).tobytes())
        if extra is not None:
            self.proc.stdin.write(np.ascontiguousarray(extra).tobytes())
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().decode().split()
        if answer[0] != "ok":
            raise AssertionError(f"{op} failed: {' '.join(answer)}")
        out_dtype = np.uint32 if op == "label" else image.dtype
        count = image.size * np.dtype(out_dtype).itemsize
        out = np.frombuffer(self.proc.stdout.read(count), out_dtype).reshape(image.shape)
        rows = int(answer[1])
        stats = np.frombuffer(self.proc.stdout.read(rows * 14 * 8), np.float64).reshape(rows, 14)
        return out, stats

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait() == 0


# ---- Images ------------------------------------------------------------------------------------


def spiral(h, w):
    """A 1-pixel line spiralling inwards, rings 2 apart: the line and the gap between its rings
    are each one path about h * w / 2 pixels long."""
    a = np.zeros((h, w), bool)
    directions = ((0, 1), (1, 0), (0, -1), (-1, 0))
    y = x = d = turns = 0
    a[0, 0] = True
    while turns < 2:
        dy, dx = directions[d]
        ny, nx, fy, fx = y + dy, x + dx, y + 2 * dy, x + 2 * dx
        free = 0 <= ny < h and 0 <= nx < w and not a[ny, nx]
        if free and not (0 <= fy < h and 0 <= fx < w and a[fy, fx]):
            y, x, turns = ny, nx, 0
            a[y, x] = True
        else:
            d, turns = (d + 1) % 4, turns + 1
    return a


def maze(h, w, rng):
    """A perfect maze (random depth-first spanning tree on odd cells): one corridor tree."""
    a = np.zeros((h, w), bool)
    cells_y, cells_x = (h + 1) // 2, (w + 1) // 2
    seen = np.zeros((cells_y, cells_x), bool)
    stack = [(0, 0)]
    seen[0, 0] = True
    a[0, 0] = True
    while stack:
        y, x = stack[-1]
        options = [
            (y + dy, x + dx)
            for dy, dx in ((0, 1), (1, 0), (0, -1), (-1, 0))
            if 0 <= y + dy < cells_y and 0 <= x + dx < cells_x and not seen[y + dy, x + dx]
        ]
        if not options:
            stack.pop()
            continue
        ny, nx = options[rng.integers(len(options))]
        seen[ny, nx] = True
        a[2 * ny, 2 * nx] = True
        a[y + ny, x + nx] = True
        stack.append((ny, nx))
    return a


def masks_2d(rng):
    yield "1x1 on", np.ones((1, 1), bool)
    yield "1x1 off", np.zeros((1, 1), bool)
    yield "row", rng.random((1, 37)) < 0.5
    yield "column", rng.random((29, 1)) < 0.5
    yield "all", np.ones((17, 23), bool)
    yield "none", np.zeros((17, 23), bool)
    yield "checkerboard", (np.indices((19, 21)).sum(0) % 2) == 0
    yield "single pixels", (np.indices((15, 16)) % 2 == 0).all(0)
    yield "spiral", spiral(41, 39)
    yield "spiral negative", ~spiral(40, 42)
    yield "maze", maze(39, 45, rng)
    yield "maze negative", ~maze(44, 38, rng)
    for density in (0.1, 0.3, 0.5, 0.59, 0.7, 0.9):
        yield f"noise {density}", rng.random((rng.integers(20, 70), rng.integers(20, 70))) < density


def masks_3d(rng):
    yield "1x1x2", np.array([[[1]], [[0]]], bool)
    yield "all", np.ones((5, 6, 7), bool)
    yield "checkerboard", (np.indices((7, 8, 9)).sum(0) % 2) == 0
    yield "corners", (np.indices((8, 7, 6)) % 2 == 0).all(0)
    yield "spiral stack", np.stack(
        [spiral(21, 23)] * 3 + [np.zeros((21, 23), bool)] + [~spiral(21, 23)]
    )
    yield "maze stack", np.stack([maze(21, 19, rng), ~maze(21, 19, rng), maze(21, 19, rng)])
    for density in (0.1, 0.25, 0.4, 0.6, 0.85):
        shape = tuple(int(v) for v in rng.integers(3, 20, size=3))
        yield f"noise {density}", rng.random(shape) < density


def values_for(mask, dtype, rng):
    """An image of `dtype` that is non-zero exactly on `mask` (f32: NaN marks some background)."""
    info = np.iinfo(dtype) if dtype != np.float32 else None
    if info is not None:
        v = rng.integers(
            max(info.min, -1000), min(info.max, 5000) + 1, size=mask.shape, dtype=np.int64
        )
        v[v == 0] = 1
        v = v.astype(dtype)
        v[rng.random(mask.shape) < 0.05] = info.max
        v[~mask] = 0
        return v
    v = rng.normal(0, 100, size=mask.shape).astype(np.float32)
    v[v == 0] = 1
    v[~mask] = 0
    bg = ~mask & (rng.random(mask.shape) < 0.2)
    v[bg] = np.nan
    return v


def intensity_for(shape, dtype, rng):
    if dtype == np.float32:
        v = (rng.normal(0, 1, size=shape) * 10.0 ** rng.integers(-30, 30, size=shape)).astype(
            np.float32
        )
        special = rng.random(shape)
        v[special < 0.01] = np.inf
        v[(special >= 0.01) & (special < 0.02)] = -np.inf
        v[(special >= 0.02) & (special < 0.03)] = np.nan
        v[(special >= 0.03) & (special < 0.04)] = -0.0
        v[(special >= 0.04) & (special < 0.05)] = 0.0
        return v
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=np.int64).astype(dtype)


# ---- Expectations ------------------------------------------------------------------------------


def scipy_labels(mask, connectivity, min_voxels=0):
    labels, n = ndi.label(mask, structure(mask.shape, connectivity))
    if min_voxels > 0 and n > 0:
        sizes = np.bincount(labels.ravel(), minlength=n + 1)
        keep = sizes >= min_voxels
        keep[0] = False
        renumber = np.zeros(n + 1, np.int64)
        renumber[keep] = np.arange(1, keep.sum() + 1)
        labels = renumber[labels]
        n = int(keep.sum())
    return labels.astype(np.uint32), n


def ordered_min_max(values):
    """Min and max with NaN never winning and -0 below +0 (NaN if only NaN)."""
    v = values[~np.isnan(values)] if values.dtype == np.float32 else values
    if v.size == 0:
        return math.nan, math.nan
    if v.dtype == np.float32:
        bits = v.view(np.uint32)
        keys = np.where(bits & 0x80000000, ~bits, bits | 0x80000000).astype(np.uint32)
        return float(v[np.argmin(keys)]), float(v[np.argmax(keys)])
    return float(v.min()), float(v.max())


def exact_sum(values):
    if values.dtype != np.float32:
        return float(sum(int(x) for x in values))
    if np.isnan(values).any() or (np.isposinf(values).any() and np.isneginf(values).any()):
        return math.nan
    if np.isposinf(values).any():
        return math.inf
    if np.isneginf(values).any():
        return -math.inf
    return math.fsum(float(x) for x in values)


def expected_stats(labels, n, intensity):
    shape3 = labels.shape if labels.ndim == 3 else (1,) + labels.shape
    lab = labels.reshape(shape3)
    rows = np.zeros((n, 14))
    if n == 0:
        return rows
    flat = lab.ravel()
    z, y, x = np.indices(shape3)
    counts = np.bincount(flat, minlength=n + 1)[1:]
    rows[:, 0] = counts
    for axis, coords in enumerate((x, y, z)):
        sums = np.bincount(flat, weights=coords.ravel(), minlength=n + 1)[1:]
        rows[:, 7 + axis] = sums / counts.astype(np.float64)
    for k, box in enumerate(ndi.find_objects(lab)):
        rows[k, 1:4] = [box[2].start, box[1].start, box[0].start]
        rows[k, 4:7] = [box[2].stop, box[1].stop, box[0].stop]
    if intensity is not None:
        order = np.argsort(flat, kind="stable")
        groups = np.split(intensity.ravel()[order], np.cumsum(np.bincount(flat, minlength=n + 1)))
        for k in range(n):
            values = groups[k + 1]
            rows[k, 10], rows[k, 11] = ordered_min_max(values)
            rows[k, 12] = exact_sum(values)
            rows[k, 13] = rows[k, 12] / float(counts[k])
    return rows


def same(a, b):
    """Equal as float64 bits, NaN equal to NaN."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def reconstruct(seed, s, conn):
    return ndi.binary_propagation(seed & s, structure(s.shape, conn), mask=s)


def border(shape):
    b = np.zeros(shape, bool)
    for axis in range(len(shape)):
        index = [slice(None)] * len(shape)
        index[axis] = 0
        b[tuple(index)] = True
        index[axis] = -1
        b[tuple(index)] = True
    return b


# ---- The cases ---------------------------------------------------------------------------------


def check_case(tool, what, mask, conn, dtype, rng):
    failures = []
    image = values_for(mask, dtype, rng)
    fg = mask
    min_voxels = int(rng.choice([0, 0, 2, 5]))
    labels, n = scipy_labels(fg, conn, min_voxels)
    intensity = None
    if rng.random() < 0.7:
        intensity = intensity_for(mask.shape, TYPES[rng.choice(list(TYPES))], rng)
    got, stats = tool.run("label", image, conn, min_voxels, extra=intensity)
    if not np.array_equal(got, labels):
        failures.append("labels")
    elif not same(stats, expected_stats(labels, n, intensity)):
        failures.append("stats")
    # A threshold range instead of non-zero.
    lo, hi = sorted(float(v) for v in image[fg][:2]) if fg.sum() >= 2 else (1.0, 2.0)
    in_range = (image >= lo) & (image <= hi)
    got, _ = tool.run("label", image, conn, 0, lo=(lo, hi))
    if not np.array_equal(got, scipy_labels(in_range, conn)[0]):
        failures.append("threshold labels")
    # remove_small and keep_largest.
    plain, count = ndi.label(fg, structure(mask.shape, conn))
    sizes = np.bincount(plain.ravel(), minlength=count + 1)
    small = int(rng.integers(1, 6))
    keep = sizes >= small
    keep[0] = True
    want = np.where(keep[plain], image, 0).astype(image.dtype)
    got, _ = tool.run("remove_small", image, conn, small)
    if not same(got, want):
        failures.append("remove_small")
    if count > 0:
        largest = 1 + int(np.argmax(sizes[1:]))
        want = np.where((plain == largest) | (plain == 0), image, 0).astype(image.dtype)
    else:
        want = image
    got, _ = tool.run("keep_largest", image, conn)
    if not same(got, want):
        failures.append("keep_largest")
    # Hole filling of a 0/v mask, and marker-seeded reconstruction.
    v = np.array(image[fg][0] if fg.any() else 1, dtype=image.dtype)
    two_level = np.where(fg, v, 0).astype(image.dtype)
    filled = ndi.binary_fill_holes(fg, structure(mask.shape, conn))
    got, _ = tool.run("fill", two_level, conn, 1, lo=(0, 0), fill=float(v))
    if not same(got, np.where(filled, v, 0).astype(image.dtype)):
        failures.append("fill_holes")
    marker = intensity_for(mask.shape, np.float32, rng)
    seeds = (marker != 0) & ~np.isnan(marker)
    kept = reconstruct(seeds, fg, conn) | reconstruct(border(fg.shape), fg, conn)
    got, _ = tool.run("fill", image, conn, 3, extra=marker, fill=-7.0)
    fill_value = np.array(-7, np.float64).astype(image.dtype) if dtype != np.float32 else -7.0
    if dtype in (np.uint8, np.uint16, np.uint32):
        fill_value = 0  # saturated
    want = np.where(fg & ~kept, fill_value, image).astype(image.dtype)
    if not same(got, want):
        failures.append("fill by marker and border")
    return [f"{what} conn {conn} {np.dtype(dtype).name}: {f}" for f in failures]


def main():
    tool = Tool(sys.argv[1])
    rng = np.random.default_rng(48)
    failures = []
    cases = 0
    for what, mask in masks_2d(rng):
        for conn in CONNECTIVITIES_2D:
            for dtype in TYPES.values():
                failures += check_case(tool, what, mask, conn, dtype, rng)
                cases += 1
    for what, mask in masks_3d(rng):
        for conn in CONNECTIVITIES_3D:
            for dtype in TYPES.values():
                failures += check_case(tool, what, mask, conn, dtype, rng)
                cases += 1
    tool.close()
    for f in failures[:40]:
        print("FAIL", f)
    print(f"{cases} cases, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
