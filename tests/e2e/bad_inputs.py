"""Builders of malformed and hostile inputs for the bad-request and limit tests: PNG files made
byte by byte (valid, truncated, decompression bombs, lying headers) and a small torus mesh."""
import struct
import zlib

import numpy as np


def _chunk(kind, payload):
    return (
        struct.pack(">I", len(payload))
        + kind
        + payload
        + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)
    )


def png(width, height, color_type=0, bit_depth=8, rows=None, compress_level=9):
    """A PNG with the given header. `rows`: the raw scanline bytes (each row starting with its
    filter byte); None makes all-zero rows of the right size (a decompression bomb when large)."""
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    if rows is None:
        row = (width * channels * bit_depth + 7) // 8 + 1
        compressor = zlib.compressobj(compress_level)
        data = b""
        block = bytes(row * 256)
        for start in range(0, height, 256):
            data += compressor.compress(block[: row * min(256, height - start)])
        data += compressor.flush()
    else:
        data = zlib.compress(rows, compress_level)
    header = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", data)
        + _chunk(b"IEND", b"")
    )


def png_header_only(width, height, color_type=0, bit_depth=8):
    """Signature and IHDR claiming a size, and no pixel data at all."""
    header = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)


def gray_png(array):
    rows = b"".join(b"\x00" + bytes(r) for r in np.asarray(array, np.uint8))
    return png(array.shape[1], array.shape[0], rows=rows)


def torus(n=8, m=6, R=1.0, r=0.35):
    u = 2 * np.pi * np.arange(n) / n
    v = 2 * np.pi * np.arange(m) / m
    uu, vv = np.meshgrid(u, v, indexing="ij")
    pos = (
        np.stack(
            [(R + r * np.cos(vv)) * np.cos(uu), (R + r * np.cos(vv)) * np.sin(uu), r * np.sin(vv)],
            axis=-1,
        )
        .reshape(-1, 3)
        .astype(np.float32)
    )
    tris = []
    for i in range(n):
        for j in range(m):
            a, b = i * m + j, ((i + 1) % n) * m + j
            c, d = ((i + 1) % n) * m + (j + 1) % m, i * m + (j + 1) % m
            tris += [(a, b, c), (a, c, d)]
    return pos, np.array(tris, dtype=np.uint32)
