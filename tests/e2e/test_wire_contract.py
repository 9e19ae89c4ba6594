"""The Python client's wire contract (cuimg/wire_contract.py) without a server: the timing
trailer, the retry hints, and ErrorInfo decoded by the package's own decoder, held equal to
protobuf's encoding of google.rpc.Status (the generated modules of the vendored protos); the
error classes by reason (cuimg/errors.py) cover every reason error_reason.proto lists."""
import unittest

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

from cuimg import errors, wire_contract
from cuimg.v1 import error_reason_pb2


def status_bytes(*details, code=3, message="m"):
    status = status_pb2.Status(code=code, message=message)
    for detail in details:
        packed = any_pb2.Any()
        packed.Pack(detail)
        status.details.append(packed)
    return status.SerializeToString()


class WireContract(unittest.TestCase):
    def test_timing_trailer(self):
        trailers = (
            ("other", "x"),
            ("cuimg-timing", "queue_us=1.5 kernel_us=20.0 device=0 decode_device=-1"),
        )
        self.assertEqual(
            wire_contract.timing_text(trailers),
            "queue_us=1.5 kernel_us=20.0 device=0 decode_device=-1",
        )
        self.assertEqual(
            wire_contract.timing(trailers),
            {"queue_us": 1.5, "kernel_us": 20.0, "device": 0.0, "decode_device": -1.0},
        )
        # Malformed fields are skipped, unknown keys kept; no trailer reads empty.
        self.assertEqual(
            wire_contract.parse_timing("a=1 b= c=x =2 d e_us=3e2"),
            {"a": 1.0, "": 2.0, "e_us": 300.0},
        )
        self.assertEqual(wire_contract.timing(None), {})
        self.assertEqual(wire_contract.timing_text(()), "")

    def test_retry_hints(self):
        trailers = (("cuimg-retry-after-ms", "100"), ("grpc-retry-pushback-ms", "-1"))
        self.assertEqual(wire_contract.retry_after_ms(trailers), 100)
        self.assertEqual(wire_contract.retry_pushback_ms(trailers), -1)
        self.assertIsNone(wire_contract.retry_after_ms(()))
        self.assertIsNone(wire_contract.retry_after_ms((("cuimg-retry-after-ms", "soon"),)))

    def test_error_info_equals_protobufs(self):
        info = error_details_pb2.ErrorInfo(reason="INVALID_ARGUMENT", domain="cuimg.io")
        info.metadata["zeta"] = "z"
        info.metadata["field"] = "steps[2].element.width"
        info.metadata["alpha"] = "a"
        # Another detail first: the ErrorInfo is found by its type.
        data = status_bytes(duration_pb2.Duration(seconds=3), info)
        self.assertEqual(
            wire_contract.decode_error_info(data),
            wire_contract.ErrorInfo("INVALID_ARGUMENT", "cuimg.io", "steps[2].element.width"),
        )
        trailers = (("grpc-status-details-bin", data),)
        self.assertEqual(wire_contract.error_info(trailers).field, "steps[2].element.width")

    def test_error_info_absent_or_unreadable(self):
        no_field = error_details_pb2.ErrorInfo(reason="INTERNAL", domain="cuimg.io")
        self.assertEqual(
            wire_contract.decode_error_info(status_bytes(no_field)),
            wire_contract.ErrorInfo("INTERNAL", "cuimg.io", ""),
        )
        self.assertIsNone(wire_contract.decode_error_info(status_bytes()))
        self.assertIsNone(wire_contract.error_info(()))
        self.assertIsNone(wire_contract.error_info((("grpc-status-details-bin", b"\x1a\x09ab"),)))

    def test_every_documented_reason_has_an_error_class(self):
        prefix = "ERROR_REASON_"
        documented = {
            v.name[len(prefix) :]
            for v in error_reason_pb2.ErrorReason.DESCRIPTOR.values
            if v.number != 0
        }
        self.assertEqual(set(errors.REASON_CLASSES), documented)
        for cls in errors.REASON_CLASSES.values():
            self.assertTrue(issubclass(cls, errors.CuimgError))

    def test_errors_are_typed_by_reason_then_by_code(self):
        info = wire_contract.ErrorInfo("ELEMENT_TOO_LARGE", "cuimg.io", "steps[0].element.width")
        e = errors.make_error(grpc.StatusCode.INVALID_ARGUMENT, "steps[0].element.width: big", info)
        self.assertIs(type(e), errors.LimitExceededError)
        self.assertEqual(
            (e.code, e.reason, e.field),
            (grpc.StatusCode.INVALID_ARGUMENT, "ELEMENT_TOO_LARGE", "steps[0].element.width"),
        )
        self.assertEqual(
            str(e), "INVALID_ARGUMENT [ELEMENT_TOO_LARGE]: steps[0].element.width: big"
        )
        busy = errors.make_error(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "server busy",
            wire_contract.ErrorInfo("OVERLOADED", "cuimg.io", ""),
        )
        self.assertIsInstance(busy, errors.RetryableError)
        # No ErrorInfo (gRPC's own errors), or a reason from a newer server: by code.
        late = errors.make_error(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
        self.assertIs(type(late), errors.DeadlineExceededError)
        self.assertEqual((late.reason, late.field), ("", ""))
        newer = errors.make_error(
            grpc.StatusCode.NOT_FOUND,
            "x",
            wire_contract.ErrorInfo("SOMETHING_NEW", "cuimg.io", "f"),
        )
        self.assertIs(type(newer), errors.NotFoundError)
        self.assertIs(type(errors.make_error(grpc.StatusCode.ABORTED, "x")), errors.CuimgError)


if __name__ == "__main__":
    unittest.main()
