"""DICOM series for PACS scripts, by the cuimg CLI's rules (client/io/dicom_series.h): one pixel
reader contract for both (docs/design.md, "The DICOM reader contract"), so they read the same
values from every file and refuse the same files for the same reason. Tags are read with pydicom
(Debian python3-pydicom); compressed pixel data is decoded by GDCM (python3-gdcm) exactly as the
CLI does it: a copy of the pixel module written to a temporary file and read by gdcm.ImageReader
(cuimg.dicom_pixels: the pixel module's checks, the stored values and their decode).
pydicom's own pixel handlers are not used (they rewrite the dataset's PixelRepresentation after a
JPEG 2000 decode, and gave big-endian data byte-swapped to this module's earlier view of it).

read_series: the slices (single-frame files or the frames of enhanced multi-frame objects) of one
series sorted along the normal of ImageOrientationPatient; stored values (the low BitsStored bits,
sign-extended when PixelRepresentation is 1) rescaled by RescaleSlope/RescaleIntercept. With
integer slopes and intercepts the volume is int16 and a value outside int16 is refused (never
clamped); with a fractional slope or intercept it is float32, never rounded. A file cuimg does not
read raises DicomError naming the file and the attribute at fault.

write_series: a new derived series; each file keeps every tag of its source slice but gets a new
SeriesInstanceUID and SOPInstanceUID (under uid_root when given), ImageType DERIVED\\SECONDARY,
SeriesNumber + 1000, a SourceImageSequence naming its source, and signed 16-bit pixels (Pixel
Data OW, explicit VR little endian): int16 volumes with slope 1, intercept 0; float32 volumes at
the source slice's own slope and intercept when every value fits 16 bits at that step, else at
slope max|v| / 32767, intercept 0. Sequences that hold pixel data (IconImageSequence) are dropped:
they depict the source. The slices are written into a folder beside the output, renamed into place
once all are written: an error leaves no folder. Patient fields are carried, never printed."""
from __future__ import annotations

import copy
import os
import re
import warnings
from typing import Any, Sequence

import numpy as np
import pydicom
from pydicom.dataset import Dataset
from pydicom.sequence import Sequence as DicomSequence
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

from cuimg._atomic import staged_folder
from cuimg.dicom_pixels import (  # noqa: F401 (DicomError: cuimg.dicom's, as before the split)
    DicomError,
    _encapsulated,
    _modality,
    _pixel_module,
    _present,
    _stored_frames,
    _uint,
)

# Pixel-value attributes whose VR follows the source's PixelRepresentation, or that describe its
# stored values: not carried to a derived series (the CLI's list, dicom_series_write.cc).
_SOURCE_VALUE_TAGS = (
    "SmallestImagePixelValue",
    "LargestImagePixelValue",
    "SmallestPixelValueInSeries",
    "LargestPixelValueInSeries",
    "PixelPaddingValue",
    "PixelPaddingRangeLimit",
)


def _frame_value(ds, frame, macro, keyword):
    """`keyword` for `frame`: the per-frame functional group, the shared one, then the top level
    (None when absent or empty)."""
    for groups, index in (
        ("PerFrameFunctionalGroupsSequence", frame),
        ("SharedFunctionalGroupsSequence", 0),
    ):
        items = ds.get(groups)
        if items is not None and index < len(items):
            inner = items[index].get(macro)
            if inner and _present(inner[0].get(keyword)) is not None:
                return inner[0][keyword].value
    return _present(ds.get(keyword))


def _numbers(value, count):
    """`count` floats of a DS value, None when it holds another number of values or none."""
    if value is None:
        return None
    values = (
        list(value) if isinstance(value, (list, tuple, pydicom.multival.MultiValue)) else [value]
    )
    try:
        numbers = [float(v) for v in values]
    except (TypeError, ValueError):
        return None
    return numbers if len(numbers) == count else None


def _read_file(path):
    """The dataset of `path`, or None for a file that is not an image, which is skipped: not a
    DICOM Part 10 file, no Rows (DICOMDIR, reports, presentation states), or a dataset that is
    not in the encoding its transfer syntax names (an implicit VR dataset in a file that says
    explicit: pydicom reads it by guessing, DCMTK stops at its first element). A file pydicom
    cannot parse is refused."""
    with open(path, "rb") as f:
        if f.read(132)[128:] != b"DICM":
            return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ds = pydicom.dcmread(path)
    except Exception as e:  # whatever pydicom's parser meets
        raise DicomError(
            path, "", "CORRUPT_ENCODED_DATA", f"does not parse ({type(e).__name__})"
        ) from None
    syntax = ds.file_meta.get("TransferSyntaxUID")
    if (
        syntax is not None
        and pydicom.uid.UID(syntax).is_transfer_syntax
        and not _encoded_as_declared(ds, pydicom.uid.UID(syntax))
    ):
        return None
    return ds if "Rows" in ds else None


def _encoded_as_declared(ds, syntax):
    """Whether pydicom read the dataset in the VR and byte order `syntax` names: its first element
    not yet converted says how it was read (the dataset's own flags follow the meta header)."""
    for tag in ds.keys():
        raw = ds.get_item(tag)
        if isinstance(raw, pydicom.dataelem.RawDataElement):
            return (
                raw.is_implicit_VR == syntax.is_implicit_VR
                and raw.is_little_endian == syntax.is_little_endian
            )
    return True


def _frame_slice(ds, path, frame, allocated, stored_bits, signed):
    """One slice's header: geometry (None where absent) and rescale."""

    def value(macro, keyword):
        return _frame_value(ds, frame, macro, keyword)

    slope = _numbers(value("PixelValueTransformationSequence", "RescaleSlope"), 1)
    intercept = _numbers(value("PixelValueTransformationSequence", "RescaleIntercept"), 1)
    slope = 1.0 if slope is None else slope[0]
    intercept = 0.0 if intercept is None else intercept[0]
    if not np.isfinite(slope) or not np.isfinite(intercept) or slope == 0:
        raise DicomError(
            path,
            "RescaleSlope",
            "VALUE_OUT_OF_RANGE",
            "RescaleSlope is 0 or not finite, or RescaleIntercept not finite",
        )
    return {
        "ds": ds,
        "path": path,
        "frame": frame,
        "bits": stored_bits,
        "signed": signed,
        "spacing": _numbers(value("PixelMeasuresSequence", "PixelSpacing"), 2),
        "iop": _numbers(value("PlaneOrientationSequence", "ImageOrientationPatient"), 6),
        "ipp": _numbers(value("PlanePositionSequence", "ImagePositionPatient"), 3),
        "slope": slope,
        "intercept": intercept,
    }


def _read_headers(path, series_uid):
    """Every slice (a frame of a file) of the series at `path`, in file order, checked."""
    if os.path.isfile(path):
        names = [path]
    elif os.path.isdir(path):
        names = [os.path.join(path, n) for n in sorted(os.listdir(path))]
    else:
        raise FileNotFoundError(f"{path}: not a directory or file")
    slices: list[dict[str, Any]] = []
    others = set()
    for name in names:
        if not os.path.isfile(name):
            continue
        ds = _read_file(name)
        if ds is None:
            continue
        uid = str(ds.get("SeriesInstanceUID", ""))
        if series_uid is not None and uid != series_uid:
            others.add(uid)
            continue
        allocated, stored_bits, signed, frames = _pixel_module(ds, name)
        count = frames * max(_uint(ds, "Rows", 0), 0) * max(_uint(ds, "Columns", 0), 0)
        held = len(ds.PixelData) if "PixelData" in ds else 0
        if not _encapsulated(ds) and held < count * allocated // 8:
            raise DicomError(
                name,
                "PixelData",
                "DATA_SIZE_MISMATCH",
                f"{count} pixels need {count * allocated // 8} bytes, the file has {held}",
            )
        if (
            frames > 1
            and "PerFrameFunctionalGroupsSequence" not in ds
            and "SharedFunctionalGroupsSequence" not in ds
        ):
            raise DicomError(
                name,
                "PerFrameFunctionalGroupsSequence",
                "UNSUPPORTED_PIXEL_TYPE",
                f"{frames} frames without functional groups (cuimg reads enhanced "
                "multi-frame objects)",
            )
        if not uid:
            raise DicomError(name, "SeriesInstanceUID", "FIELD_REQUIRED", "missing")
        if _uint(ds, "Columns", 0) < 1 or _uint(ds, "Rows", 0) < 1:
            raise DicomError(name, "Rows", "FIELD_REQUIRED", "no Rows/Columns")
        for frame in range(frames):
            s = _frame_slice(ds, name, frame, allocated, stored_bits, signed)
            if slices:
                _check_same_series(slices[0], s, path)
            slices.append(s)
    if not slices:
        if others:
            raise FileNotFoundError(
                f"{path}: no slice of series {series_uid} (it holds {sorted(others)})"
            )
        if os.path.isfile(path):
            # A file named on its own is meant as an image: bad data, not a wrong path.
            detail = "is not a DICOM image file (no Part 10 header with Rows)"
            raise DicomError(path, "", "INVALID_FORMAT", detail)
        raise FileNotFoundError(f"{path}: no DICOM image files")
    return slices


def _check_same_series(first, s, directory):
    ds, path = s["ds"], s["path"]
    if str(ds.SeriesInstanceUID) != str(first["ds"].SeriesInstanceUID):
        raise ValueError(
            f"{directory}: more than one series ({ds.SeriesInstanceUID} in {path}, "
            f"{first['ds'].SeriesInstanceUID} in {first['path']}); pick one with series_uid"
        )
    if (int(ds.Rows), int(ds.Columns)) != (int(first["ds"].Rows), int(first["ds"].Columns)):
        raise DicomError(
            path, "Rows", "SHAPE_MISMATCH", "Rows or Columns differ from the series' first slice"
        )
    for keyword, key in (("PixelSpacing", "spacing"), ("ImageOrientationPatient", "iop")):
        if (
            s[key] is not None
            and first[key] is not None
            and not np.allclose(s[key], first[key], rtol=0, atol=1e-4)
        ):
            raise DicomError(
                path, keyword, "SHAPE_MISMATCH", "differs from the series' first slice"
            )


def read_series(
    path: str, series_uid: str | None = None
) -> tuple[np.ndarray, tuple[float, float, float], list]:
    """(volume (D, H, W) int16 or float32, spacing (x, y, z) mm, one dataset per volume slice)
    of the series in a directory (its files, not recursing) or in one file.

    series_uid narrows a directory holding several series to one. Spacing is 0 where unknown:
    a single slice may lack PixelSpacing, ImageOrientationPatient and ImagePositionPatient (a
    secondary capture, NM); a series of several needs all three on every slice. DicomError for
    a file cuimg does not read, FileNotFoundError when there is no image, ValueError for a
    directory of several series."""
    slices, z_spacing = _ordered_slices(path, series_uid)
    return _decoded(slices), _spacing(slices, z_spacing), [s["ds"] for s in slices]


def _ordered_slices(path, series_uid):
    """The series' slices (read_series's checks) sorted along the normal, and the z spacing."""
    slices = _read_headers(path, series_uid)
    if len(slices) > 1:
        for s in slices:
            for keyword, key in (
                ("PixelSpacing", "spacing"),
                ("ImageOrientationPatient", "iop"),
                ("ImagePositionPatient", "ipp"),
            ):
                if s[key] is None:
                    raise DicomError(
                        s["path"],
                        keyword,
                        "FIELD_REQUIRED",
                        f"missing for frame {s['frame'] + 1} (a series of several "
                        "slices needs its geometry)",
                    )
        first = slices[0]
        normal = np.cross(first["iop"][:3], first["iop"][3:])
        slices.sort(key=lambda s: float(np.dot(normal, s["ipp"])))
        positions = [float(np.dot(normal, s["ipp"])) for s in slices]
        gaps = np.diff(positions)
        for i, gap in enumerate(gaps):
            if gap < 1e-4:
                raise DicomError(
                    slices[i + 1]["path"],
                    "ImagePositionPatient",
                    "VALUE_OUT_OF_RANGE",
                    f"frame {slices[i + 1]['frame'] + 1} at the same position as "
                    f"{slices[i]['path']} along the slice normal",
                )
        return slices, float(np.median(gaps))
    return slices, 0.0


def _is_floating(slices):
    """Whether the volume is float32: a fractional slope or intercept."""
    return any(
        s["slope"] != round(s["slope"]) or s["intercept"] != round(s["intercept"]) for s in slices
    )


def _spacing(slices, z_spacing):
    row_spacing, column_spacing = slices[0]["spacing"] or [0.0, 0.0]
    return column_spacing, row_spacing, z_spacing


def _decoded(slices):
    """The volume of `slices`, decoded and rescaled."""
    floating = _is_floating(slices)
    decoded: dict[str, Any] = {}
    planes = []
    for index, s in enumerate(slices):
        if s["path"] not in decoded:
            frames = _uint(s["ds"], "NumberOfFrames", 1)
            decoded[s["path"]] = _stored_frames(
                s["ds"], s["path"], int(s["ds"].BitsAllocated), frames
            )
        units = _modality(
            decoded[s["path"]][s["frame"]], s["bits"], s["signed"], s["slope"], s["intercept"]
        )
        if floating:
            planes.append(units.astype(np.float32))
            continue
        units = np.rint(units)
        if units.min() < -32768 or units.max() > 32767:
            raise DicomError(
                s["path"],
                "PixelData",
                "VALUE_OUT_OF_RANGE",
                f"(slice {index}) rescaled values [{units.min():g}, {units.max():g}] "
                "do not fit int16 (cuimg reads integer rescales as int16, never clamped)",
            )
        planes.append(units.astype(np.int16))
    return np.stack(planes)


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


def _holds_pixel_data(sequence):
    """Whether any item of a sequence holds Pixel Data, at any depth."""
    for item in sequence:
        for element in item:
            if element.tag == 0x7FE00010:
                return True
            if element.VR == "SQ" and _holds_pixel_data(element.value):
                return True
    return False


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
    prefix, series_uid = _new_series(uid_root)
    # Into a folder beside `directory`, renamed into place once every slice is written.
    with staged_folder(directory) as folder:
        _write_slices(datasets, volume, folder, derivation, prefix, series_uid)
    return series_uid


def _write_slices(datasets, volume, directory, derivation, prefix, series_uid):
    for z, (source, plane) in enumerate(zip(datasets, volume)):
        if volume.dtype == np.int16:
            stored, slope, intercept = plane, "1", "0"
        else:
            stored, slope, intercept = _quantise(plane, source)
        ds = _derived(source, derivation, prefix, series_uid, slope, intercept)
        ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
        # A new element: one copied from a compressed source would keep VR OB and undefined length.
        ds.add_new(0x7FE00010, "OW", np.ascontiguousarray(stored, dtype="<i2").tobytes())
        ds.save_as(os.path.join(directory, f"slice_{z:04d}.dcm"), write_like_original=False)


def _new_series(uid_root):
    """(the prefix of new UIDs or None, a new SeriesInstanceUID) under `uid_root`."""
    if uid_root is not None and (len(uid_root) > 40 or not re.fullmatch(r"[0-9.]+", uid_root)):
        raise ValueError(f"uid_root: '{uid_root}' is not at most 40 digits and dots")
    prefix = None if uid_root is None else uid_root.rstrip(".") + "."
    return prefix, generate_uid(prefix=prefix) if prefix else generate_uid()


def _derived(source, derivation, prefix, series_uid, slope, intercept):
    """A copy of `source` as a slice of the derived series: new UIDs, the derivation's tags, a
    signed 16-bit pixel module with the rescale given, and no Pixel Data yet."""
    with warnings.catch_warnings():  # a deflated source's filename is a buffer: not copied
        warnings.simplefilter("ignore", UserWarning)
        ds = copy.deepcopy(source)
    # Sequences holding pixel data depict the source (IconImageSequence), and an encapsulated
    # one cannot be written uncompressed: dropped, as by the CLI.
    for element in list(ds):
        if element.VR == "SQ" and _holds_pixel_data(element.value):
            del ds[element.tag]
    ds.SeriesInstanceUID = series_uid
    ds.SOPInstanceUID = generate_uid(prefix=prefix) if prefix else generate_uid()
    ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
    ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds.ImageType = ["DERIVED", "SECONDARY"] + list(source.get("ImageType", []))[2:]
    if "SeriesNumber" in source and _present(source.SeriesNumber) is not None:
        ds.SeriesNumber = int(source.SeriesNumber) + 1000
    ds.SeriesDescription = f"{source.get('SeriesDescription', '')} {derivation}".strip()[:64]
    ds.DerivationDescription = derivation
    reference = Dataset()
    reference.ReferencedSOPClassUID = source.SOPClassUID
    reference.ReferencedSOPInstanceUID = source.SOPInstanceUID
    ds.SourceImageSequence = DicomSequence([reference])
    for tag in _SOURCE_VALUE_TAGS:
        if tag in ds:
            delattr(ds, tag)
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
    ds.RescaleSlope, ds.RescaleIntercept = slope, intercept
    if "PixelData" in ds:
        del ds.PixelData
    ds.is_little_endian, ds.is_implicit_VR = True, False
    return ds
