"""Batches (the API's `inputs`, types.proto): several images in one call, run with one set of
parameters, answered with one result per image in order. Client.morphology, gradient, pyramid
and detect take a list of images for it and return a list: an image's result as the call with
that image alone returns it, or, for an image the server refused or failed, a CuimgError in its
place (not raised: the other images' results are good), of the class its reason gives, whose
`field` names the entry ("inputs[3].image.width")."""
from __future__ import annotations

from typing import Any, Callable, Sequence, TypeGuard

import grpc

from cuimg.errors import CuimgError, entry_error


def is_batch(images: Any) -> TypeGuard[Sequence[Any]]:
    """Whether a call's image argument is a batch: a list or tuple of images."""
    return isinstance(images, (list, tuple))


def check(images: Sequence[Any]) -> None:
    """ValueError for an empty batch (the server takes `inputs` only with entries)."""
    if len(images) == 0:
        raise ValueError("a batch needs at least one image")


def results(response: Any, images: Sequence[Any], convert: Callable[[Any, Any], Any]) -> list[Any]:
    """One value per image of a batch response: convert(image, entry response), or the entry's
    CuimgError. A response with another count of results raises CuimgError (INTERNAL)."""
    if len(response.results) != len(images):
        raise CuimgError(
            grpc.StatusCode.INTERNAL, f"{len(response.results)} results for {len(images)} images"
        )
    out = []
    for image, entry in zip(images, response.results):
        if entry.status.code != 0:
            out.append(entry_error(entry.status))
        else:
            out.append(convert(image, entry.response))
    return out
