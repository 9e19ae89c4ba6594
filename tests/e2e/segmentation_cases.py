"""Inputs and oracles for the segmentation steps and Label over the wire: random masks and grey
images, adversarial ones (a spiral and a maze whose geodesic paths run through most of the
image), and what SciPy and scikit-image compute for them (the definitions cuimg must equal bit
for bit)."""
import math

import numpy as np
from scipy import ndimage

from cuimg.v1 import types_pb2

# (wire pixel type, NumPy dtype) of every type the segmentation steps take.
TYPES = [
    (types_pb2.PIXEL_TYPE_U8, np.uint8),
    (types_pb2.PIXEL_TYPE_U16, np.uint16),
    (types_pb2.PIXEL_TYPE_I16, np.int16),
    (types_pb2.PIXEL_TYPE_U32, np.uint32),
    (types_pb2.PIXEL_TYPE_F32, np.float32),
]
PIXEL_TYPE = {np.dtype(d): p for p, d in TYPES}
CONNECTIVITY = {
    4: types_pb2.CONNECTIVITY_4,
    8: types_pb2.CONNECTIVITY_8,
    6: types_pb2.CONNECTIVITY_6,
    18: types_pb2.CONNECTIVITY_18,
    26: types_pb2.CONNECTIVITY_26,
}


def structure(ndim, connectivity):
    """SciPy's structuring element of a connectivity (None: face, 4 or 6)."""
    rank = {None: 1, 4: 1, 6: 1, 8: 2, 18: 2, 26: 3}[connectivity]
    return ndimage.generate_binary_structure(ndim, rank)


def top(dtype):
    """The type's maximum (1.0 for f32: threshold's foreground value)."""
    return np.float32(1.0) if np.dtype(dtype) == np.float32 else np.iinfo(dtype).max


def image_proto(array):
    depth = array.shape[0] if array.ndim == 3 else 0
    return types_pb2.Image(
        pixel_type=PIXEL_TYPE[array.dtype],
        width=array.shape[-1],
        height=array.shape[-2],
        depth=depth,
        data=np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes(),
    )


def from_proto(image, dtype):
    shape = (
        (image.depth, image.height, image.width) if image.depth > 1 else (image.height, image.width)
    )
    return np.frombuffer(image.data, np.dtype(dtype).newbyteorder("<")).reshape(shape).astype(dtype)


def random_values(rng, shape, dtype, low=0, high=50):
    if np.dtype(dtype) == np.float32:
        return rng.uniform(low, high, size=shape).astype(np.float32)
    return rng.integers(low, high, size=shape, endpoint=True).astype(dtype)


def random_mask(rng, shape, dtype, density):
    """0 and the type's maximum, `density` of the pixels foreground."""
    return np.where(rng.random(shape) < density, top(dtype), 0).astype(dtype)


def spiral(height, width):
    """A one-pixel corridor winding inwards from the top-left corner with one-pixel walls: its
    geodesic path runs through about half the image. 1 on the corridor, 0 on the walls (u8)."""
    mask = np.zeros((height, width), np.uint8)
    y, x, dy, dx = 0, 0, 0, 1
    mask[0, 0] = 1

    def free(ny, nx, dy, dx):
        if not (0 <= ny < height and 0 <= nx < width) or mask[ny, nx]:
            return False
        ay, ax = ny + dy, nx + dx  # keep a wall before the corridor already carved
        return not (0 <= ay < height and 0 <= ax < width) or not mask[ay, ax]

    while True:
        if not free(y + dy, x + dx, dy, dx):
            dy, dx = dx, -dy  # turn right
            if not free(y + dy, x + dx, dy, dx):
                return mask
        y, x = y + dy, x + dx
        mask[y, x] = 1


def serpentine(height, width):
    """Rows joined alternately at their right and left ends: one path through every row."""
    mask = np.zeros((height, width), np.uint8)
    mask[::2] = 1
    for row in range(1, height, 2):
        mask[row, width - 1 if (row // 2) % 2 == 0 else 0] = 1
    return mask


def maze(rng, cells_y, cells_x):
    """A perfect maze (randomized depth-first search): corridors 1, walls 0, (2 * cells + 1) on
    each axis; between any two corridor pixels there is exactly one path."""
    h, w = 2 * cells_y + 1, 2 * cells_x + 1
    mask = np.zeros((h, w), np.uint8)
    seen = np.zeros((cells_y, cells_x), bool)
    stack = [(0, 0)]
    seen[0, 0] = True
    mask[1, 1] = 1
    while stack:
        cy, cx = stack[-1]
        options = [
            (cy + dy, cx + dx)
            for dy, dx in ((0, 1), (1, 0), (0, -1), (-1, 0))
            if 0 <= cy + dy < cells_y and 0 <= cx + dx < cells_x and not seen[cy + dy, cx + dx]
        ]
        if not options:
            stack.pop()
            continue
        ny, nx = options[rng.integers(len(options))]
        seen[ny, nx] = True
        mask[2 * ny + 1, 2 * nx + 1] = 1
        mask[cy + ny + 1, cx + nx + 1] = 1
        stack.append((ny, nx))
    return mask


def reconstruct(seed, mask, method, connectivity):
    """skimage's reconstruction with the marker clamped first (cuimg accepts any marker)."""
    from skimage.morphology import reconstruction  # the oracles only (not the GPU comparator)

    clamped = np.minimum(seed, mask) if method == "dilation" else np.maximum(seed, mask)
    out = reconstruction(
        clamped.astype(np.float64),
        mask.astype(np.float64),
        method=method,
        footprint=structure(mask.ndim, connectivity),
    )
    return out.astype(mask.dtype)


def fill_holes(image, connectivity):
    """Reconstruction by erosion from the border: the marker is the image on its border and the
    type's maximum inside."""
    seed = np.full(
        image.shape, np.inf if image.dtype == np.float32 else np.iinfo(image.dtype).max, np.float64
    )
    border = np.ones(image.shape, bool)
    border[tuple(slice(1, -1) for _ in image.shape)] = False
    seed[border] = image[border]
    from skimage.morphology import reconstruction

    out = reconstruction(
        seed,
        image.astype(np.float64),
        method="erosion",
        footprint=structure(image.ndim, connectivity),
    )
    return out.astype(image.dtype)


def saturated(values, dtype):
    if np.dtype(dtype) == np.float32:
        return values.astype(np.float32)
    info = np.iinfo(dtype)
    return np.clip(np.rint(values), info.min, info.max).astype(dtype)


def hmax(image, h, connectivity):
    marker = (
        saturated(image.astype(np.float64) - h, image.dtype)
        if image.dtype != np.float32
        else (image - np.float32(h)).astype(np.float32)
    )
    return reconstruct(marker, image, "dilation", connectivity)


def hmin(image, h, connectivity):
    marker = (
        saturated(image.astype(np.float64) + h, image.dtype)
        if image.dtype != np.float32
        else (image + np.float32(h)).astype(np.float32)
    )
    return reconstruct(marker, image, "erosion", connectivity)


def open_rec(image, size, connectivity):
    """Erosion by a size-wide box (cuimg's neutral border is SciPy's 'nearest' for a centred
    window), then reconstruction by dilation under the image."""
    eroded = ndimage.grey_erosion(image, size=size, mode="nearest")
    return reconstruct(eroded, image, "dilation", connectivity)


def close_rec(image, size, connectivity):
    dilated = ndimage.grey_dilation(image, size=size, mode="nearest")
    return reconstruct(dilated, image, "erosion", connectivity)


def foreground(image, threshold=None):
    if threshold is not None:
        return (image >= threshold[0]) & (image <= threshold[1])
    return (image != 0) & ~np.isnan(image) if image.dtype == np.float32 else image != 0


def label(image, connectivity, threshold=None, min_voxels=0):
    """scipy.ndimage.label's labels with components of fewer than min_voxels voxels dropped and
    the rest renumbered in order."""
    labels, n = ndimage.label(foreground(image, threshold), structure(image.ndim, connectivity))
    if min_voxels > 0 and n > 0:
        counts = np.bincount(labels.ravel(), minlength=n + 1)
        keep = counts >= min_voxels
        keep[0] = False
        renumber = np.zeros(n + 1, np.int64)
        renumber[keep] = np.arange(1, keep.sum() + 1)
        labels = renumber[labels]
    return labels.astype(np.uint32)


def remove_small(image, min_voxels, connectivity):
    labels = label(image, connectivity)
    counts = np.bincount(labels.ravel())
    small = counts < min_voxels
    small[0] = True
    return np.where(small[labels], 0, image).astype(image.dtype)


def keep_largest(image, connectivity):
    labels = label(image, connectivity)
    counts = np.bincount(labels.ravel())
    if len(counts) <= 1:
        return image.copy()
    counts[0] = 0
    largest = int(np.argmax(counts))  # the first of equals: the lowest label
    return np.where(labels == largest, image, 0).astype(image.dtype)


def region_rows(labels, intensity=None):
    """Per region k (label k + 1): voxels, box begin/end and centroid in (x, y, z) index order, and
    with an intensity image min, max, mean and the exactly rounded sum (math.fsum)."""
    n = int(labels.max()) if labels.size else 0
    coords = np.indices(labels.shape)[::-1]  # x, y(, z)
    flat = labels.ravel().astype(np.int64)
    voxels = np.bincount(flat, minlength=n + 1)[1:]
    rows = {"voxels": voxels, "bbox_begin": [], "bbox_end": [], "centroid": []}
    for axis in range(3):
        if axis < labels.ndim:
            c = coords[axis].ravel()
            sums = np.bincount(flat, weights=c.astype(np.float64), minlength=n + 1)[1:]
            lo = np.full(n + 1, np.iinfo(np.int64).max)
            hi = np.full(n + 1, -1)
            np.minimum.at(lo, flat, c)
            np.maximum.at(hi, flat, c)
            rows["bbox_begin"].append(lo[1:])
            rows["bbox_end"].append(hi[1:] + 1)
            rows["centroid"].append(sums / voxels)
        else:
            rows["bbox_begin"].append(np.zeros(n, np.int64))
            rows["bbox_end"].append(np.ones(n, np.int64))
            rows["centroid"].append(np.zeros(n))
    for key in ("bbox_begin", "bbox_end", "centroid"):
        rows[key] = np.stack(rows[key], axis=1).ravel()
    if intensity is not None:
        values = intensity.ravel().astype(np.float64)
        order = np.argsort(flat, kind="stable")
        bounds = np.searchsorted(flat[order], np.arange(1, n + 2))
        mins, maxs, sums = [], [], []
        for k in range(n):
            v = values[order[bounds[k] : bounds[k + 1]]]
            finite = v[~np.isnan(v)]
            mins.append(finite.min() if finite.size else math.nan)
            maxs.append(finite.max() if finite.size else math.nan)
            sums.append(math.nan if np.isnan(v).any() else math.fsum(v))
        rows["min"], rows["max"], rows["sum"] = np.array(mins), np.array(maxs), np.array(sums)
        rows["mean"] = rows["sum"] / voxels
    return rows
