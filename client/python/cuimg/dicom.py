"""DICOM series for PACS scripts, with pydicom (Debian python3-pydicom): read a directory of
single-frame slices as an int16 volume in rescaled units (Hounsfield units for CT), and write a
processed volume back as a new derived series. The same rules as the cuimg CLI
(client/io/dicom_series.h): slices sorted along the normal of ImageOrientationPatient; values
that do not fit int16 after rescale raise ValueError (never clamped); the output keeps every tag
of its source slice but gets a new SeriesInstanceUID and SOPInstanceUIDs, ImageType
DERIVED\\SECONDARY, SeriesNumber + 1000, and stores the int16 values with slope 1, intercept 0.
Patient fields are carried, never printed."""
from __future__ import annotations

import copy
import os
from typing import Sequence

import numpy as np
import pydicom
from pydicom.uid import ExplicitVRLittleEndian, generate_uid


def read_series(directory: str) -> tuple[np.ndarray, tuple[float, float, float], list]:
    """(volume int16 (D, H, W), spacing (x, y, z) mm, datasets in volume order)."""
    slices = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        try:
            ds = pydicom.dcmread(path)
        except pydicom.errors.InvalidDicomError:
            continue
        if "PixelData" in ds and "ImagePositionPatient" in ds:
            slices.append(ds)
    if not slices:
        raise FileNotFoundError(f"{directory}: no DICOM image files")
    if len({ds.SeriesInstanceUID for ds in slices}) != 1:
        raise ValueError(f"{directory}: more than one series")
    iop = np.array(slices[0].ImageOrientationPatient, dtype=float)
    normal = np.cross(iop[:3], iop[3:])
    slices.sort(key=lambda ds: float(np.dot(normal, np.array(ds.ImagePositionPatient, dtype=float))))
    positions = [float(np.dot(normal, np.array(ds.ImagePositionPatient, dtype=float))) for ds in slices]
    gaps = np.diff(positions)
    if len(gaps) and gaps.min() < 1e-4:
        raise ValueError(f"{directory}: two slices at the same position")
    units = np.stack([np.rint(ds.pixel_array.astype(np.float64) * float(ds.get("RescaleSlope", 1))
                              + float(ds.get("RescaleIntercept", 0))) for ds in slices])
    if units.min() < -32768 or units.max() > 32767:
        raise ValueError(f"{directory}: rescaled values [{units.min()}, {units.max()}] do not fit int16")
    row_spacing, column_spacing = (float(v) for v in slices[0].PixelSpacing)
    spacing = (column_spacing, row_spacing, float(np.median(gaps)) if len(gaps) else 0.0)
    return units.astype(np.int16), spacing, slices


def write_series(datasets: Sequence, volume: np.ndarray, directory: str,
                 derivation: str = "cuimg") -> str:
    """Writes `volume` (int16, one slice per dataset) as a new series; returns its UID."""
    volume = np.asarray(volume)
    if volume.dtype != np.int16 or volume.shape[0] != len(datasets):
        raise ValueError("write_series needs an int16 volume with one slice per source dataset")
    os.makedirs(directory, exist_ok=True)
    if os.listdir(directory):
        raise FileExistsError(f"{directory}: not empty (a new series needs a directory of its own)")
    series_uid = generate_uid()
    for z, (source, pixels) in enumerate(zip(datasets, volume)):
        ds = copy.deepcopy(source)
        ds.SeriesInstanceUID = series_uid
        ds.SOPInstanceUID = generate_uid()
        ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
        ds.ImageType = ["DERIVED", "SECONDARY"] + list(source.get("ImageType", []))[2:]
        if "SeriesNumber" in source:
            ds.SeriesNumber = int(source.SeriesNumber) + 1000
        ds.SeriesDescription = f"{source.get('SeriesDescription', '')} {derivation}".strip()[:64]
        ds.DerivationDescription = derivation
        for tag in ("SmallestImagePixelValue", "LargestImagePixelValue", "PixelPaddingValue"):
            if tag in ds:
                delattr(ds, tag)
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 1
        ds.RescaleSlope, ds.RescaleIntercept = "1", "0"
        ds.PixelData = np.ascontiguousarray(pixels, dtype="<i2").tobytes()
        ds.is_little_endian, ds.is_implicit_VR = True, False
        ds.save_as(os.path.join(directory, f"slice_{z:04d}.dcm"), write_like_original=False)
    return series_uid
