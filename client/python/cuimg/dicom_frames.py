"""A compressed DICOM series sent as it is stored (issue 49), as the CLI sends it
(client/commands/stored_frames.h): the frames of a series whose files are all single-frame,
encapsulated in one lossless (or HTJ2K) syntax the server decodes (Client.server_info()) and of
one pixel module go over the wire as ImageSource.dicom_frames, with each slice's rescale; the
server decodes and rescales them to what read_series would have given. Any other series is
decoded here by read_series. The reading rules are cuimg/dicom.py's (the one reader contract).

    from cuimg import dicom_frames
    with cuimg.Client(target) as c:
        dicom_frames.morphology_series(c, "ct/", "ct_dilated/", "dilate:rect:3x3x3",
                                       output_syntax="htj2k")

StoredFrames is an image Client.morphology and Client.label take like an array (unary; the
result is an int16 or float32 array of its shape)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
from pydicom import encaps
from pydicom.filebase import DicomFileLike
from pydicom.filewriter import write_dataset, write_file_meta_info

from cuimg import dicom
from cuimg._atomic import staged_folder
from cuimg.dicom_pixels import HTJ2K_SYNTAXES
from cuimg.messages import Spacing, parse_steps
from cuimg.sources import _source
from cuimg.v1 import morphology_pb2, types_pb2

HTJ2K_LOSSLESS = "1.2.840.10008.1.2.4.201"
# What is sent as frames where the server decodes it (the CLI's SendableSyntaxes): the lossless
# encapsulated syntaxes (RLE, JPEG lossless, JPEG-LS lossless, JPEG 2000 lossless), whose values
# do not depend on the decoder, and HTJ2K of any kind, which the client cannot decode. Lossy
# JPEG, JPEG-LS and JPEG 2000 are decoded here, as read_series decodes them.
SENDABLE = frozenset(
    [
        "1.2.840.10008.1.2.5",
        "1.2.840.10008.1.2.4.57",
        "1.2.840.10008.1.2.4.70",
        "1.2.840.10008.1.2.4.80",
        "1.2.840.10008.1.2.4.90",
        *HTJ2K_SYNTAXES,
    ]
)
OUTPUT_SYNTAXES = ("explicit", "htj2k", "j2k")


@dataclass
class StoredFrames:
    """A series as its stored frames, one per slice in z order, of one syntax and pixel module."""

    transfer_syntax_uid: str
    rows: int
    columns: int
    bits_allocated: int
    bits_stored: int
    signed: bool
    monochrome1: bool
    frames: list[bytes] = field(repr=False)
    slopes: list[float] = field(repr=False)
    intercepts: list[float] = field(repr=False)
    # What the server decodes them to: float32 when a slope or intercept is fractional.
    dtype: Any = np.int16

    @property
    def shape(self) -> tuple[int, int, int]:
        return (len(self.frames), self.rows, self.columns)

    def nbytes_encoded(self) -> int:
        return sum(len(f) for f in self.frames)

    def dicom_frames_source(self, spacing: Spacing | None = None) -> types_pb2.ImageSource:
        """The ImageSource carrying the frames (spacing (x, y, z) mm when given)."""
        photometric = (
            types_pb2.PHOTOMETRIC_INTERPRETATION_MONOCHROME1
            if self.monochrome1
            else types_pb2.PHOTOMETRIC_INTERPRETATION_MONOCHROME2
        )
        source = types_pb2.ImageSource(
            dicom_frames=types_pb2.DicomFrames(
                transfer_syntax_uid=self.transfer_syntax_uid,
                pixel_module=types_pb2.DicomPixelModule(
                    rows=self.rows,
                    columns=self.columns,
                    samples_per_pixel=1,
                    bits_allocated=self.bits_allocated,
                    bits_stored=self.bits_stored,
                    pixel_signed=self.signed,
                    photometric_interpretation=photometric,
                ),
                frames=[
                    types_pb2.DicomFrame(data=f, rescale_slope=s, rescale_intercept=i)
                    for f, s, i in zip(self.frames, self.slopes, self.intercepts)
                ],
            )
        )
        if spacing is not None:
            x, y, z = spacing
            source.dicom_frames.spacing.x_mm, source.dicom_frames.spacing.y_mm = x, y
            source.dicom_frames.spacing.z_mm = z
        return source


def _syntax(ds) -> str:
    return str(ds.file_meta.get("TransferSyntaxUID", "")) if hasattr(ds, "file_meta") else ""


def read_series_frames(
    path: str, syntaxes: Iterable[str], series_uid: str | None = None
) -> tuple[StoredFrames | np.ndarray, tuple[float, float, float], list]:
    """As dicom.read_series, except that a series whose files are all single-frame, encapsulated
    in one of `syntaxes` (a server's decodable syntaxes) that is SENDABLE, with one pixel module
    (bits allocated and stored, sign, photometric interpretation) comes back as StoredFrames, not
    decoded. The same checks and refusals (DicomError) as read_series, but for the decode and the
    int16 range of rescaled values, which the server applies by the same rule."""
    slices, z_spacing = dicom._ordered_slices(path, series_uid)
    spacing = dicom._spacing(slices, z_spacing)
    datasets = [s["ds"] for s in slices]
    wanted = set(syntaxes) & SENDABLE

    def module(s):
        ds = s["ds"]
        return (
            _syntax(ds),
            int(ds.BitsAllocated),
            s["bits"],
            s["signed"],
            str(ds.PhotometricInterpretation),
            dicom._uint(ds, "NumberOfFrames", 1),
        )

    first = module(slices[0])
    if first[0] not in wanted or first[5] != 1 or any(module(s) != first for s in slices):
        return dicom._decoded(slices), spacing, datasets
    frames = [next(encaps.generate_pixel_data_frame(ds.PixelData, 1)) for ds in datasets]
    stored = StoredFrames(
        transfer_syntax_uid=first[0],
        rows=int(datasets[0].Rows),
        columns=int(datasets[0].Columns),
        bits_allocated=first[1],
        bits_stored=first[2],
        signed=first[3],
        monochrome1=first[4] == "MONOCHROME1",
        frames=frames,
        slopes=[s["slope"] for s in slices],
        intercepts=[s["intercept"] for s in slices],
        dtype=np.float32 if dicom._is_floating(slices) else np.int16,
    )
    return stored, spacing, datasets


def morphology_series(
    client,
    input_path: str,
    output_path: str,
    steps: str | Sequence[morphology_pb2.MorphologyStep],
    *,
    output_syntax: str = "explicit",
    send_frames: bool = True,
    series_uid: str | None = None,
    derivation: str | None = None,
    uid_root: str | None = None,
) -> str:
    """`cuimg morphology --input=SERIES --output=FOLDER` from Python: reads the series (as stored
    frames where `client`'s server decodes the syntax and send_frames), runs the steps in one
    Morphology call, writes the derived series; returns its SeriesInstanceUID.

    output_syntax: "explicit" (dicom.write_series), or "htj2k": the result as HTJ2K lossless
    frames encoded by the server (its server_info lists the syntax among those it encodes) and
    written as they are. ValueError for "htj2k" from a server that does not encode it, for "j2k"
    (the Python client has no JPEG 2000 encoder: write it with the CLI), and for a float32
    series (lossless frames hold integers)."""
    if output_syntax not in OUTPUT_SYNTAXES:
        raise ValueError(f"output_syntax: '{output_syntax}' is not one of {OUTPUT_SYNTAXES}")
    info = client.server_info()
    if output_syntax == "j2k":
        raise ValueError(
            "output_syntax='j2k': the server encodes HTJ2K only and the Python "
            "client has no JPEG 2000 encoder (the CLI has: --output_syntax=j2k)"
        )
    if output_syntax == "htj2k" and HTJ2K_LOSSLESS not in info.encodable_transfer_syntaxes:
        raise ValueError(
            "output_syntax='htj2k': the server does not encode HTJ2K (its "
            "server_info lists no encodable syntax); use output_syntax='explicit'"
        )
    syntaxes = list(info.decodable_transfer_syntaxes) if send_frames else []
    volume, spacing, datasets = read_series_frames(input_path, syntaxes, series_uid)
    if output_syntax != "explicit" and np.dtype(volume.dtype) != np.int16:
        raise ValueError(
            f"output_syntax='{output_syntax}': the series reads as float32 (a "
            "fractional rescale); lossless frames hold integers"
        )
    steps = parse_steps(steps) if isinstance(steps, str) else list(steps)
    derivation = derivation or "cuimg morphology"
    if output_syntax == "explicit":
        result = client.morphology(volume, steps, spacing=spacing, stream=False)
        return dicom.write_series(datasets, result, output_path, derivation, uid_root)
    source = (
        volume.dicom_frames_source(spacing)
        if isinstance(volume, StoredFrames)
        else _source(volume, spacing)
    )
    response = client._call(
        "Morphology",
        morphology_pb2.MorphologyRequest(
            input=source,
            steps=steps,
            output=types_pb2.OutputOptions(frame_encoding=types_pb2.FRAME_ENCODING_HTJ2K_LOSSLESS),
        ),
    )
    encoded = response.result.dicom_frames
    if len(encoded.frames) != len(datasets):
        raise ValueError(
            f"the server returned {len(encoded.frames)} frames for " f"{len(datasets)} slices"
        )
    return write_encoded_series(
        datasets,
        encoded.transfer_syntax_uid,
        [f.data for f in encoded.frames],
        output_path,
        derivation,
        uid_root,
    )


def write_encoded_series(
    datasets: Sequence,
    transfer_syntax_uid: str,
    frames: Sequence[bytes],
    directory: str,
    derivation: str = "cuimg",
    uid_root: str | None = None,
) -> str:
    """Writes a new series as dicom.write_series does (tags, UIDs, a folder renamed into place),
    each slice holding its frame (signed 16-bit values, one frame per single-frame source
    dataset) encapsulated under `transfer_syntax_uid` (HTJ2K lossless from a server's
    frame_encoding), RescaleSlope 1, RescaleIntercept 0; returns its SeriesInstanceUID. Written
    with pydicom's file writer directly: Debian's pydicom 2.3 does not know the HTJ2K UIDs, which
    its save_as refuses."""
    if len(frames) != len(datasets) or len({id(ds) for ds in datasets}) != len(datasets):
        raise ValueError("write_encoded_series needs one frame per single-frame source dataset")
    prefix, series_uid = dicom._new_series(uid_root)
    with staged_folder(directory) as folder:
        for z, (source, frame) in enumerate(zip(datasets, frames)):
            ds = dicom._derived(source, derivation, prefix, series_uid, "1", "0")
            ds.file_meta.TransferSyntaxUID = transfer_syntax_uid
            ds.add_new(0x7FE00010, "OB", encaps.encapsulate([bytes(frame)]))
            ds["PixelData"].is_undefined_length = True
            with open(os.path.join(folder, f"slice_{z:04d}.dcm"), "wb") as f:
                f.write(b"\0" * 128 + b"DICM")
                fp = DicomFileLike(f)
                fp.is_little_endian, fp.is_implicit_VR = True, False
                write_file_meta_info(fp, ds.file_meta, enforce_standard=True)
                write_dataset(fp, ds)
    return series_uid
