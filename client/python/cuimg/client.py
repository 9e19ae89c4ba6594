"""The Client class: one channel, typed helpers per RPC, NumPy in and out.

Arrays: (H, W) images, (D, H, W) volumes, (H, W, C) colour images for detection; dtypes uint8,
uint16, int16, float32, and uint32 for label images (Client.label's, which morphology's
segmentation steps take), in either byte order (others are refused, never converted silently).
Results are writable arrays in native byte order, of the input's dimensionality: a one-slice
volume (1, H, W), which the wire cannot tell from an (H, W) image, comes back (1, H, W). Errors from the server raise CuimgError with
the gRPC code and message (field names included, e.g. "steps[0].element.width: ...").

Volumes larger than the client's `stream_threshold` go through ProcessVolumeStream over several
connections (cuimg.volume_stream), without the copies a unary message costs; the result is the
unary RPC's, bit for bit.

On the server's host, Client.shared_memory(size) gives a SharedRegion: arrays placed in it travel
by reference (region, offset, shape) instead of bytes, and morphology can write into it (out=).
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import grpc
import numpy as np

from cuimg import _wire, detection, segmentation, wire_contract
from cuimg.errors import CuimgError, make_error
# The conversions, as cuimg.client offered them before they had a module of their own.
from cuimg.messages import (DTYPES, PIXEL_TYPES, Resident, Spacing, _floats, _image_header,
                            _image_shape, _mesh, _output_options, _result, _set_spacing,
                            element_mm, from_image, little_endian, parse_steps, pixel_type,
                            to_image)
from cuimg.shared_region import SharedRegion, ShmArray
from cuimg.sources import ImageLike, _frame_source, _source
from cuimg.v1 import (deform_pb2, detection_pb2, gradient_pb2, imaging_service_pb2_grpc,
                      label_pb2, morphology_pb2, pyramid_pb2, resident_pb2, server_info_pb2,
                      streaming_pb2, types_pb2)
from cuimg.volume_stream import StreamFailed, StreamedVolume, stream_volume
# The channel's settings, as cuimg.client offered them before they had a module of their own.
from cuimg.channel_options import (CHANNEL_OPTIONS, DEFAULT_STREAM_THRESHOLD, _read,
                                   _retry_config)


class Client:
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

    def __init__(self, target: str = "localhost:50051", *, tls: bool = False,
                 ca_file: str | None = None, cert_file: str | None = None,
                 key_file: str | None = None, server_name: str | None = None,
                 token: str | None = None, token_file: str | None = None,
                 timeout: float | None = 60.0, max_attempts: int = 4,
                 stream_threshold: int | None = DEFAULT_STREAM_THRESHOLD,
                 volume_streams: int = 4, slab_bytes: int = 4 << 20):
        if not 1 <= max_attempts <= 5:
            raise ValueError("max_attempts: expected 1 to 5")
        if volume_streams < 1:
            raise ValueError("volume_streams: expected >= 1")
        if slab_bytes < 1:
            raise ValueError("slab_bytes: expected >= 1")
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
        credentials = None
        if tls:
            credentials = grpc.ssl_channel_credentials(_read(ca_file), _read(key_file), _read(cert_file))
            if token is not None:
                credentials = grpc.composite_channel_credentials(
                    credentials, grpc.access_token_call_credentials(token))
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
        self._target, self._options, self._credentials = target, options, credentials
        self._channel = self._new_channel(0)
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
        self._server_info: server_info_pb2.ServerInfo | None = None
        # Resident handles this client made from one-slice volumes (1, H, W): the server keeps
        # them as 2D images (a depth of 1 is 2D on the wire), so their results and downloads get
        # the leading axis back here. A handle made by another client comes back (H, W).
        self._one_slice_handles: set[str] = set()

    def _new_channel(self, index: int) -> grpc.Channel:
        # A distinct argument per index keeps gRPC from sharing one connection between channels
        # (its subchannel pool pools equal targets and arguments); the CLI does the same.
        options = self._options + ([("cuimg.channel_index", index)] if index else [])
        if self._credentials is not None:
            return grpc.secure_channel(self._target, self._credentials, options=options)
        return grpc.insecure_channel(self._target, options=options)

    def close(self) -> None:
        """Closes every channel of this client."""
        for channel in self._stream_channels:
            channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _one_slice(self, image: ImageLike) -> bool:
        """Whether `image` is a one-slice volume (1, H, W): an array, a ShmArray, or a handle
        this client made from one."""
        if isinstance(image, str):
            return image in self._one_slice_handles
        shape = image.array.shape if isinstance(image, ShmArray) else np.shape(image)
        return len(shape) == 3 and shape[0] == 1

    def _results(self, image: ImageLike, results: list[types_pb2.ImageResult],
                 keep_resident: bool, return_data: bool) -> list[Any]:
        """The arrays (or Residents) of `results`, of `image`'s dimensionality."""
        one_slice = self._one_slice(image)
        if one_slice and keep_resident:
            self._one_slice_handles.update(r.handle for r in results)
        return [_result(r, keep_resident, return_data, one_slice) for r in results]

    def _call(self, method: str, request: Any) -> Any:
        try:
            response, call = getattr(self._stub, method).with_call(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise CuimgError.of(e) from None
        self.last_timing = wire_contract.timing_text(call.trailing_metadata())
        return response

    def _streams(self, image: ImageLike, stream: bool | None) -> np.ndarray | None:
        """The little-endian array to stream when `image` goes through ProcessVolumeStream:
        a (D, H, W) array with D >= 2 and, unless stream=True, more bytes than the threshold."""
        if stream is False or isinstance(image, (str, ShmArray)) or \
                hasattr(image, "dicom_frames_source"):
            return None
        array = np.asarray(image)
        if array.ndim != 3 or array.shape[0] < 2:
            return None
        if stream is None and (self.stream_threshold is None or
                               array.nbytes <= self.stream_threshold):
            return None
        return little_endian(array)

    def _stream(self, header: streaming_pb2.VolumeStreamHeader, volume: np.ndarray,
                out_dtype: np.dtype, plane_count: int) -> list[np.ndarray]:
        while len(self._stream_channels) < self.volume_streams:
            self._stream_channels.append(self._new_channel(len(self._stream_channels)))
        header.volume.pixel_type = PIXEL_TYPES[volume.dtype.newbyteorder("=")]
        header.volume.height, header.volume.width = volume.shape[1:]
        try:
            result = stream_volume(self._stream_channels[:self.volume_streams], header, volume,
                                   out_dtype=out_dtype, plane_count=plane_count,
                                   slab_bytes=self.slab_bytes, timeout=self.timeout)
        except StreamFailed as e:
            raise make_error(e.code, e.details, e.info) from None
        self.last_stream = result
        self.last_timing = result.server_timing()
        return result.planes

    def morphology(self, image: ImageLike, steps: str | Iterable[morphology_pb2.MorphologyStep], *,
                   border_value: float | None = None, spacing: Spacing | None = None,
                   out: ShmArray | None = None, keep_resident: bool = False,
                   return_data: bool = True, ttl_seconds: int = 0,
                   stream: bool | None = None, marker: ImageLike | None = None) -> Any:
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
        if out is not None:
            if keep_resident:
                raise ValueError("out= and keep_resident go to different places: pass one")
            output = types_pb2.OutputOptions(shared_memory=types_pb2.SharedMemoryTarget(
                region=out.region.handle, offset=out.offset))
        marker_source = None if marker is None else _source(marker)
        volume = None if output is not None else self._streams(image, stream)
        if volume is not None:
            header = streaming_pb2.VolumeStreamHeader(
                morphology=morphology_pb2.MorphologyRequest(steps=steps, marker=marker_source))
            _set_spacing(header.volume, spacing)
            result = self._stream(header, volume, volume.dtype.newbyteorder("="), 1)[0]
            self.last_elements = list(self.last_stream.resolved_elements)
            return result
        response = self._call("Morphology", morphology_pb2.MorphologyRequest(
            input=_source(image, spacing), steps=steps, output=output, marker=marker_source))
        self.last_elements = list(response.resolved_elements)
        if out is not None:
            return out.array
        return self._results(image, [response.result], keep_resident, return_data)[0]

    def gradient(self, image: ImageLike, *, kernel_length: int = 7, sigma: float = 0.0,
                 magnitude: bool = False, angle: bool = False, spacing: Spacing | None = None,
                 keep_resident: bool = False, return_data: bool = True, ttl_seconds: int = 0,
                 stream: bool | None = None) -> dict[str, Any]:
        """Gaussian-derivative gradients of an image (a volume: per slice); returns a dict of
        writable float32 arrays of the input's shape: gx, gy (and magnitude, angle when asked).
        With keep_resident each value is a Resident(handle, array). spacing and stream as for
        morphology."""
        names = ["gx", "gy"] + (["magnitude"] if magnitude else []) + (["angle"] if angle else [])
        output = _output_options(keep_resident, return_data, ttl_seconds)
        volume = None if output is not None else self._streams(image, stream)
        if volume is not None:
            header = streaming_pb2.VolumeStreamHeader(gradient=gradient_pb2.GradientRequest(
                kernel_length=kernel_length, sigma=sigma, magnitude=magnitude, angle=angle))
            _set_spacing(header.volume, spacing)
            return dict(zip(names, self._stream(header, volume, np.dtype(np.float32), len(names))))
        response = self._call("Gradient", gradient_pb2.GradientRequest(
            input=_source(image, spacing), kernel_length=kernel_length, sigma=sigma,
            magnitude=magnitude, angle=angle, output=output))
        return dict(zip(names, self._results(image, [getattr(response, n) for n in names],
                                             keep_resident, return_data)))

    def label(self, image: ImageLike, *, connectivity: int | None = None,
              threshold: tuple[float, float] | None = None, min_voxels: int = 0,
              intensity: ImageLike | None = None, spacing: Spacing | None = None,
              keep_resident: bool = False, return_data: bool = True,
              ttl_seconds: int = 0) -> tuple[Any, dict[str, np.ndarray]]:
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
            _source(image, spacing), connectivity_value=connectivity, threshold=threshold,
            min_voxels=min_voxels, intensity=None if intensity is None else _source(intensity),
            output=output)
        call = self._channel.unary_unary(
            "/cuimg.v1.Imaging/Label", request_serializer=label_pb2.LabelRequest.SerializeToString,
            response_deserializer=segmentation.decode_label_response)
        try:
            (labels, count, columns), rpc = call.with_call(request, timeout=self.timeout)
        except grpc.RpcError as e:
            raise CuimgError.of(e) from None
        self.last_timing = wire_contract.timing_text(rpc.trailing_metadata())
        ndim = 3 if labels.image.depth > 1 or self._one_slice(image) else 2
        return (self._results(image, [labels], keep_resident, return_data)[0],
                segmentation.regions(columns, count, ndim))

    def pyramid(self, image: ImageLike, *, levels: int = 31, ratio: float = 1.05,
                mode: str = "from_base", min_width: int = 0, min_height: int = 0,
                output_dtype: Any = np.float32, keep_resident: bool = False,
                return_data: bool = True, ttl_seconds: int = 0) -> list[Any]:
        """Every level (level 0 = the input size) as a list of writable arrays of
        `output_dtype` (float32, or the input's dtype: rounded and saturated); levels stop
        before one narrower than min_width or lower than min_height (0: 8). With keep_resident
        each level is a Resident(handle, array)."""
        modes = {"from_base": pyramid_pb2.PYRAMID_MODE_FROM_BASE, "cascaded": pyramid_pb2.PYRAMID_MODE_CASCADED}
        response = self._call("Pyramid", pyramid_pb2.PyramidRequest(
            input=_source(image), levels=levels, ratio=ratio, mode=modes[mode],
            min_width=min_width, min_height=min_height, output_type=pixel_type(output_dtype),
            output=_output_options(keep_resident, return_data, ttl_seconds)))
        return self._results(image, [level.result for level in response.levels], keep_resident,
                             return_data)

    def detect(self, image: ImageLike | None = None, *, encoded: bytes | None = None,
               model: str = "", hit_threshold: float = 0.0, win_stride: int = 0,
               scale: float = 0.0, padding: int = 0, max_levels: int = 0,
               gamma_correction: bool | None = None, grouping: bool = True,
               group_threshold: int | None = None,
               group_eps: float = 0.0) -> list[dict[str, float]]:
        """Pedestrians in a gray (H, W) or BGR/BGRA (H, W, C) uint8 image (or a resident
        handle), or in PNG/JPEG file bytes given as `encoded=` (exactly one of the two): a list
        of dicts x, y, width, height, score, scale, best first. `model` is a name from models();
        the other parameters are DetectPedestriansRequest's (0 and None: the server's
        defaults)."""
        if (image is None) == (encoded is None):
            raise ValueError("detect: pass an image or encoded= bytes, not both")
        request = detection.detect_request(
            image, encoded, _frame_source, model=model, hit_threshold=hit_threshold,
            win_stride=win_stride, scale=scale, padding=padding, max_levels=max_levels,
            gamma_correction=gamma_correction, grouping=grouping,
            group_threshold=group_threshold, group_eps=group_eps)
        return detection.detections(self._call("DetectPedestrians", request))

    def detect_stream(self, frames: Iterable[Any], *, timeout: float | None = None,
                      **parameters: Any) -> Iterator[dict[str, Any]]:
        """Pedestrians in a sequence of frames over one DetectStream call: an iterator of one
        dict per frame, in the frames' order: index (from 0), id, detections (as detect()
        returns them), levels, windows, model.

        frames: an iterable (a generator may be endless, e.g. a camera); each item is a frame, or
        an (id, frame) pair whose id (a str of at most 128 bytes) comes back in the result. A
        frame is a gray (H, W) or BGR/BGRA (H, W, C) uint8 array, PNG/JPEG file bytes, or a
        resident handle (str). The iterable is read on a gRPC thread only as fast as the server
        takes frames (it holds at most 4 per stream): a caller that reads results slowly holds
        the frames back, beyond what gRPC's flow-control windows buffer.
        parameters: detect()'s keyword arguments (model, hit_threshold, ...), for every frame.
        timeout: the whole stream's deadline in seconds (None: none, for endless sources).

        A frame the server refuses ends the stream: the results before it are yielded, then
        CuimgError is raised naming the field and the frame ("request.input.encoded: ... (frame
        7, id '...')"). Closing the iterator early cancels the stream."""
        base = detection.detect_request(None, None, _frame_source, **parameters)
        self.last_timing = yield from detection.stream(self._stub, frames, base, _frame_source,
                                                       timeout)

    def server_info(self) -> server_info_pb2.ServerInfo:
        """GetServerInfo, asked once per Client: the DICOM transfer syntaxes the server decodes
        and encodes (cuimg/dicom_frames.py). A server without it (older) gives an empty one."""
        if self._server_info is None:
            try:
                self._server_info = self._call("GetServerInfo", server_info_pb2.GetServerInfoRequest())
            except CuimgError as e:
                if e.code != grpc.StatusCode.UNIMPLEMENTED:
                    raise
                self._server_info = server_info_pb2.ServerInfo()
        return self._server_info

    def models(self) -> list[dict[str, Any]]:
        """The detector models the server has loaded: dicts name, window_width, window_height,
        descriptor_size, description, gamma_correction."""
        response = self._call("ListModels", detection_pb2.ListModelsRequest())
        return [{"name": m.name, "window_width": m.window_width,
                 "window_height": m.window_height, "descriptor_size": m.descriptor_size,
                 "description": m.description, "gamma_correction": m.gamma_correction}
                for m in response.models]

    def health(self, service: str = "") -> str:
        """grpc.health.v1 Check: "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN" for
        `service` ("" the whole server, or "cuimg.v1.Imaging"). A server that cannot be reached
        raises CuimgError (UNAVAILABLE)."""
        check = self._channel.unary_unary("/grpc.health.v1.Health/Check",
                                          request_serializer=_wire.encode_health_request,
                                          response_deserializer=_wire.decode_health_response)
        try:
            return check(service, timeout=self.timeout)
        except grpc.RpcError as e:
            raise CuimgError.of(e) from None

    def deform(self, mesh: str | tuple[Any, Any], lattice: deform_pb2.Lattice, *,
               keep_resident: bool = False, return_data: bool = True,
               ttl_seconds: int = 0) -> Any:
        """Free-form deformation of a mesh ((vertices Nx3, triangles Mx3) or a resident handle)
        by a cuimg.v1.Lattice; returns (positions Nx3 float32, normals Nx3 float32), writable.
        With keep_resident the deformed mesh stays on the server: Resident(handle, (positions,
        normals) or None when return_data=False)."""
        source = deform_pb2.MeshSource(handle=mesh) if isinstance(mesh, str) else \
            deform_pb2.MeshSource(mesh=_mesh(*mesh))
        response = self._call("Deform", deform_pb2.DeformRequest(
            mesh=source, lattice=lattice,
            outputs=deform_pb2.DEFORM_OUTPUTS_POSITIONS_AND_NORMALS,
            output=_output_options(keep_resident, return_data, ttl_seconds)))
        data = (_floats(response.positions), _floats(response.normals)) if return_data else None
        return Resident(response.handle, data) if keep_resident else data

    def upload(self, image: Any = None, *, mesh: tuple[Any, Any] | None = None,
               spacing: Spacing | None = None, ttl_seconds: int = 0,
               chunk_bytes: int = 4 << 20) -> str:
        """Keeps an image/volume array (or mesh=(vertices, triangles)) on the server, sent in
        messages of about `chunk_bytes`; returns its handle, usable in place of an array by
        morphology/gradient/pyramid/detect/deform and by download()."""
        if (image is None) == (mesh is None):
            raise ValueError("upload: pass an image or mesh=, not both")
        if mesh is not None:
            body = _mesh(*mesh)
            split = len(body.positions)  # the stream's bytes: positions, then triangles
            data = memoryview(body.positions + body.triangles)
            body.positions = bytes(data[:min(chunk_bytes, split)])
            body.triangles = bytes(data[split:max(chunk_bytes, split)])
            first = resident_pb2.UploadRequest(mesh=body, ttl_seconds=ttl_seconds)
        else:
            array = little_endian(image)
            body = _image_header(array, spacing, colour=False)
            data = memoryview(array).cast("B")
            body.data = bytes(data[:chunk_bytes])
            first = resident_pb2.UploadRequest(image=body, ttl_seconds=ttl_seconds)

        def messages() -> Iterable[resident_pb2.UploadRequest]:
            yield first
            for at in range(chunk_bytes, len(data), chunk_bytes):
                yield resident_pb2.UploadRequest(chunk=bytes(data[at:at + chunk_bytes]))

        try:
            response = self._stub.Upload(messages(), timeout=self.timeout)
        except grpc.RpcError as e:
            raise CuimgError.of(e) from None
        if image is not None and self._one_slice(image):
            self._one_slice_handles.add(response.object.handle)
        return response.object.handle

    def download(self, handle: str) -> Any:
        """A resident object's contents: an image/volume as a writable array of its shape and
        dtype, or a mesh as (vertices Nx3 float32, triangles Mx3 uint32)."""
        try:
            replies = self._stub.Download(resident_pb2.DownloadRequest(handle=handle),
                                          timeout=self.timeout)
            first = next(replies, None)
            if first is None:
                raise CuimgError(grpc.StatusCode.INTERNAL, "Download: the server sent nothing")
            if first.HasField("mesh"):
                sizes = (first.mesh.vertex_count * 12, first.mesh.triangle_count * 12)
                flat = np.empty(sum(sizes), np.uint8)
                head = first.mesh.positions + first.mesh.triangles
            elif first.HasField("image"):
                shape = _image_shape(first.image)
                dtype = DTYPES[first.image.pixel_type]
                flat = np.empty(int(np.prod(shape)) * dtype.itemsize, np.uint8)
                head = first.image.data
            else:
                raise CuimgError(grpc.StatusCode.INTERNAL, "Download: no object in the first reply")
            filled = 0
            for chunk in [head] + [r.chunk for r in replies]:
                if filled + len(chunk) > flat.size:
                    raise CuimgError(grpc.StatusCode.INTERNAL,
                                     "Download: more bytes than the object")
                flat[filled:filled + len(chunk)] = np.frombuffer(chunk, np.uint8)
                filled += len(chunk)
        except grpc.RpcError as e:
            raise CuimgError.of(e) from None
        if filled != flat.size:
            raise CuimgError(grpc.StatusCode.INTERNAL,
                             f"Download: {filled} of {flat.size} bytes")
        if first.HasField("mesh"):
            return (flat[:sizes[0]].view("<f4").reshape(-1, 3).astype(np.float32, copy=False),
                    flat[sizes[0]:].view("<u4").reshape(-1, 3).astype(np.uint32, copy=False))
        if handle in self._one_slice_handles and len(shape) == 2:
            shape = (1,) + shape
        return flat.view(dtype.newbyteorder("<")).reshape(shape).astype(dtype, copy=False)

    def shared_memory(self, size: int) -> SharedRegion:
        """A SharedRegion of `size` bytes registered with the server (same host only)."""
        return SharedRegion(self, size)

    def release(self, handle: str) -> None:
        """Frees a resident object (NOT_FOUND when it is not, or no longer, there)."""
        self._call("Release", resident_pb2.ReleaseRequest(handle=handle))
        self._one_slice_handles.discard(handle)

    def list_resident(self) -> list[tuple[str, str, int]]:
        """(handle, kind name, size_bytes) of every resident object of this caller."""
        response = self._call("ListResident", resident_pb2.ListResidentRequest())
        return [(o.handle, resident_pb2.ResidentKind.Name(o.kind), o.size_bytes)
                for o in response.objects]
