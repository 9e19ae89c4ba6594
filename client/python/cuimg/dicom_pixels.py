"""A DICOM file's pixel module and stored values, by the cuimg CLI's rules (client/io/
dicom_header.cc, dicom_pixels.cc): the module's attributes checked in the CLI's order, native
pixel data read in the file's byte order, encapsulated (compressed) pixel data decoded by GDCM
(python3-gdcm) as the CLI does it, and the modality transform. cuimg.dicom reads series with it;
DicomError is the refusal both raise."""
from __future__ import annotations

import os
import tempfile

import numpy as np
import pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.sequence import Sequence as DicomSequence
from pydicom.uid import generate_uid

try:
    import gdcm

    # GDCM's warnings go to stderr and can quote element values; errors come back as results.
    gdcm.Trace.WarningOff()
    gdcm.Trace.DebugOff()
    gdcm.Trace.ErrorOff()
except ImportError:
    gdcm = None


class DicomError(ValueError):
    """A file cuimg does not read (the CLI exits 3 on the same file, naming the same attribute):
    `path`, `keyword` (the attribute at fault, e.g. "BitsAllocated"; "PixelData" for pixels that
    are short or do not decode; "" for a file that does not parse), `reason` (the CLI's reason
    name, e.g. "UNSUPPORTED_PIXEL_TYPE")."""

    def __init__(self, path, keyword, reason, detail):
        super().__init__(f"{path}: {keyword}: {detail}" if keyword else f"{path}: {detail}")
        self.path, self.keyword, self.reason = path, keyword, reason


# What GDCM needs to decode, as the CLI copies it (client/io/dicom_pixels.cc).
_PIXEL_MODULE = (
    "SOPClassUID",
    "SamplesPerPixel",
    "PhotometricInterpretation",
    "NumberOfFrames",
    "Rows",
    "Columns",
    "BitsAllocated",
    "BitsStored",
    "HighBit",
    "PixelRepresentation",
    "PlanarConfiguration",
    "PixelData",
)


def _present(value):
    """A value pydicom read, or None when the attribute is absent or empty."""
    if value is None or (isinstance(value, (str, bytes, list, DicomSequence)) and len(value) == 0):
        return None
    return value


def _uint(ds, keyword, default=None):
    """An unsigned integer attribute, `default` when absent (None: required)."""
    try:
        value = _present(ds.get(keyword))
        if value is None:
            return default
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return -1  # out of every range it is checked against: refused, naming the attribute


def _pixel_module(ds, path):
    """(bits allocated, bits stored, signed, frames), checked in the CLI's order
    (ReadPixelModule in client/io/dicom_header.cc)."""

    def refuse(keyword, reason, detail):
        raise DicomError(path, keyword, reason, detail)

    samples = _uint(ds, "SamplesPerPixel", 1)
    if samples != 1:
        refuse(
            "SamplesPerPixel",
            "UNSUPPORTED_PIXEL_TYPE",
            f"{samples} samples per pixel (cuimg reads grayscale images)",
        )
    photometric = str(ds.get("PhotometricInterpretation", "")).strip()
    if photometric not in ("MONOCHROME1", "MONOCHROME2"):
        refuse(
            "PhotometricInterpretation",
            "UNSUPPORTED_PIXEL_TYPE",
            f"'{photometric[:16]}' (cuimg reads MONOCHROME1 and MONOCHROME2)",
        )
    allocated = _uint(ds, "BitsAllocated")
    if allocated not in (8, 16):
        refuse("BitsAllocated", "UNSUPPORTED_PIXEL_TYPE", f"{allocated} (cuimg reads 8 or 16)")
    stored = _uint(ds, "BitsStored", allocated)
    if not 1 <= stored <= allocated:
        refuse("BitsStored", "VALUE_OUT_OF_RANGE", f"{stored} not in [1, BitsAllocated]")
    high_bit = _uint(ds, "HighBit", stored - 1)
    if high_bit != stored - 1:
        refuse(
            "HighBit",
            "UNSUPPORTED_PIXEL_TYPE",
            f"{high_bit}, not BitsStored - 1 (cuimg reads values in the low bits)",
        )
    representation = _uint(ds, "PixelRepresentation")
    if representation is None:
        refuse("PixelRepresentation", "FIELD_REQUIRED", "missing")
    if representation not in (0, 1):
        refuse("PixelRepresentation", "VALUE_OUT_OF_RANGE", f"{representation}, not 0 or 1")
    frames = _uint(ds, "NumberOfFrames", 1)
    if not 1 <= frames <= 65536:
        refuse("NumberOfFrames", "VALUE_OUT_OF_RANGE", f"{frames} not in [1, 65536]")
    if "ModalityLUTSequence" in ds:
        refuse(
            "ModalityLUTSequence",
            "UNSUPPORTED_PIXEL_TYPE",
            "a modality LUT (cuimg applies RescaleSlope and RescaleIntercept only)",
        )
    return allocated, stored, representation == 1, frames


def _decode_with_gdcm(ds, path, frames):
    """GDCM's decode of an encapsulated file, as the CLI's DecodeWithGdcm: the pixel module
    copied to a temporary file and read by gdcm.ImageReader, (frames, rows, columns) uint16.
    Decoded by changing the image to explicit VR little endian, whose result says whether the
    codec succeeded (the Python binding of Bitmap::GetBuffer drops it and returns the buffer
    whatever happened)."""
    if gdcm is None:
        raise ImportError("cuimg.dicom needs python3-gdcm to read compressed series")
    syntax = ds.file_meta.TransferSyntaxUID
    module = Dataset()
    for keyword in _PIXEL_MODULE:
        if keyword in ds:
            module[keyword] = ds[keyword]
    module.file_meta = FileMetaDataset()
    module.file_meta.TransferSyntaxUID = syntax
    module.file_meta.MediaStorageSOPClassUID = ds.get(
        "SOPClassUID", pydicom.uid.SecondaryCaptureImageStorage
    )
    module.file_meta.MediaStorageSOPInstanceUID = generate_uid()
    module.is_little_endian, module.is_implicit_VR = True, False
    rows, columns = int(ds.Rows), int(ds.Columns)
    with tempfile.TemporaryDirectory(prefix="cuimg-pixels-") as work:
        copy_path = os.path.join(work, "pixels.dcm")
        module.save_as(copy_path, write_like_original=False)
        reader = gdcm.ImageReader()
        reader.SetFileName(copy_path)
        if not reader.Read():
            raise DicomError(
                path, "PixelData", "CORRUPT_ENCODED_DATA", "GDCM cannot read its pixel data"
            )
        image = reader.GetImage()
    pixel_format = image.GetPixelFormat()
    size = pixel_format.GetBitsAllocated() // 8
    if (
        pixel_format.GetSamplesPerPixel() != 1
        or size not in (1, 2)
        or pixel_format.GetBitsAllocated() % 8
    ):
        raise DicomError(
            path,
            "BitsAllocated",
            "UNSUPPORTED_PIXEL_TYPE",
            f"GDCM decodes {pixel_format.GetSamplesPerPixel()} samples of "
            f"{pixel_format.GetBitsAllocated()} bits (cuimg reads grayscale 8- or 16-bit pixels)",
        )
    dims = [image.GetDimension(i) for i in range(image.GetNumberOfDimensions())]
    got = (dims[0], dims[1], dims[2] if len(dims) > 2 else 1)
    if got != (columns, rows, frames):
        raise DicomError(
            path,
            "PixelData",
            "SHAPE_MISMATCH",
            f"GDCM sees {got[0]}x{got[1]}x{got[2]} pixels, the header "
            f"{columns}x{rows}x{frames}",
        )
    count = columns * rows * frames
    if image.GetBufferLength() != count * size:
        raise DicomError(
            path,
            "PixelData",
            "CORRUPT_ENCODED_DATA",
            f"pixel buffer of {image.GetBufferLength()} bytes for {count} values "
            f"({syntax.name})",
        )
    change = gdcm.ImageChangeTransferSyntax()
    change.SetTransferSyntax(gdcm.TransferSyntax(gdcm.TransferSyntax.ExplicitVRLittleEndian))
    change.SetInput(image)
    if not change.Change():
        raise DicomError(
            path, "PixelData", "CORRUPT_ENCODED_DATA", f"pixel data does not decode ({syntax.name})"
        )
    data = change.GetOutput().GetBuffer().encode("utf-8", "surrogateescape")
    if len(data) != count * size:
        raise DicomError(
            path, "PixelData", "CORRUPT_ENCODED_DATA", f"pixel data does not decode ({syntax.name})"
        )
    values = np.frombuffer(data, np.uint8 if size == 1 else np.dtype("=u2"))
    return values.astype(np.uint16).reshape(frames, rows, columns)


# HTJ2K (DICOM 2023): encapsulated, though Debian's pydicom 2.3 does not know the UIDs.
HTJ2K_SYNTAXES = ("1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.202", "1.2.840.10008.1.2.4.203")


def _encapsulated(ds):
    """Whether the pixel data is encapsulated (compressed): by the meta header's transfer syntax;
    a file without one is native, in the encoding pydicom found."""
    syntax = ds.file_meta.get("TransferSyntaxUID") if hasattr(ds, "file_meta") else None
    if syntax is None or str(syntax) in HTJ2K_SYNTAXES:
        return syntax is not None
    uid = pydicom.uid.UID(syntax)
    return uid.is_transfer_syntax and uid.is_encapsulated


def _stored_frames(ds, path, allocated, frames):
    """(frames, rows, columns) stored values as uint16, before masking and sign extension."""
    rows, columns = int(ds.Rows), int(ds.Columns)
    if "PixelData" not in ds:
        raise DicomError(path, "PixelData", "DATA_SIZE_MISMATCH", "missing")
    if _encapsulated(ds):
        return _decode_with_gdcm(ds, path, frames)
    count = frames * rows * columns
    raw: bytes = ds.PixelData  # as long as the pixels need (_read_headers)
    # The file's byte order (pydicom hands native 16-bit data over as the file stores it).
    dtype = np.dtype("u1" if allocated == 8 else "<u2" if ds.is_little_endian else ">u2")
    return np.frombuffer(raw, dtype, count).astype(np.uint16).reshape(frames, rows, columns)


def _modality(stored, bits, signed, slope, intercept):
    mask = (1 << bits) - 1
    values = stored.astype(np.int64) & mask
    if signed:
        values = np.where(values & (1 << (bits - 1)), values - (mask + 1), values)
    return values.astype(np.float64) * slope + intercept
