"""Pedestrian detection's calls (DetectionCalls, a base of Client: detect, detect_stream, models)
and their messages: Client.detect()'s keyword arguments as a DetectPedestriansRequest, responses
as dicts, and the frames and results of one DetectStream call (Client.detect_stream)."""
from __future__ import annotations

from typing import Any, Callable, Generator, Iterable, Iterator

import grpc

from cuimg import batches, wire_contract
from cuimg.errors import CuimgError
from cuimg.sources import ImageLike, _frame_source
from cuimg.v1 import detection_pb2, types_pb2

# An image (array, resident handle, array in shared memory) as the request's input.
ToSource = Callable[[Any], types_pb2.ImageSource]


def detections(response: detection_pb2.DetectPedestriansResponse) -> list[dict[str, float]]:
    """The response's detections as dicts x, y, width, height, score, scale."""
    return [
        {
            "x": d.x,
            "y": d.y,
            "width": d.width,
            "height": d.height,
            "score": d.score,
            "scale": d.scale,
        }
        for d in response.detections
    ]


def detect_request(
    image: Any,
    encoded: bytes | None,
    to_source: ToSource,
    *,
    model: str = "",
    hit_threshold: float = 0.0,
    win_stride: int = 0,
    scale: float = 0.0,
    padding: int = 0,
    max_levels: int = 0,
    gamma_correction: bool | None = None,
    grouping: bool = True,
    group_threshold: int | None = None,
    group_eps: float = 0.0,
) -> detection_pb2.DetectPedestriansRequest:
    """detect()'s request; without an image or encoded bytes, its parameters only."""
    request = detection_pb2.DetectPedestriansRequest(
        model=model,
        hit_threshold=hit_threshold,
        win_stride=win_stride,
        scale=scale,
        padding=padding,
        max_levels=max_levels,
        group_eps=group_eps,
        grouping=detection_pb2.GROUPING_GROUP_RECTANGLES
        if grouping
        else detection_pb2.GROUPING_NONE,
    )
    if encoded is not None:
        request.input.encoded = encoded
    elif image is not None:
        request.input.CopyFrom(to_source(image))
    if gamma_correction is not None:
        request.gamma_correction = gamma_correction
    if group_threshold is not None:
        request.group_threshold = group_threshold
    return request


def frame_source(frame: Any, to_source: ToSource) -> types_pb2.ImageSource:
    """A frame as an ImageSource: PNG/JPEG file bytes as `encoded`, anything else by
    `to_source`."""
    if isinstance(frame, (bytes, bytearray, memoryview)):
        return types_pb2.ImageSource(encoded=bytes(frame))
    return to_source(frame)


def stream(
    stub: Any,
    frames: Iterable[Any],
    base: detection_pb2.DetectPedestriansRequest,
    to_source: ToSource,
    timeout: float | None,
) -> Generator[dict[str, Any], None, str]:
    """Client.detect_stream's results, one dict per frame, each frame sent as `base` with the
    frame as its input; returns (as the generator's value) the call's timing trailer. A failed
    call raises CuimgError; closing the generator early cancels the call."""

    def messages() -> Iterator[detection_pb2.DetectFrame]:
        for item in frames:
            frame_id, frame = item if isinstance(item, tuple) else ("", item)
            request = detection_pb2.DetectPedestriansRequest()
            request.CopyFrom(base)
            request.input.CopyFrom(frame_source(frame, to_source))
            yield detection_pb2.DetectFrame(request=request, id=frame_id)

    call = stub.DetectStream(messages(), timeout=timeout)
    try:
        for reply in call:
            yield {
                "index": reply.index,
                "id": reply.id,
                "detections": detections(reply.result),
                "levels": reply.result.levels,
                "windows": reply.result.windows,
                "model": reply.result.model,
            }
        return wire_contract.timing_text(call.trailing_metadata())
    except grpc.RpcError as e:
        raise CuimgError.of(e) from None
    finally:
        call.cancel()  # no-op once the stream has ended; stops it when the caller left early


def models(response: detection_pb2.ListModelsResponse) -> list[dict[str, Any]]:
    """Client.models: each model of a ListModels reply as a dict."""
    return [
        {
            "name": m.name,
            "window_width": m.window_width,
            "window_height": m.window_height,
            "descriptor_size": m.descriptor_size,
            "description": m.description,
            "gamma_correction": m.gamma_correction,
        }
        for m in response.models
    ]


class DetectionCalls:
    """Client's detection RPCs. A base of Client, which provides the stub, the unary call and the
    timing trailer these use."""

    _stub: Any
    timeout: float | None
    last_timing: str

    def _call(self, method: str, request: Any) -> Any:
        raise NotImplementedError  # Client._call

    def detect(
        self,
        image: ImageLike | None = None,
        *,
        encoded: bytes | None = None,
        model: str = "",
        hit_threshold: float = 0.0,
        win_stride: int = 0,
        scale: float = 0.0,
        padding: int = 0,
        max_levels: int = 0,
        gamma_correction: bool | None = None,
        grouping: bool = True,
        group_threshold: int | None = None,
        group_eps: float = 0.0,
    ) -> list[dict[str, float]]:
        """Pedestrians in a gray (H, W) or BGR/BGRA (H, W, C) uint8 image (or a resident
        handle), or in PNG/JPEG file bytes given as `encoded=` (exactly one of the two): a list
        of dicts x, y, width, height, score, scale, best first. `model` is a name from models();
        the other parameters are DetectPedestriansRequest's (0 and None: the server's
        defaults). A list of images (arrays, handles, or PNG/JPEG bytes) is a batch, as for
        morphology: a list of detection lists."""
        if (image is None) == (encoded is None):
            raise ValueError("detect: pass an image or encoded= bytes, not both")
        frames = image if batches.is_batch(image) else None
        request = detect_request(
            None if frames is not None else image,
            encoded,
            _frame_source,
            model=model,
            hit_threshold=hit_threshold,
            win_stride=win_stride,
            scale=scale,
            padding=padding,
            max_levels=max_levels,
            gamma_correction=gamma_correction,
            grouping=grouping,
            group_threshold=group_threshold,
            group_eps=group_eps,
        )
        if frames is None:
            return detections(self._call("DetectPedestrians", request))
        batches.check(frames)
        request.inputs.extend(frame_source(f, _frame_source) for f in frames)
        return batches.results(
            self._call("DetectPedestrians", request), frames, lambda _, r: detections(r)
        )

    def detect_stream(
        self, frames: Iterable[Any], *, timeout: float | None = None, **parameters: Any
    ) -> Iterator[dict[str, Any]]:
        """Pedestrians in a sequence of frames over one DetectStream call: an iterator of one
        dict per frame, in the frames' order: index (from 0), id, detections (as detect()
        returns them), levels, windows, model.

        frames: an iterable (a generator may be endless, e.g. a camera); each item is a frame, or
        an (id, frame) pair whose id (a str of at most 128 bytes) comes back in the result. A
        frame is a gray (H, W) or BGR/BGRA (H, W, C) uint8 array, PNG/JPEG file bytes, or a
        resident handle (str). The iterable is read on a gRPC thread only as fast as the server
        takes frames (it holds at most 16 per stream by default): a caller that reads results
        slowly holds the frames back, beyond what gRPC's flow-control windows buffer.
        parameters: detect()'s keyword arguments (model, hit_threshold, ...), for every frame.
        timeout: the whole stream's deadline in seconds (None: none, for endless sources).

        A frame the server refuses ends the stream: the results before it are yielded, then
        CuimgError is raised naming the field and the frame ("request.input.encoded: ... (frame
        7, id '...')"). Closing the iterator early cancels the stream."""
        base = detect_request(None, None, _frame_source, **parameters)
        self.last_timing = yield from stream(self._stub, frames, base, _frame_source, timeout)

    def models(self) -> list[dict[str, Any]]:
        """The detector models the server has loaded: dicts name, window_width, window_height,
        descriptor_size, description, gamma_correction."""
        return models(self._call("ListModels", detection_pb2.ListModelsRequest()))
