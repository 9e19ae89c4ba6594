"""What the detection suites send: the OpenCV sample files (CUIMG_DATA), U8 arrays as inline
Images, and a sample image as the server itself decodes it."""
import os

import numpy as np

from cuimg.v1 import pyramid_pb2, types_pb2

DATA = os.environ.get("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data")


def read(name):
    """A file of the data folder (`name` may be a path)."""
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def image_proto(array):
    """U8 pixels (H, W) or (H, W, C) as an inline Image."""
    h, w = array.shape[:2]
    channels = 1 if array.ndim == 2 else array.shape[2]
    return types_pb2.Image(
        pixel_type=types_pb2.PIXEL_TYPE_U8,
        width=w,
        height=h,
        channels=channels,
        data=np.ascontiguousarray(array, np.uint8).tobytes(),
    )


def server_decoded_gray(stub, name):
    """The gray sample file `name` as `stub`'s server decodes it (Pyramid's level 0 is a copy of
    the input), so that raw-pixel requests carry exactly what the encoded request decodes to."""
    level0 = (
        stub.Pyramid(
            pyramid_pb2.PyramidRequest(
                input=types_pb2.ImageSource(encoded=read(name)),
                levels=1,
                output_type=types_pb2.PIXEL_TYPE_U8,
            ),
            timeout=60,
        )
        .levels[0]
        .result.image
    )
    return np.frombuffer(level0.data, np.uint8).reshape(level0.height, level0.width)
