"""cuimg's Python client: NumPy arrays in and out of a cuimg-server.

    import cuimg
    with cuimg.Client("localhost:50051") as c:
        out = c.morphology(volume, "dilate:rect:3x3x3")

The generated API stubs (cuimg.v1.*_pb2) are built from proto/: by CMake into another directory
named cuimg (extend_path joins the two, so either order on PYTHONPATH works), or by
`pip install client/python` into the installed package itself.
"""
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

# The errors by reason (cuimg/errors.py); all are CuimgError.
_ERRORS = [
    "CuimgError",
    "InvalidRequestError",
    "LimitExceededError",
    "NotFoundError",
    "SharedMemoryError",
    "QuotaExceededError",
    "RetryableError",
    "DeadlineExceededError",
    "CallCancelledError",
    "AuthError",
    "ServerError",
]
__all__ = ["Client", "Resident", "element_mm", "parse_steps"] + _ERRORS


def __getattr__(name):
    # Lazily, so `from cuimg.v1 import ...` (the tests, tools) does not need NumPy.
    if name in _ERRORS:
        from cuimg import errors

        return getattr(errors, name)
    if name in __all__:
        from cuimg import client

        return getattr(client, name)
    raise AttributeError(f"module 'cuimg' has no attribute {name!r}")
