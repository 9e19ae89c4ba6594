"""Volumes through ProcessVolumeStream, split over several connections, as the cuimg CLI does
(client/commands/volume_stream.cc): the output's z range is split into K parts, each streamed on
its own channel as a volume of its own with the z halo the server uses between slabs, and each
part keeps only its own slices. The result equals the unary RPC's bit for bit.

Copies: a slab message is built from a memoryview of the input array (one copy, into the message
gRPC sends); a result slab is decoded as a view of the received buffer and copied once, into the
preallocated output arrays. Nothing is concatenated.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Sequence

import grpc
import numpy as np

from cuimg import _wire, wire_contract
from cuimg.messages import little_endian
from cuimg.shared_region import ShmArray
from cuimg.messages import SEGMENTATION_OPS
from cuimg.v1 import morphology_pb2, streaming_pb2

METHOD = "/cuimg.v1.Imaging/ProcessVolumeStream"
# How long a part that failed UNAVAILABLE waits for its channel to connect before it is streamed
# once more. Debian's gRPC 1.51 now and then fails a local connect() that was only in progress
# (grpc/grpc#35064); the CLI waits as long (client/commands/volume_stream.cc, kReconnectWait).
RECONNECT_WAIT_S = 3.0


# The global steps: the segmentation steps but threshold (pixel by pixel).
GLOBAL_OPS = frozenset(op for name, op in SEGMENTATION_OPS.items() if name != "threshold")


class Part(NamedTuple):
    """One stream's share: output slices [keep_begin, keep_end) computed from input slices
    [in_begin, in_end)."""

    in_begin: int
    in_end: int
    keep_begin: int
    keep_end: int


def z_reach(steps: Sequence[morphology_pb2.MorphologyStep]) -> int:
    """The slices either side of an output slice whose input it depends on, for a Morphology
    chain in voxels (the CLI's HeaderZReach, which a C++ test holds equal to the server's; not
    meaningful for elements in millimetres, which only the server resolves): for each
    erosion or dilation of the chain (OPEN, CLOSE, GRADIENT, TOP_HAT and BLACK_HAT count two,
    times their iterations), the element's larger z extent from its anchor, up to the chain's
    first global step (from there the server holds the whole volume); 0 for 2D elements.
    Gradient (the RPC) works per slice: its reach is 0."""
    reach = 0
    single = (morphology_pb2.MORPHOLOGY_OP_ERODE, morphology_pb2.MORPHOLOGY_OP_DILATE)
    for step in steps:
        if step.op in GLOBAL_OPS:
            break  # the server gathers the whole volume from here
        element = step.element
        depth = max(1, element.depth)
        anchor = element.anchor_z if element.HasField("anchor_z") else depth // 2
        iterations = max(1, step.iterations)
        reach += max(anchor, depth - 1 - anchor) * (1 if step.op in single else 2) * iterations
    return reach


def split_depth(depth: int, streams: int, reach: int) -> list[Part]:
    """The output's z range [0, depth) split evenly into at most `streams` parts of at least 2
    slices each (so that no part is sent as a 2D image; one part when depth < 4), each widened
    by `reach` slices either side within the volume."""
    count = max(1, min(streams, depth // 2))
    parts = []
    for k in range(count):
        keep_begin, keep_end = depth * k // count, depth * (k + 1) // count
        parts.append(
            Part(max(0, keep_begin - reach), min(depth, keep_end + reach), keep_begin, keep_end)
        )
    return parts


class StreamFailed(Exception):
    """A streamed volume failed: `code` is the grpc.StatusCode, `details` the message, `info`
    the status's ErrorInfo (None for a failure of the client's own or gRPC's)."""

    def __init__(
        self, code: grpc.StatusCode, details: str, info: wire_contract.ErrorInfo | None = None
    ):
        super().__init__(f"{code.name}: {details}")
        self.code, self.details, self.info = code, details, info


@dataclass
class StreamedVolume:
    """The result of stream_volume: one writable array per output plane, and per part its
    `cuimg-timing` trailer and attempts (2 when it was streamed again after UNAVAILABLE)."""

    planes: list[np.ndarray]
    timings: list[str] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)
    result_slabs: int = 0
    # Morphology with elements in millimetres: the elements as the server ran them, in voxels.
    resolved_elements: list[morphology_pb2.StructuringElement] = field(default_factory=list)

    def server_timing(self) -> str:
        """The one stream's trailer, or "stream K/N: trailer" joined by " | " (the CLI's form);
        a part streamed twice is marked "(sent twice)"."""
        if len(self.timings) == 1:
            return ("(sent twice) " if self.attempts[0] > 1 else "") + self.timings[0]
        return " | ".join(
            f"stream {k + 1}/{len(self.timings)}{' (sent twice)' if a > 1 else ''}: {t}"
            for k, (t, a) in enumerate(zip(self.timings, self.attempts))
        )


class _Group:
    """The calls of one volume: the first failure is kept and cancels the others, so the caller
    hears of it without waiting for the rest of the volume."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[grpc.Call] = []
        self.failure: StreamFailed | None = None

    def join(self, call: grpc.Call) -> bool:
        with self._lock:
            if self.failure is not None:
                return False
            self._calls.append(call)
            return True

    def leave(self, call: grpc.Call) -> None:
        with self._lock:
            if call in self._calls:
                self._calls.remove(call)

    def fail(self, failure: StreamFailed) -> None:
        with self._lock:
            if self.failure is not None:
                return
            self.failure = failure
            calls = list(self._calls)
        for call in calls:
            call.cancel()


def _timing(call: grpc.Call) -> str:
    return wire_contract.timing_text(call.trailing_metadata())


def streamable(image: Any, stream: bool | None, threshold: int | None) -> np.ndarray | None:
    """The little-endian array to stream when a Client's `image` (an array, a resident handle or
    a ShmArray) goes through ProcessVolumeStream: a (D, H, W) array with D >= 2 and, unless
    stream=True, more bytes than `threshold` (None: never); else None (stream=False: never)."""
    if (
        stream is False
        or isinstance(image, (str, ShmArray))
        or hasattr(image, "dicom_frames_source")
    ):
        return None  # a handle, shared memory, or a series as its frames (dicom_frames.py)
    array = np.asarray(image)
    if array.ndim != 3 or array.shape[0] < 2:
        return None
    if stream is None and (threshold is None or array.nbytes <= threshold):
        return None
    return little_endian(array)


def stream_volume(
    channels: Sequence[grpc.Channel],
    header: streaming_pb2.VolumeStreamHeader,
    volume: np.ndarray,
    *,
    out_dtype: np.dtype,
    plane_count: int,
    slab_bytes: int = 4 << 20,
    timeout: float | None = None,
    metadata: Sequence[tuple[str, str]] = (),
) -> StreamedVolume:
    """Streams `volume` ((D, H, W), C-contiguous, little-endian, one of cuimg's pixel types) with
    `header` (its operation set; the volume's pixel type, width, height and spacing set, depth
    filled in here per part) over up to len(channels) parts at once, one per channel, in slabs of
    about `slab_bytes`. Returns `plane_count` writable (D, H, W) arrays of `out_dtype` (native
    byte order): the Morphology result, or Gradient's gx, gy, then magnitude and angle when asked.

    `timeout` (seconds, None for none) is the whole volume's deadline, kept by a retry. A part
    that fails UNAVAILABLE is streamed once more when its channel connects within
    RECONNECT_WAIT_S (a part rewrites all its slices, so this is safe); that resend waits for
    its connection if the connect fails again, up to the deadline (without one, until the
    server is back). Raises StreamFailed with
    the first failing part's status (the others are cancelled), or INTERNAL when the server's
    slabs do not cover a part exactly once: never a partially written volume.
    """
    if not channels:
        raise ValueError("stream_volume needs at least one channel")
    depth, height, width = volume.shape
    steps = header.morphology.steps if header.HasField("morphology") else ()
    # Elements in millimetres become voxels on the server only: their z reach is not known here,
    # so such a chain takes one stream, which needs no halo. So does a chain with a global
    # (segmentation) step: any slice's result may depend on every other slice.
    one = any(step.element.HasField("radius") or step.op in GLOBAL_OPS for step in steps)
    parts = split_depth(depth, 1 if one else len(channels), z_reach(steps))
    in_slice = height * width * volume.itemsize
    out_dtype = np.dtype(out_dtype)
    wire_dtype = out_dtype.newbyteorder("<")
    # Uninitialized: every slice is written by exactly one part's reader, or the call fails.
    planes = [np.empty((depth, height, width), out_dtype) for _ in range(plane_count)]
    result = StreamedVolume(planes, [""] * len(parts), [0] * len(parts))
    flat = volume.data.cast("B")
    slab_slices = max(1, slab_bytes // max(1, in_slice))
    deadline = None if timeout is None else time.monotonic() + timeout
    group = _Group()
    slab_counts = [0] * len(parts)

    def send(part: Part, part_header: bytes):
        yield part_header
        for z in range(part.in_begin, part.in_end, slab_slices):
            end = min(z + slab_slices, part.in_end)
            yield _wire.encode_slab(flat[z * in_slice : end * in_slice])

    def stream_part(
        k: int, method: Callable, part: Part, part_header: bytes, resend: bool
    ) -> StreamFailed | None:
        part_depth = part.in_end - part.in_begin
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        # A resend follows a dropped connection, and gRPC 1.51 then now and then fails the next
        # connect() with the old connection's errno (grpc/grpc#35064, "recvmsg: Connection reset
        # by peer"): waiting for the channel to be ready rides through it (within the deadline).
        call = method(
            send(part, part_header),
            timeout=remaining,
            metadata=tuple(metadata),
            wait_for_ready=resend,
        )
        if not group.join(call):
            call.cancel()
            return None
        next_z, problem, slabs = 0, "", 0
        try:
            for z_begin, n, data, elements in call:
                if elements and k == 0:
                    result.resolved_elements = [
                        morphology_pb2.StructuringElement.FromString(bytes(e)) for e in elements
                    ]
                expected = plane_count * n * height * width * wire_dtype.itemsize
                if z_begin != next_z or n < 1 or next_z + n > part_depth or len(data) != expected:
                    problem = problem or (
                        f"the server sent slab z={part.in_begin + z_begin} ({n} slices, "
                        f"{len(data)} bytes) where slice {part.in_begin + next_z} was expected"
                    )
                    continue
                # The slab's slices that are this part's to keep (the others are halo).
                lo = max(next_z, part.keep_begin - part.in_begin)
                hi = min(next_z + n, part.keep_end - part.in_begin)
                if lo < hi:
                    got = np.frombuffer(data, wire_dtype).reshape(plane_count, n, height, width)
                    for p in range(plane_count):
                        planes[p][part.in_begin + lo : part.in_begin + hi] = got[
                            p, lo - next_z : hi - next_z
                        ]
                next_z += n
                slabs += 1
        except grpc.RpcError as e:
            return StreamFailed(
                e.code(), e.details() or "", wire_contract.error_info(e.trailing_metadata())
            )
        finally:
            group.leave(call)
        result.timings[k] = _timing(call)
        slab_counts[k] = slabs
        if problem:
            return StreamFailed(grpc.StatusCode.INTERNAL, problem)
        if next_z != part_depth:
            return StreamFailed(
                grpc.StatusCode.INTERNAL,
                f"the server returned {next_z} of {part_depth} slices from slice "
                f"{part.in_begin}",
            )
        return None

    def run(k: int) -> None:
        try:
            run_part(k)
        except Exception as e:  # noqa: BLE001 - any failure must fail the volume, not skip a part
            group.fail(StreamFailed(grpc.StatusCode.INTERNAL, f"part {k + 1}: {e!r}"))

    def run_part(k: int) -> None:
        part = parts[k]
        part_header = streaming_pb2.VolumeStreamHeader()
        part_header.CopyFrom(header)
        part_depth = part.in_end - part.in_begin
        part_header.volume.depth = part_depth if part_depth > 1 else 0
        message = streaming_pb2.VolumeStreamRequest(header=part_header).SerializeToString()
        method = channels[k].stream_stream(
            METHOD,
            request_serializer=lambda m: m,  # the messages are encoded already
            response_deserializer=_wire.decode_volume_stream_response,
        )
        for attempt in (1, 2):
            result.attempts[k] = attempt
            failure = stream_part(k, method, part, message, resend=attempt == 2)
            if (
                failure is None
                or attempt == 2
                or failure.code != grpc.StatusCode.UNAVAILABLE
                or group.failure is not None
            ):
                break
            wait = (
                RECONNECT_WAIT_S
                if deadline is None
                else min(RECONNECT_WAIT_S, deadline - time.monotonic())
            )
            ready = grpc.channel_ready_future(channels[k])
            try:
                ready.result(timeout=max(0.0, wait))
            except grpc.FutureTimeoutError:
                break
            finally:
                ready.cancel()  # stops its polling thread, which outlives a closed channel
        if failure is not None:
            group.fail(failure)

    others = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(1, len(parts))]
    for t in others:
        t.start()
    run(0)
    for t in others:
        t.join()
    if group.failure is not None:
        raise group.failure
    result.result_slabs = sum(slab_counts)
    return result
