"""The Client class: one channel, typed helpers per RPC, NumPy in and out.

Arrays: (H, W) images, (D, H, W) volumes, (H, W, C) colour images for detection; dtypes uint8,
uint16, int16, float32 (others are refused, never converted silently). Errors from the server
raise CuimgError with the gRPC code and message (field names included, e.g.
"steps[0].element.width: ...").

On the server's host, Client.shared_memory(size) gives a SharedRegion: arrays placed in it travel
by reference (region, offset, shape) instead of bytes, and morphology can write into it (out=).
"""
import json
import os
from multiprocessing import shared_memory

import numpy as np
import grpc

from cuimg.v1 import (deform_pb2, detection_pb2, gradient_pb2, imaging_service_pb2_grpc,
                      morphology_pb2, pyramid_pb2, resident_pb2, shared_memory_pb2, types_pb2)

PIXEL_TYPES = {np.dtype(np.uint8): types_pb2.PIXEL_TYPE_U8,
               np.dtype(np.uint16): types_pb2.PIXEL_TYPE_U16,
               np.dtype(np.int16): types_pb2.PIXEL_TYPE_I16,
               np.dtype(np.float32): types_pb2.PIXEL_TYPE_F32}
DTYPES = {v: k for k, v in PIXEL_TYPES.items()}
OPS = {"erode": morphology_pb2.MORPHOLOGY_OP_ERODE, "dilate": morphology_pb2.MORPHOLOGY_OP_DILATE,
       "open": morphology_pb2.MORPHOLOGY_OP_OPEN, "close": morphology_pb2.MORPHOLOGY_OP_CLOSE,
       "gradient": morphology_pb2.MORPHOLOGY_OP_GRADIENT,
       "tophat": morphology_pb2.MORPHOLOGY_OP_TOP_HAT,
       "blackhat": morphology_pb2.MORPHOLOGY_OP_BLACK_HAT}
SHAPES = {name: getattr(morphology_pb2, f"ELEMENT_SHAPE_{name.upper()}")
          for name in ("rect", "ellipse", "cross")}
# Messages can be large (volumes); the server enforces its own limits.
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1),
                   # gRPC retries a call only while what it sent fits this buffer (256 KiB by
                   # default, less than a VGA frame); the cuimg CLI uses the same.
                   ("grpc.per_rpc_retry_buffer_size", 64 << 20)]


def _retry_config(max_attempts):
    """The service config: UNAVAILABLE (a restarted or replaced server) and an overloaded
    server's RESOURCE_EXHAUSTED are retried, the latter after the delay the server pushes back
    (grpc-retry-pushback-ms; -1, never, for a request that cannot fit)."""
    if max_attempts == 1:
        return None
    return json.dumps({"methodConfig": [{
        "name": [{"service": "cuimg.v1.Imaging"}],
        "retryPolicy": {"maxAttempts": max_attempts, "initialBackoff": "0.05s",
                        "maxBackoff": "1s", "backoffMultiplier": 2,
                        "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]}}]})


def _read(path):
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


class CuimgError(Exception):
    """An RPC failed: `code` is the grpc.StatusCode, `details` the server's message."""

    def __init__(self, code, details):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


def parse_steps(text):
    """"op:shape:WxH[xD][:iterations],..." (the cuimg CLI's --steps) -> MorphologyStep list."""
    steps = []
    for part in text.split(","):
        fields = part.split(":")
        if len(fields) not in (3, 4) or fields[0] not in OPS or fields[1] not in SHAPES:
            raise ValueError(f"step {part!r}: expected op:shape:WxH[xD][:iterations] with op in "
                             f"{sorted(OPS)} and shape in {sorted(SHAPES)}")
        size = [int(v) for v in fields[2].split("x")]
        if len(size) not in (2, 3):
            raise ValueError(f"step {part!r}: size must be WxH or WxHxD")
        steps.append(morphology_pb2.MorphologyStep(
            op=OPS[fields[0]], iterations=int(fields[3]) if len(fields) == 4 else 1,
            element=morphology_pb2.StructuringElement(
                shape=SHAPES[fields[1]], width=size[0], height=size[1],
                depth=size[2] if len(size) == 3 else 0)))
    return steps


def to_image(array, spacing=None, colour=False):
    """A NumPy array as a cuimg.v1.Image: (H, W), (D, H, W), or with colour=True (H, W, C)."""
    array = np.asarray(array)
    if array.dtype not in PIXEL_TYPES:
        raise TypeError(f"dtype {array.dtype}: cuimg takes uint8, uint16, int16 or float32")
    if array.ndim == 2:
        depth, channels = 0, 1
    elif array.ndim == 3 and colour:
        depth, channels = 0, array.shape[2]
    elif array.ndim == 3:
        depth, channels = array.shape[0], 1
    else:
        raise ValueError(f"shape {array.shape}: expected (H, W), (D, H, W) or (H, W, C)")
    height, width = (array.shape[0], array.shape[1]) if depth == 0 else array.shape[1:]
    image = types_pb2.Image(pixel_type=PIXEL_TYPES[array.dtype], width=width, height=height,
                            depth=depth, channels=channels,
                            data=np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes())
    if spacing is not None:
        image.spacing.x_mm, image.spacing.y_mm, image.spacing.z_mm = spacing
    return image


def from_image(image):
    """A cuimg.v1.Image as a read-only NumPy array of its shape."""
    dtype = DTYPES[image.pixel_type].newbyteorder("<")
    channels = max(image.channels, 1)
    shape = (image.height, image.width) if image.depth <= 1 else (image.depth, image.height, image.width)
    if channels > 1:
        shape += (channels,)
    return np.frombuffer(image.data, dtype=dtype).reshape(shape)


def _source(array_or_handle, spacing=None, colour=False):
    if isinstance(array_or_handle, str):
        return types_pb2.ImageSource(handle=array_or_handle)
    if isinstance(array_or_handle, ShmArray):
        return types_pb2.ImageSource(shared_memory=array_or_handle.reference(spacing))
    return types_pb2.ImageSource(image=to_image(array_or_handle, spacing, colour))


class ShmArray:
    """An array living in a SharedRegion at `offset`: `.array` is the NumPy view (read and write
    it in place); pass the ShmArray itself to a Client method to send it by reference."""

    def __init__(self, region, offset, shape, dtype):
        self.region, self.offset = region, offset
        self.array = np.ndarray(shape, np.dtype(dtype), buffer=region.buffer, offset=offset)

    def reference(self, spacing=None):
        a = self.array
        if a.dtype not in PIXEL_TYPES:
            raise TypeError(f"dtype {a.dtype}: cuimg takes uint8, uint16, int16 or float32")
        if a.ndim not in (2, 3):
            raise ValueError(f"shape {a.shape}: expected (H, W) or (D, H, W)")
        image = types_pb2.Image(pixel_type=PIXEL_TYPES[a.dtype], width=a.shape[-1],
                                height=a.shape[-2], depth=a.shape[0] if a.ndim == 3 else 0)
        if spacing is not None:
            image.spacing.x_mm, image.spacing.y_mm, image.spacing.z_mm = spacing
        return types_pb2.SharedMemoryImage(region=self.region.handle, offset=self.offset,
                                           image=image)


class SharedRegion:
    """A POSIX shared-memory object this process created and registered with the server (which
    must run on this host with --shared_memory). close() unregisters and unlinks it."""

    _count = 0

    def __init__(self, client, size):
        SharedRegion._count += 1
        # Where the server tells callers apart, a caller's names must start with its key prefix
        # ("/<identity>."); the Python name is the key without its leading "/".
        prefix = client._call("ListSharedMemory",
                              shared_memory_pb2.ListSharedMemoryRequest()).key_prefix
        self._shm = shared_memory.SharedMemory(
            name=f"{prefix[1:]}cuimg-py-{os.getpid()}-{SharedRegion._count}", create=True,
            size=size)
        self._client = client
        self.size = size
        try:
            region = client._call("RegisterSharedMemory", shared_memory_pb2.RegisterSharedMemoryRequest(
                key="/" + self._shm.name, byte_size=size)).region
        except Exception:
            self._shm.close()
            self._shm.unlink()
            raise
        self.handle, self.device_mapped = region.handle, region.device_mapped

    @property
    def buffer(self):
        return self._shm.buf

    def array(self, shape, dtype, offset=0):
        """A ShmArray of `shape` and `dtype` at byte `offset` (which must fit the region)."""
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if offset < 0 or offset + nbytes > self.size:
            raise ValueError(f"{nbytes} bytes at offset {offset} do not fit {self.size}")
        return ShmArray(self, offset, tuple(shape), dtype)

    def close(self):
        try:
            self._client._call("UnregisterSharedMemory",
                               shared_memory_pb2.UnregisterSharedMemoryRequest(handle=self.handle))
        finally:
            try:
                self._shm.close()
            except BufferError:
                pass  # ShmArray views still exist: the mapping goes with the last of them
            self._shm.unlink()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _mesh(vertices, triangles):
    vertices = np.ascontiguousarray(vertices, dtype="<f4").reshape(-1, 3)
    triangles = np.ascontiguousarray(triangles, dtype="<u4").reshape(-1, 3)
    return deform_pb2.Mesh(vertex_count=len(vertices), triangle_count=len(triangles),
                           positions=vertices.tobytes(), triangles=triangles.tobytes())


class Client:
    """A connection to one cuimg-server (or several, with a dns:/// target and round_robin).

    target:      host:port, dns:///host:port or unix:///path
    tls:         connect over TLS (implied by ca_file/cert_file); without ca_file the system roots
    ca_file:     PEM CA the server's certificate must chain to
    cert_file, key_file: PEM client certificate and key for mutual TLS
    server_name: the name the server's certificate must carry, if not the target's host
    token, token_file: a bearer token ("authorization: Bearer ..."), sent only over TLS
    timeout:     per-call deadline in seconds (None: none)
    max_attempts: attempts per call (1 to 5) for UNAVAILABLE, and for RESOURCE_EXHAUSTED after
                 the server's retry hint
    """

    def __init__(self, target="localhost:50051", *, tls=False, ca_file=None, cert_file=None,
                 key_file=None, server_name=None, token=None, token_file=None, timeout=60.0,
                 max_attempts=4):
        if not 1 <= max_attempts <= 5:
            raise ValueError("max_attempts: expected 1 to 5")
        if token_file is not None:
            with open(token_file) as f:
                token = f.read().strip()
        tls = tls or ca_file is not None or cert_file is not None
        if token is not None and not tls:
            raise ValueError("a token is sent only over TLS: pass tls=True or ca_file")
        if (cert_file is None) != (key_file is None):
            raise ValueError("cert_file and key_file go together")
        options = list(CHANNEL_OPTIONS)
        retry = _retry_config(max_attempts)
        if retry is not None:
            options.append(("grpc.service_config", retry))
        if tls:
            credentials = grpc.ssl_channel_credentials(_read(ca_file), _read(key_file), _read(cert_file))
            if token is not None:
                credentials = grpc.composite_channel_credentials(
                    credentials, grpc.access_token_call_credentials(token))
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
            self._channel = grpc.secure_channel(target, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(target, options=options)
        self._stub = imaging_service_pb2_grpc.ImagingStub(self._channel)
        self.timeout = timeout
        self.last_timing = ""  # the cuimg-timing trailer of the last call (queue, kernel, ... µs)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, method, request):
        try:
            response, call = getattr(self._stub, method).with_call(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise CuimgError(e.code(), e.details()) from None
        self.last_timing = dict(call.trailing_metadata() or ()).get("cuimg-timing", "")
        return response

    def morphology(self, image, steps, *, border_value=None, spacing=None, out=None):
        """Runs a chain of steps ("op:shape:WxH[xD][:iterations],..." or MorphologyStep list)
        on an image/volume array, a ShmArray or a resident handle; returns an array of the
        input's shape and dtype. border_value: a constant border (default: neutral, outside never
        wins). out: a ShmArray the server writes the result into (returned as its .array)."""
        steps = parse_steps(steps) if isinstance(steps, str) else list(steps)
        if border_value is not None:
            for s in steps:
                s.border_mode, s.border_value = morphology_pb2.BORDER_MODE_CONSTANT, border_value
        output = None
        if out is not None:
            output = types_pb2.OutputOptions(shared_memory=types_pb2.SharedMemoryTarget(
                region=out.region.handle, offset=out.offset))
        response = self._call("Morphology", morphology_pb2.MorphologyRequest(
            input=_source(image, spacing), steps=steps, output=output))
        return out.array if out is not None else from_image(response.result.image)

    def gradient(self, image, *, kernel_length=7, sigma=0.0, magnitude=False, angle=False):
        """Gaussian-derivative gradients; returns a dict of float32 arrays: gx, gy (and
        magnitude, angle when asked)."""
        response = self._call("Gradient", gradient_pb2.GradientRequest(
            input=_source(image), kernel_length=kernel_length, sigma=sigma, magnitude=magnitude,
            angle=angle))
        out = {"gx": from_image(response.gx.image), "gy": from_image(response.gy.image)}
        if magnitude:
            out["magnitude"] = from_image(response.magnitude.image)
        if angle:
            out["angle"] = from_image(response.angle.image)
        return out

    def pyramid(self, image, *, levels=31, ratio=1.05, mode="from_base"):
        """Every level (level 0 = the input size) as a list of arrays."""
        modes = {"from_base": pyramid_pb2.PYRAMID_MODE_FROM_BASE, "cascaded": pyramid_pb2.PYRAMID_MODE_CASCADED}
        response = self._call("Pyramid", pyramid_pb2.PyramidRequest(
            input=_source(image), levels=levels, ratio=ratio, mode=modes[mode]))
        return [from_image(level.result.image) for level in response.levels]

    def detect(self, image, *, model="", hit_threshold=0.0, win_stride=0, scale=0.0, padding=0,
               grouping=True, encoded=None):
        """Pedestrians in a gray (H, W) or BGR/BGRA (H, W, C) uint8 image, or in PNG/JPEG bytes
        (`encoded`): a list of dicts x, y, width, height, score, scale."""
        source = types_pb2.ImageSource(encoded=encoded) if encoded is not None else \
            _source(image, colour=not isinstance(image, str) and np.ndim(image) == 3)
        response = self._call("DetectPedestrians", detection_pb2.DetectPedestriansRequest(
            input=source, model=model, hit_threshold=hit_threshold, win_stride=win_stride,
            scale=scale, padding=padding,
            grouping=detection_pb2.GROUPING_GROUP_RECTANGLES if grouping else detection_pb2.GROUPING_NONE))
        return [{"x": d.x, "y": d.y, "width": d.width, "height": d.height, "score": d.score,
                 "scale": d.scale} for d in response.detections]

    def deform(self, mesh, lattice):
        """Free-form deformation of a mesh ((vertices Nx3, triangles Mx3) or a resident handle)
        by a cuimg.v1.Lattice; returns (positions Nx3 float32, normals Nx3 float32)."""
        source = deform_pb2.MeshSource(handle=mesh) if isinstance(mesh, str) else \
            deform_pb2.MeshSource(mesh=_mesh(*mesh))
        response = self._call("Deform", deform_pb2.DeformRequest(
            mesh=source, lattice=lattice,
            outputs=deform_pb2.DEFORM_OUTPUTS_POSITIONS_AND_NORMALS))
        return (np.frombuffer(response.positions, "<f4").reshape(-1, 3),
                np.frombuffer(response.normals, "<f4").reshape(-1, 3))

    def upload(self, image=None, *, mesh=None, ttl_seconds=0):
        """Keeps an image/volume array (or mesh=(vertices, triangles)) on the server; returns
        its handle, usable in place of an array by morphology/gradient/pyramid/detect/deform."""
        content = {"mesh": _mesh(*mesh)} if mesh is not None else {"image": to_image(image)}
        request = resident_pb2.UploadRequest(ttl_seconds=ttl_seconds, **content)
        try:
            response = self._stub.Upload(iter([request]), timeout=self.timeout)
        except grpc.RpcError as e:
            raise CuimgError(e.code(), e.details()) from None
        return response.object.handle

    def shared_memory(self, size):
        """A SharedRegion of `size` bytes registered with the server (same host only)."""
        return SharedRegion(self, size)

    def release(self, handle):
        self._call("Release", resident_pb2.ReleaseRequest(handle=handle))

    def list_resident(self):
        """(handle, kind name, size_bytes) of every resident object of this caller."""
        response = self._call("ListResident", resident_pb2.ListResidentRequest())
        return [(o.handle, resident_pb2.ResidentKind.Name(o.kind), o.size_bytes)
                for o in response.objects]
