"""Derived DICOM series out of the Python client, by the CLI's rules (client/io/dicom_series.h,
cuimg/dicom.py's docstring): write_series (pixels, explicit VR little endian) and
write_encoded_series (the slices as encoded frames: HTJ2K from the server, issue 49)."""
from __future__ import annotations

import copy
import os
import re
import warnings
from typing import Sequence

import numpy as np
from pydicom import encaps
from pydicom.dataset import Dataset
from pydicom.filebase import DicomFileLike
from pydicom.filewriter import write_dataset, write_file_meta_info
from pydicom.sequence import Sequence as DicomSequence
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

from cuimg._atomic import staged_folder
from cuimg.dicom import _present

# Pixel-value attributes whose VR follows the source's PixelRepresentation, or that describe its
# stored values: not carried to a derived series (the CLI's list, dicom_series_write.cc).
_SOURCE_VALUE_TAGS = ("SmallestImagePixelValue", "LargestImagePixelValue",
                      "SmallestPixelValueInSeries", "LargestPixelValueInSeries",
                      "PixelPaddingValue", "PixelPaddingRangeLimit")


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
        return (stored.astype(np.int16), str(source.get("RescaleSlope", "1")),
                str(source.get("RescaleIntercept", "0")))
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


def write_series(datasets: Sequence, volume: np.ndarray, directory: str, derivation: str = "cuimg",
                 uid_root: str | None = None) -> str:
    """Writes `volume` (int16 or float32, one slice per source dataset) as a new series; returns
    its SeriesInstanceUID. uid_root: the organisation's root (at most 40 digits and dots)."""
    volume = np.asarray(volume)
    if volume.dtype not in (np.int16, np.float32) or volume.ndim != 3 or \
            volume.shape[0] != len(datasets):
        raise ValueError("write_series needs an int16 or float32 volume with one slice per source "
                         "dataset")
    if len({id(ds) for ds in datasets}) != len(datasets):
        raise ValueError("write_series: the source is a multi-frame object; cuimg writes derived "
                         "series of single-frame sources only (write NIfTI instead)")
    prefix, series_uid = _new_series(uid_root)
    # Into a folder beside `directory`, renamed into place once every slice is written.
    with staged_folder(directory) as folder:
        for z, (source, plane) in enumerate(zip(datasets, volume)):
            if volume.dtype == np.int16:
                stored, slope, intercept = plane, "1", "0"
            else:
                stored, slope, intercept = _quantise(plane, source)
            ds = _derived(source, derivation, prefix, series_uid, slope, intercept)
            ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
            # A new element: one copied from a compressed source would keep VR OB and undefined
            # length.
            ds.add_new(0x7FE00010, "OW", np.ascontiguousarray(stored, dtype="<i2").tobytes())
            ds.save_as(os.path.join(folder, f"slice_{z:04d}.dcm"), write_like_original=False)
    return series_uid


def write_encoded_series(datasets: Sequence, transfer_syntax_uid: str, frames: Sequence[bytes],
                         directory: str, derivation: str = "cuimg",
                         uid_root: str | None = None) -> str:
    """Writes a new series as write_series does, each slice holding its frame (signed 16-bit
    values, one per source dataset) encapsulated under `transfer_syntax_uid` (an encapsulated
    syntax: HTJ2K lossless from a server's frame_encoding), RescaleSlope 1, RescaleIntercept 0;
    returns its SeriesInstanceUID. Written with pydicom's file writer directly: Debian's pydicom
    2.3 does not know the HTJ2K UIDs, which its save_as refuses."""
    if len(frames) != len(datasets) or len({id(ds) for ds in datasets}) != len(datasets):
        raise ValueError("write_encoded_series needs one frame per single-frame source dataset")
    prefix, series_uid = _new_series(uid_root)
    with staged_folder(directory) as folder:
        for z, (source, frame) in enumerate(zip(datasets, frames)):
            ds = _derived(source, derivation, prefix, series_uid, "1", "0")
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


def _new_series(uid_root):
    """(prefix of new UIDs or None, the new SeriesInstanceUID)."""
    if uid_root is not None and (len(uid_root) > 40 or not re.fullmatch(r"[0-9.]+", uid_root)):
        raise ValueError(f"uid_root: '{uid_root}' is not at most 40 digits and dots")
    prefix = None if uid_root is None else uid_root.rstrip(".") + "."
    return prefix, generate_uid(prefix=prefix) if prefix else generate_uid()


def _derived(source, derivation, prefix, series_uid, slope, intercept):
    """A copy of `source` as a derived slice: new UIDs and derivation tags, signed 16-bit pixel
    module, the rescale given, no Pixel Data yet."""
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
