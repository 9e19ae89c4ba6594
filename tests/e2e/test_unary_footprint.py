"""What one big unary request costs the server in memory (issue #34: at most 2.2x the request's
pixel bytes): the issue's 300x512x512 int16 volume (157 MB) dilated in one Morphology call from
grpcio (a 3x3 box: the memory does not depend on the element), the server's peak resident memory
(VmHWM) read after it, less its resident memory before. The server's periodic trim is set to an
hour, so the figure does not depend on when that runs: the received bytes must be handed back as
the pixels are copied out of them (wire_pixels.h, malloc_policy.h's TrimAfterFree), else they
stay resident beside the input's and the result's buffers (2.96x on the CPU backend). On the CUDA
backend the result is also written into the input's pinned buffer
(Backend::MorphologyWritesOverInput); the result is checked against SciPy. Needs CUIMG_SERVER
and the generated stubs on PYTHONPATH; CUIMG_BACKEND picks the backend (default cpu)."""
import os
import time
import unittest

import numpy as np
from scipy import ndimage

from cuimg.v1 import imaging_service_pb2_grpc, morphology_pb2, types_pb2
from server_process import ServerProcess, status_kb

SERVER = os.environ["CUIMG_SERVER"]
BACKEND = os.environ.get("CUIMG_BACKEND", "cpu")
TARGET_X_PIXELS = 2.2


def dilate(stub, volume):
    """One unary 3x3 dilation of an int16 volume; the result as an array."""
    depth, height, width = volume.shape
    image = types_pb2.Image(
        pixel_type=types_pb2.PIXEL_TYPE_I16,
        width=width,
        height=height,
        depth=depth,
        data=volume.tobytes(),
    )
    step = morphology_pb2.MorphologyStep(
        op=morphology_pb2.MORPHOLOGY_OP_DILATE,
        element=morphology_pb2.StructuringElement(
            shape=morphology_pb2.ELEMENT_SHAPE_RECT, width=3, height=3
        ),
    )
    request = morphology_pb2.MorphologyRequest(
        input=types_pb2.ImageSource(image=image), steps=[step]
    )
    reply = stub.Morphology(request, timeout=300)
    return np.frombuffer(reply.result.image.data, dtype=np.int16).reshape(volume.shape)


@unittest.skipUnless(os.path.exists("/proc/self/status"), "reads /proc")
class UnaryFootprint(unittest.TestCase):
    def test_a_volumes_unary_call_holds_at_most_2_2x_its_pixels(self):
        rng = np.random.default_rng(34)
        volume = rng.integers(-32768, 32767, size=(300, 512, 512), dtype=np.int16, endpoint=True)
        server = ServerProcess(SERVER, f"--backend={BACKEND}", "--malloc_trim_interval_ms=3600000")
        try:
            with server.channel() as channel:
                stub = imaging_service_pb2_grpc.ImagingStub(channel)
                # A small call first: what the first call of any size sets up is not the volume's.
                dilate(stub, volume[:2, :64, :64].copy())
                time.sleep(0.2)
                pid = server.process.pid
                before_kb = status_kb(pid, "VmRSS")
                result = dilate(stub, volume)
                peak_kb = status_kb(pid, "VmHWM")
        finally:
            self.assertEqual(server.terminate(), 0, server.log())
        x_pixels = (peak_kb - before_kb) * 1024 / volume.nbytes
        self.assertLessEqual(
            x_pixels,
            TARGET_X_PIXELS,
            f"peak {peak_kb} kB, {before_kb} kB before the call: {x_pixels:.2f}x the pixels",
        )
        expected = ndimage.grey_dilation(volume, size=(1, 3, 3), mode="nearest")
        self.assertTrue(np.array_equal(result, expected))


if __name__ == "__main__":
    unittest.main()
