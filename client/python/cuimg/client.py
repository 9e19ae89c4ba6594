"""The Client class: one channel, typed helpers per RPC, NumPy in and out.

Arrays: (H, W) images, (D, H, W) volumes, (H, W, C) colour images for detection; dtypes uint8,
uint16, int16, float32, and uint32 for label images (Client.label's, which morphology's
segmentation steps take), in either byte order (others are refused, never converted silently).
Results are writable arrays in native byte order, of the input's dimensionality: a one-slice
volume (1, H, W), which the wire cannot tell from an (H, W) image, comes back (1, H, W). Errors
from the server raise CuimgError with the gRPC code and message (field names included, e.g.
"steps[0].element.width: ...").

Volumes larger than the client's `stream_threshold` go through ProcessVolumeStream over several
connections (cuimg.volume_stream), without the copies a unary message costs; the result is the
unary RPC's, bit for bit.

On the server's host, Client.shared_memory(size) gives a SharedRegion: arrays placed in it travel
by reference (region, offset, shape) instead of bytes, and morphology can write into it (out=).
"""
from __future__ import annotations

from typing import Any, Iterable

import grpc
import numpy as np

from cuimg import batches, channel, detection, resident, segmentation, wire_contract
from cuimg.errors import CuimgError, make_error

# The conversions, as cuimg.client offered them before they had a module of their own.
from cuimg.messages import (  # noqa: F401
    DTYPES,
    PIXEL_TYPES,
    Resident,
    Spacing,
    _floats,
    _image_header,
    _image_shape,
    _mesh,
    _output_options,
    _result,
    _set_spacing,
    from_image,
    little_endian,
    parse_steps,
    pixel_type,
    to_image,
)
from cuimg.messages import element_mm  # noqa: F401 (cuimg.element_mm, cuimg/__init__.py)
from cuimg.shared_region import SharedRegion, ShmArray
from cuimg.sources import ImageLike, _frame_source, _source  # noqa: F401 (as cuimg.client had)
from cuimg.v1 import (
    deform_pb2,
    gradient_pb2,
    imaging_service_pb2_grpc,
    morphology_pb2,
    pyramid_pb2,
    resident_pb2,
    server_info_pb2,
    streaming_pb2,
    types_pb2,
)
from cuimg.volume_stream import StreamFailed, StreamedVolume, stream_volume, streamable


# Volumes above this many bytes are streamed (Client's stream_threshold): below it one unary
# message costs less than opening the streams.
DEFAULT_STREAM_THRESHOLD = 4 << 20


class Client(detection.DetectionCalls):
    """A connection to one cuimg-server (or several, with a dns:/// target and round_robin).

    target:      host:port, dns:///host:port or unix:///path
    tls:         connect over TLS (implied by ca_file/cert_file); without ca_file the system roots
    ca_file:     PEM CA the server's certificate must chain to
    cert_file, key_file: PEM client certificate and key for mutual TLS
    server_name: the name the server's certificate must carry, if not the target's host
    token, token_file: a bearer token ("authorization: Bearer ..."), sent only over TLS
    timeout:     per-call deadline in seconds (None: none); a streamed volume's whole deadline
    max_attempts: attempts per call (1 to 5) for UNAVAILABLE, and for RESOURCE_EXHAUSTED after
                 the server's retry hint
    stream_threshold: volumes ((D, H, W) arrays, D >= 2) of more bytes than this go through
                 ProcessVolumeStream (morphology and gradient; not with keep_resident); None
                 never streams. Each call may override it (stream=).
    volume_streams: parts a streamed volume is split into, each on its own connection (as the
                 CLI's --volume_streams)
    slab_bytes:  about how many input bytes each streamed slab message carries
    """

    def __init__(
        self,
        target: str = "localhost:50051",
        *,
        tls: bool = False,
        ca_file: str | None = None,
        cert_file: str | None = None,
        key_file: str | None = None,
        server_name: str | None = None,
        token: str | None = None,
        token_file: str | None = None,
        timeout: float | None = 60.0,
        max_attempts: int = 4,
        stream_threshold: int | None = DEFAULT_STREAM_THRESHOLD,
        volume_streams: int = 4,
        slab_bytes: int = 4 << 20,
    ):
        if not 1 <= max_attempts <= 5:
            raise ValueError("max_attempts: expected 1 to 5")
        if volume_streams < 1:
            raise ValueError("volume_streams: expected >= 1")
        if slab_bytes < 1:
            raise ValueError("slab_bytes: expected >= 1")
        self._settings = channel.ChannelSettings.of(
            target,
            tls=tls,
            ca_file=ca_file,
            cert_file=cert_file,
            key_file=key_file,
            server_name=server_name,
            token=token,
            token_file=token_file,
            max_attempts=max_attempts,
        )
        self._channel = self._settings.channel(0)
        self._stub = imaging_service_pb2_grpc.ImagingStub(self._channel)
        self._stream_channels = [self._channel]  # more are made on the first streamed volume
        self.timeout = timeout
        self.stream_threshold = stream_threshold
        self.volume_streams = volume_streams
        self.slab_bytes = slab_bytes
        self.last_timing = ""  # the cuimg-timing trailer of the last call (queue, kernel, ... µs)
        self.last_stream: StreamedVolume | None = None  # the last streamed volume's parts
        # The last morphology's elements as the server ran them, in voxels, one per step, when
        # some were given in millimetres (element_mm, "5mm" steps); else empty.
        self.last_elements: list[morphology_pb2.StructuringElement] = []
        # Results keep their input's dimensionality, one-slice volumes' included.
        self._one_slice = resident.OneSliceHandles()
        self._server_info: server_info_pb2.ServerInfo | None = None

    def close(self) -> None:
        """Closes every channel of this client."""
        for stream_channel in self._stream_channels:
            stream_channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, method: str, request: Any) -> Any:
        try:
            response, call = getattr(self._stub, method).with_call(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise CuimgError.of(e) from None
        self.last_timing = wire_contract.timing_text(call.trailing_metadata())
        return response

    def _stream(
        self,
        header: streaming_pb2.VolumeStreamHeader,
        volume: np.ndarray,
        out_dtype: np.dtype,
        plane_count: int,
    ) -> list[np.ndarray]:
        while len(self._stream_channels) < self.volume_streams:
            self._stream_channels.append(self._settings.channel(len(self._stream_channels)))
        header.volume.pixel_type = PIXEL_TYPES[volume.dtype.newbyteorder("=")]
        header.volume.height, header.volume.width = volume.shape[1:]
        try:
            result = stream_volume(
                self._stream_channels[: self.volume_streams],
                header,
                volume,
                out_dtype=out_dtype,
                plane_count=plane_count,
                slab_bytes=self.slab_bytes,
                timeout=self.timeout,
            )
        except StreamFailed as e:
            raise make_error(e.code, e.details, e.info) from None
        self.last_stream = result
        self.last_timing = result.server_timing()
        return result.planes

    def morphology(
        self,
        image: ImageLike,
        steps: str | Iterable[morphology_pb2.MorphologyStep],
        *,
        border_value: float | None = None,
        spacing: Spacing | None = None,
        out: ShmArray | None = None,
        keep_resident: bool = False,
        return_data: bool = True,
        ttl_seconds: int = 0,
        stream: bool | None = None,
        marker: ImageLike | None = None,
    ) -> Any:
        """Runs a chain of steps ("op:shape:WxH[xD][:iterations],..." or MorphologyStep list)
        on an image/volume array, a ShmArray or a resident handle; returns a writable array of
        the input's shape and dtype.

        border_value: a constant border (default: neutral, outside never wins).
        spacing:     (x, y, z) voxel size in mm, sent with the input. Elements given in voxels
                     ignore it; elements in millimetres ("dilate:ellipse:5mm", element_mm) are
                     turned into voxels from it by the server, which refuses them without it
                     (a resident handle's own spacing is used). The returned array carries
                     none. The elements as run land in self.last_elements.
        out:         a ShmArray the server writes the result into (returned as its .array).
        A list of images (cuimg.batches): one call, a list of results (a CuimgError for an image
        the server refused); spacing applies to each; not with out=, stream= or marker=.
        keep_resident: keep the result on the server; returns Resident(handle, array), the array
                     None when return_data=False. ttl_seconds: its lifetime after last use (0:
                     the server's default).
        stream:      None: a (D, H, W) volume above the client's stream_threshold is streamed
                     over its volume_streams connections; True: any volume is; False: unary.
                     Never with out= or keep_resident. The result is the same either way. A chain
                     with a global segmentation step (fill_holes, hmax, ...) runs on one stream:
                     the server holds the whole volume for it.
        marker:      the seed of reconstruct_dilate / reconstruct_erode steps: an array of the
                     input's shape and dtype, a ShmArray or a resident handle (a streamed volume
                     takes only the latter two).
        """
        steps = parse_steps(steps) if isinstance(steps, str) else list(steps)
        self.last_elements = []
        if border_value is not None:
            for s in steps:
                s.border_mode, s.border_value = morphology_pb2.BORDER_MODE_CONSTANT, border_value
        output = _output_options(keep_resident, return_data, ttl_seconds)
        if batches.is_batch(image):
            if out is not None or stream or marker is not None:
                raise ValueError("a batch (a list of images) takes no out=, stream= or marker=")
            batches.check(image)
            request = morphology_pb2.MorphologyRequest(
                steps=steps, output=output, inputs=[_source(i, spacing) for i in image]
            )
            return batches.results(
                self._call("Morphology", request),
                image,
                lambda i, r: self._one_slice.results(i, [r.result], keep_resident, return_data)[0],
            )
        if out is not None:
            if keep_resident:
                raise ValueError("out= and keep_resident go to different places: pass one")
            output = types_pb2.OutputOptions(
                shared_memory=types_pb2.SharedMemoryTarget(
                    region=out.region.handle, offset=out.offset
                )
            )
        marker_source = None if marker is None else _source(marker)
        volume = None if output is not None else streamable(image, stream, self.stream_threshold)
        if volume is not None:
            header = streaming_pb2.VolumeStreamHeader(
                morphology=morphology_pb2.MorphologyRequest(steps=steps, marker=marker_source)
            )
            _set_spacing(header.volume, spacing)
            result = self._stream(header, volume, volume.dtype.newbyteorder("="), 1)[0]
            assert self.last_stream is not None  # set by _stream
            self.last_elements = list(self.last_stream.resolved_elements)
            return result
        response = self._call(
            "Morphology",
            morphology_pb2.MorphologyRequest(
                input=_source(image, spacing), steps=steps, output=output, marker=marker_source
            ),
        )
        self.last_elements = list(response.resolved_elements)
        if out is not None:
            return out.array
        return self._one_slice.results(image, [response.result], keep_resident, return_data)[0]

    def gradient(
        self,
        image: ImageLike,
        *,
        kernel_length: int = 7,
        sigma: float = 0.0,
        magnitude: bool = False,
        angle: bool = False,
        spacing: Spacing | None = None,
        keep_resident: bool = False,
        return_data: bool = True,
        ttl_seconds: int = 0,
        stream: bool | None = None,
    ) -> dict[str, Any]:
        """Gaussian-derivative gradients of an image (a volume: per slice); returns a dict of
        writable float32 arrays of the input's shape: gx, gy (and magnitude, angle when asked).
        With keep_resident each value is a Resident(handle, array). spacing and stream as for
        morphology. A list of images is a batch, as for morphology: a list of dicts."""
        names = ["gx", "gy"] + (["magnitude"] if magnitude else []) + (["angle"] if angle else [])
        output = _output_options(keep_resident, return_data, ttl_seconds)
        request = gradient_pb2.GradientRequest(
            kernel_length=kernel_length,
            sigma=sigma,
            magnitude=magnitude,
            angle=angle,
            output=output,
        )

        def planes(i: ImageLike, r: Any) -> dict[str, Any]:
            arrays = [getattr(r, n) for n in names]
            return dict(zip(names, self._one_slice.results(i, arrays, keep_resident, return_data)))

        if batches.is_batch(image):
            batches.check(image)
            request.inputs.extend(_source(i, spacing) for i in image)
            call = self._call("Gradient", request)
            return batches.results(call, image, planes)  # type: ignore[return-value]
        volume = None if output is not None else streamable(image, stream, self.stream_threshold)
        if volume is not None:
            header = streaming_pb2.VolumeStreamHeader(gradient=request)
            _set_spacing(header.volume, spacing)
            return dict(zip(names, self._stream(header, volume, np.dtype(np.float32), len(names))))
        request.input.CopyFrom(_source(image, spacing))
        return planes(image, self._call("Gradient", request))

    def label(
        self,
        image: ImageLike,
        *,
        connectivity: int | None = None,
        threshold: tuple[float, float] | None = None,
        min_voxels: int = 0,
        intensity: ImageLike | None = None,
        spacing: Spacing | None = None,
        keep_resident: bool = False,
        return_data: bool = True,
        ttl_seconds: int = 0,
    ) -> tuple[Any, dict[str, np.ndarray]]:
        """Connected components of an image/volume (an array of any cuimg dtype, a ShmArray or
        a resident handle): returns (labels, regions). labels: a writable uint32 array of the
        input's shape, 0 the background and regions numbered 1..N as scipy.ndimage.label numbers
        them (raster order of each region's first pixel); with keep_resident, Resident(handle,
        labels or None when return_data=False): a label image morphology's segmentation steps
        and label() take by handle. regions: a dict of NumPy arrays, row k for label k + 1, in
        NumPy's axis order as scikit-image's regionprops: voxels (N,); bbox (N, 2 * ndim), the
        half-open box's first index per axis, then one past its last; centroid (N, ndim) in
        voxels; centroid_mm (N, ndim) when `spacing` (or a resident input's) is > 0 on every
        axis; with `intensity`, min, max, mean and sum (N,) of its values per region.

        connectivity: 4 or 8 (2D), 6, 18 or 26 (3D); None: face connectivity (4 / 6).
        threshold:   (lo, hi): the foreground is the pixels in [lo, hi]; None: the non-zero
                     pixels. NaN is never foreground.
        min_voxels:  components of fewer voxels are dropped before numbering.
        intensity:   an image of the input's shape (any dtype, array, ShmArray or handle)."""
        output = _output_options(keep_resident, return_data, ttl_seconds)
        request = segmentation.label_request(
            _source(image, spacing),
            connectivity_value=connectivity,
            threshold=threshold,
            min_voxels=min_voxels,
            intensity=None if intensity is None else _source(intensity),
            output=output,
        )
        labels, regions, self.last_timing = segmentation.call_label(
            self._channel, request, self.timeout, self._one_slice.of(image)
        )
        return self._one_slice.results(image, [labels], keep_resident, return_data)[0], regions

    def pyramid(
        self,
        image: ImageLike,
        *,
        levels: int = 31,
        ratio: float = 1.05,
        mode: str = "from_base",
        min_width: int = 0,
        min_height: int = 0,
        output_dtype: Any = np.float32,
        keep_resident: bool = False,
        return_data: bool = True,
        ttl_seconds: int = 0,
    ) -> list[Any]:
        """Every level (level 0 = the input size) as a list of writable arrays of
        `output_dtype` (float32, or the input's dtype: rounded and saturated); levels stop
        before one narrower than min_width or lower than min_height (0: 8). With keep_resident
        each level is a Resident(handle, array). A list of images is a batch, as for
        morphology: a list of level lists."""
        modes = {
            "from_base": pyramid_pb2.PYRAMID_MODE_FROM_BASE,
            "cascaded": pyramid_pb2.PYRAMID_MODE_CASCADED,
        }
        request = pyramid_pb2.PyramidRequest(
            levels=levels,
            ratio=ratio,
            mode=modes[mode],
            min_width=min_width,
            min_height=min_height,
            output_type=pixel_type(output_dtype),
            output=_output_options(keep_resident, return_data, ttl_seconds),
        )

        def levels_of(i: ImageLike, response: pyramid_pb2.PyramidResponse) -> list[Any]:
            return self._one_slice.results(
                i, [level.result for level in response.levels], keep_resident, return_data
            )

        if batches.is_batch(image):
            batches.check(image)
            request.inputs.extend(_source(i) for i in image)
            return batches.results(self._call("Pyramid", request), image, levels_of)
        request.input.CopyFrom(_source(image))
        return levels_of(image, self._call("Pyramid", request))

    def server_info(self) -> server_info_pb2.ServerInfo:
        """GetServerInfo, asked once per Client: the DICOM transfer syntaxes the server decodes
        and encodes (cuimg/dicom_frames.py). A server without it (older) gives an empty one."""
        if self._server_info is None:
            try:
                self._server_info = self._call(
                    "GetServerInfo", server_info_pb2.GetServerInfoRequest()
                )
            except CuimgError as e:
                if e.code != grpc.StatusCode.UNIMPLEMENTED:
                    raise
                self._server_info = server_info_pb2.ServerInfo()
        return self._server_info

    def health(self, service: str = "") -> str:
        """grpc.health.v1 Check: "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN" for
        `service` ("" the whole server, or "cuimg.v1.Imaging"). A server that cannot be reached
        raises CuimgError (UNAVAILABLE)."""
        return channel.health(self._channel, service, self.timeout)

    def deform(
        self,
        mesh: str | tuple[Any, Any],
        lattice: deform_pb2.Lattice,
        *,
        keep_resident: bool = False,
        return_data: bool = True,
        ttl_seconds: int = 0,
    ) -> Any:
        """Free-form deformation of a mesh ((vertices Nx3, triangles Mx3) or a resident handle)
        by a cuimg.v1.Lattice; returns (positions Nx3 float32, normals Nx3 float32), writable.
        With keep_resident the deformed mesh stays on the server: Resident(handle, (positions,
        normals) or None when return_data=False)."""
        source = (
            deform_pb2.MeshSource(handle=mesh)
            if isinstance(mesh, str)
            else deform_pb2.MeshSource(mesh=_mesh(*mesh))
        )
        response = self._call(
            "Deform",
            deform_pb2.DeformRequest(
                mesh=source,
                lattice=lattice,
                outputs=deform_pb2.DEFORM_OUTPUTS_POSITIONS_AND_NORMALS,
                output=_output_options(keep_resident, return_data, ttl_seconds),
            ),
        )
        data = (_floats(response.positions), _floats(response.normals)) if return_data else None
        return Resident(response.handle, data) if keep_resident else data

    def upload(
        self,
        image: Any = None,
        *,
        mesh: tuple[Any, Any] | None = None,
        spacing: Spacing | None = None,
        ttl_seconds: int = 0,
        chunk_bytes: int = 4 << 20,
    ) -> str:
        """Keeps an image/volume array (or mesh=(vertices, triangles)) on the server, sent in
        messages of about `chunk_bytes`; returns its handle, usable in place of an array by
        morphology/gradient/pyramid/detect/deform and by download()."""
        handle = resident.upload(
            self._stub, image, mesh, spacing, ttl_seconds, chunk_bytes, self.timeout
        )
        if image is not None and self._one_slice.of(image):
            self._one_slice.add(handle)
        return handle

    def download(self, handle: str) -> Any:
        """A resident object's contents: an image/volume as a writable array of its shape and
        dtype, or a mesh as (vertices Nx3 float32, triangles Mx3 uint32)."""
        return resident.download(self._stub, handle, self.timeout, handle in self._one_slice)

    def shared_memory(self, size: int) -> SharedRegion:
        """A SharedRegion of `size` bytes registered with the server (same host only)."""
        return SharedRegion(self, size)

    def release(self, handle: str) -> None:
        """Frees a resident object (NOT_FOUND when it is not, or no longer, there)."""
        self._call("Release", resident_pb2.ReleaseRequest(handle=handle))
        self._one_slice.discard(handle)

    def list_resident(self) -> list[tuple[str, str, int]]:
        """(handle, kind name, size_bytes) of every resident object of this caller."""
        response = self._call("ListResident", resident_pb2.ListResidentRequest())
        return [
            (o.handle, resident_pb2.ResidentKind.Name(o.kind), o.size_bytes)
            for o in response.objects
        ]
