"""DICOM series for PACS scripts, by the cuimg CLI's rules (client/io/dicom_series.h), with pydicom
(Debian python3-pydicom) and, for compressed series, GDCM (python3-gdcm): the same decoder as the
CLI, so both read the same stored values from every transfer syntax (JPEG baseline, extended and
lossless, JPEG-LS, RLE, JPEG 2000, deflated, either endianness).

read_series: the slices (single-frame files or the frames of enhanced multi-frame objects) of one
series sorted along the normal of ImageOrientationPatient; stored values masked to BitsStored and
sign-extended, then rescaled. With integer RescaleSlope/RescaleIntercept on every slice the volume
is int16 and a value outside int16 raises ValueError (never clamped); with a fractional slope or
intercept (PET, many MR series) it is float32, never rounded.

write_series: a new derived series; each file keeps every tag of its source slice but gets a new
SeriesInstanceUID and SOPInstanceUID (under uid_root when given), ImageType DERIVED\\SECONDARY,
SeriesNumber + 1000, a SourceImageSequence naming its source, and signed 16-bit pixels (Pixel
Data OW, explicit VR little endian): int16 volumes with slope 1, intercept 0; float32 volumes at
the source slice's own slope and intercept when every value fits 16 bits at that step, else at
slope max|v| / 32767, intercept 0. Patient fields are carried, never printed."""
from __future__ import annotations

import copy
import os
import re
import warnings
from typing import Any, Sequence

import numpy as np
import pydicom
from pydicom.dataset import Dataset
from pydicom.pixel_data_handlers import gdcm_handler, numpy_handler
from pydicom.sequence import Sequence as DicomSequence
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

if gdcm_handler.is_available():
    import gdcm

    # GDCM's warnings go to stderr and can quote element values; errors come back as exceptions.
    gdcm.Trace.WarningOff()
    gdcm.Trace.DebugOff()


def _frame_value(ds, frame, macro, keyword):
    """`keyword` for `frame`: the per-frame functional group, the shared one, then the top level."""
    for groups, index in (
        ("PerFrameFunctionalGroupsSequence", frame),
        ("SharedFunctionalGroupsSequence", 0),
    ):
        items = ds.get(groups)
        if items is not None and index < len(items):
            inner = items[index].get(macro)
            if inner and keyword in inner[0]:
                return inner[0][keyword].value
    return ds.get(keyword)


def _stored_frames(ds, path):
    """(frames, rows, columns) stored values as uint16, decoded by GDCM when compressed."""
    syntax = ds.file_meta.TransferSyntaxUID
    if syntax.is_compressed:
        if not gdcm_handler.is_available():
            raise ImportError("cuimg.dicom needs python3-gdcm to read compressed series")
        flat = gdcm_handler.get_pixeldata(ds)
    else:
        flat = numpy_handler.get_pixeldata(ds)
    frames = int(ds.get("NumberOfFrames", 1) or 1)
    count = frames * int(ds.Rows) * int(ds.Columns)
    flat = np.asarray(flat).reshape(-1)
    if flat.size != count:
        raise ValueError(f"{path}: {flat.size} decoded values for {count} ({syntax.name})")
    unsigned = flat.view(np.uint8 if flat.dtype.itemsize == 1 else np.uint16)
    return unsigned.astype(np.uint16).reshape(frames, int(ds.Rows), int(ds.Columns))


def _modality(stored, ds, slope, intercept):
    bits = int(ds.get("BitsStored", ds.BitsAllocated))
    mask = (1 << bits) - 1
    values = stored.astype(np.int64) & mask
    if int(ds.get("PixelRepresentation", 0)) == 1:
        values = np.where(values & (1 << (bits - 1)), values - (mask + 1), values)
    return values.astype(np.float64) * slope + intercept


def read_series(
    directory: str, series_uid: str | None = None
) -> tuple[np.ndarray, tuple[float, float, float], list]:
    """(volume (D, H, W) int16 or float32, spacing (x, y, z) mm, one dataset per volume slice).

    series_uid narrows a directory holding several series to one."""
    slices: list[dict[str, Any]] = []
    others = set()
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        try:
            ds = pydicom.dcmread(path)
        except pydicom.errors.InvalidDicomError:
            continue
        if "PixelData" not in ds or "Rows" not in ds:
            continue
        if series_uid is not None and ds.get("SeriesInstanceUID") != series_uid:
            others.add(str(ds.get("SeriesInstanceUID")))
            continue
        if int(ds.get("SamplesPerPixel", 1)) != 1 or int(ds.BitsAllocated) not in (8, 16):
            raise ValueError(f"{path}: cuimg reads grayscale slices of 8 or 16 bits allocated")
        for frame in range(int(ds.get("NumberOfFrames", 1) or 1)):

            def value(macro, keyword, default=None):
                v = _frame_value(ds, frame, macro, keyword)
                if v is None and default is None:
                    raise ValueError(f"{path}: no {keyword} for frame {frame + 1}")
                return default if v is None else v

            slices.append(
                {
                    "ds": ds,
                    "path": path,
                    "frame": frame,
                    "ipp": np.array(
                        value("PlanePositionSequence", "ImagePositionPatient"), dtype=float
                    ),
                    "iop": np.array(
                        value("PlaneOrientationSequence", "ImageOrientationPatient"), dtype=float
                    ),
                    "spacing": [float(v) for v in value("PixelMeasuresSequence", "PixelSpacing")],
                    "slope": float(value("PixelValueTransformationSequence", "RescaleSlope", 1)),
                    "intercept": float(
                        value("PixelValueTransformationSequence", "RescaleIntercept", 0)
                    ),
                }
            )
    if not slices:
        if others:
            raise FileNotFoundError(
                f"{directory}: no slice of series {series_uid} (it holds {sorted(others)})"
            )
        raise FileNotFoundError(f"{directory}: no DICOM image files")
    uids = {str(s["ds"].SeriesInstanceUID) for s in slices}
    if len(uids) != 1:
        raise ValueError(
            f"{directory}: more than one series ({sorted(uids)}); pick one with series_uid"
        )
    first = slices[0]
    for s in slices:
        if (
            (s["ds"].Rows, s["ds"].Columns) != (first["ds"].Rows, first["ds"].Columns)
            or not np.allclose(s["spacing"], first["spacing"], atol=1e-4)
            or not np.allclose(s["iop"], first["iop"], atol=1e-4)
        ):
            raise ValueError(
                f"{s['path']}: Rows, Columns, PixelSpacing or ImageOrientationPatient "
                "differ from the series' first slice"
            )
    normal = np.cross(first["iop"][:3], first["iop"][3:])
    slices.sort(key=lambda s: float(np.dot(normal, s["ipp"])))
    positions = [float(np.dot(normal, s["ipp"])) for s in slices]
    gaps = np.diff(positions)
    if len(gaps) and gaps.min() < 1e-4:
        raise ValueError(f"{directory}: two slices at the same position")
    floating = any(
        s["slope"] != round(s["slope"]) or s["intercept"] != round(s["intercept"]) for s in slices
    )
    decoded = {}
    planes = []
    for index, s in enumerate(slices):
        if s["path"] not in decoded:
            decoded[s["path"]] = _stored_frames(s["ds"], s["path"])
        units = _modality(decoded[s["path"]][s["frame"]], s["ds"], s["slope"], s["intercept"])
        if floating:
            planes.append(units.astype(np.float32))
            continue
        units = np.rint(units)
        if units.min() < -32768 or units.max() > 32767:
            raise ValueError(
                f"{s['path']} (slice {index}): rescaled values [{units.min()}, "
                f"{units.max()}] do not fit int16"
            )
        planes.append(units.astype(np.int16))
    row_spacing, column_spacing = first["spacing"]
    spacing = (column_spacing, row_spacing, float(np.median(gaps)) if len(gaps) else 0.0)
    return np.stack(planes), spacing, [s["ds"] for s in slices]


def _decimal_string(value):
    """The shortest-enough DS (16 characters at most) and the value it holds."""
    for digits in range(10, 1, -1):
        text = f"{value:.{digits}g}"
        if len(text) <= 16:
            return text, float(text)
    text = f"{value:.1g}"
    return text, float(text)


def _quantise(plane, source):
    """int16 stored values and (slope, intercept) strings for a float32 result slice."""
    if not np.all(np.isfinite(plane)):
        raise ValueError("write_series: the volume holds NaN or infinity")
    slope = float(source.get("RescaleSlope", 1))
    intercept = float(source.get("RescaleIntercept", 0))
    stored = np.rint((plane.astype(np.float64) - intercept) / slope)
    if stored.min() >= -32768 and stored.max() <= 32767:
        return (
            stored.astype(np.int16),
            str(source.get("RescaleSlope", "1")),
            str(source.get("RescaleIntercept", "0")),
        )
    largest = float(np.abs(plane).max())
    text, step = _decimal_string(largest / 32767 if largest > 0 else 1.0)
    stored = np.clip(np.rint(plane.astype(np.float64) / step), -32768, 32767)
    return stored.astype(np.int16), text, "0"


def write_series(
    datasets: Sequence,
    volume: np.ndarray,
    directory: str,
    derivation: str = "cuimg",
    uid_root: str | None = None,
) -> str:
    """Writes `volume` (int16 or float32, one slice per source dataset) as a new series; returns
    its SeriesInstanceUID. uid_root: the organisation's root (at most 40 digits and dots)."""
    volume = np.asarray(volume)
    if (
        volume.dtype not in (np.int16, np.float32)
        or volume.ndim != 3
        or volume.shape[0] != len(datasets)
    ):
        raise ValueError(
            "write_series needs an int16 or float32 volume with one slice per source dataset"
        )
    if len({id(ds) for ds in datasets}) != len(datasets):
        raise ValueError(
            "write_series: the source is a multi-frame object; cuimg writes derived "
            "series of single-frame sources only (write NIfTI instead)"
        )
    if uid_root is not None and (len(uid_root) > 40 or not re.fullmatch(r"[0-9.]+", uid_root)):
        raise ValueError(f"uid_root: '{uid_root}' is not at most 40 digits and dots")
    prefix = None if uid_root is None else uid_root.rstrip(".") + "."
    os.makedirs(directory, exist_ok=True)
    if os.listdir(directory):
        raise FileExistsError(f"{directory}: not empty (a new series needs a directory of its own)")
    series_uid = generate_uid(prefix=prefix) if prefix else generate_uid()
    for z, (source, plane) in enumerate(zip(datasets, volume)):
        if volume.dtype == np.int16:
            stored, slope, intercept = plane, "1", "0"
        else:
            stored, slope, intercept = _quantise(plane, source)
        with warnings.catch_warnings():  # a deflated source's filename is a buffer: not copied
            warnings.simplefilter("ignore", UserWarning)
            ds = copy.deepcopy(source)
        ds.SeriesInstanceUID = series_uid
        ds.SOPInstanceUID = generate_uid(prefix=prefix) if prefix else generate_uid()
        ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds.ImageType = ["DERIVED", "SECONDARY"] + list(source.get("ImageType", []))[2:]
        if "SeriesNumber" in source:
            ds.SeriesNumber = int(source.SeriesNumber) + 1000
        ds.SeriesDescription = f"{source.get('SeriesDescription', '')} {derivation}".strip()[:64]
        ds.DerivationDescription = derivation
        reference = Dataset()
        reference.ReferencedSOPClassUID = source.SOPClassUID
        reference.ReferencedSOPInstanceUID = source.SOPInstanceUID
        ds.SourceImageSequence = DicomSequence([reference])
        for tag in ("SmallestImagePixelValue", "LargestImagePixelValue", "PixelPaddingValue"):
            if tag in ds:
                delattr(ds, tag)
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
        ds.RescaleSlope, ds.RescaleIntercept = slope, intercept
        # A new element: one copied from a compressed source would keep VR OB and undefined length.
        del ds.PixelData
        ds.add_new(0x7FE00010, "OW", np.ascontiguousarray(stored, dtype="<i2").tobytes())
        ds.is_little_endian, ds.is_implicit_VR = True, False
        ds.save_as(os.path.join(directory, f"slice_{z:04d}.dcm"), write_like_original=False)
    return series_uid
