"""DICOM series for PACS scripts, by the cuimg CLI's rules (client/io/dicom_series.h): one pixel
reader contract for both (docs/design.md, "The DICOM reader contract"), so they read the same
values from every file and refuse the same files for the same reason. Tags are read with pydicom
(Debian python3-pydicom); compressed pixel data is decoded by GDCM (python3-gdcm) exactly as the
CLI does it: a copy of the pixel module written to a temporary file and read by gdcm.ImageReader.
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

import os
import tempfile
import warnings
from typing import Sequence

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
_PIXEL_MODULE = ("SOPClassUID", "SamplesPerPixel", "PhotometricInterpretation", "NumberOfFrames",
                 "Rows", "Columns", "BitsAllocated", "BitsStored", "HighBit", "PixelRepresentation",
                 "PlanarConfiguration", "PixelData")
# HTJ2K (DICOM 2023): encapsulated, though Debian's pydicom 2.3 does not know the UIDs.
HTJ2K_SYNTAXES = ("1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.202", "1.2.840.10008.1.2.4.203")


def _present(value):
    """A value pydicom read, or None when the attribute is absent or empty."""
    if value is None or (isinstance(value, (str, bytes, list, DicomSequence)) and len(value) == 0):
        return None
    return value


def _frame_value(ds, frame, macro, keyword):
    """`keyword` for `frame`: the per-frame functional group, the shared one, then the top level
    (None when absent or empty)."""
    for groups, index in (("PerFrameFunctionalGroupsSequence", frame),
                          ("SharedFunctionalGroupsSequence", 0)):
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
    values = list(value) if isinstance(value, (list, tuple, pydicom.multival.MultiValue)) else [value]
    try:
        numbers = [float(v) for v in values]
    except (TypeError, ValueError):
        return None
    return numbers if len(numbers) == count else None


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
        refuse("SamplesPerPixel", "UNSUPPORTED_PIXEL_TYPE",
               f"{samples} samples per pixel (cuimg reads grayscale images)")
    photometric = str(ds.get("PhotometricInterpretation", "")).strip()
    if photometric not in ("MONOCHROME1", "MONOCHROME2"):
        refuse("PhotometricInterpretation", "UNSUPPORTED_PIXEL_TYPE",
               f"'{photometric[:16]}' (cuimg reads MONOCHROME1 and MONOCHROME2)")
    allocated = _uint(ds, "BitsAllocated")
    if allocated not in (8, 16):
        refuse("BitsAllocated", "UNSUPPORTED_PIXEL_TYPE", f"{allocated} (cuimg reads 8 or 16)")
    stored = _uint(ds, "BitsStored", allocated)
    if not 1 <= stored <= allocated:
        refuse("BitsStored", "VALUE_OUT_OF_RANGE", f"{stored} not in [1, BitsAllocated]")
    high_bit = _uint(ds, "HighBit", stored - 1)
    if high_bit != stored - 1:
        refuse("HighBit", "UNSUPPORTED_PIXEL_TYPE",
               f"{high_bit}, not BitsStored - 1 (cuimg reads values in the low bits)")
    representation = _uint(ds, "PixelRepresentation")
    if representation is None:
        refuse("PixelRepresentation", "FIELD_REQUIRED", "missing")
    if representation not in (0, 1):
        refuse("PixelRepresentation", "VALUE_OUT_OF_RANGE", f"{representation}, not 0 or 1")
    frames = _uint(ds, "NumberOfFrames", 1)
    if not 1 <= frames <= 65536:
        refuse("NumberOfFrames", "VALUE_OUT_OF_RANGE", f"{frames} not in [1, 65536]")
    if "ModalityLUTSequence" in ds:
        refuse("ModalityLUTSequence", "UNSUPPORTED_PIXEL_TYPE",
               "a modality LUT (cuimg applies RescaleSlope and RescaleIntercept only)")
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
    module.file_meta.MediaStorageSOPClassUID = ds.get("SOPClassUID", pydicom.uid.SecondaryCaptureImageStorage)
    module.file_meta.MediaStorageSOPInstanceUID = generate_uid()
    module.is_little_endian, module.is_implicit_VR = True, False
    rows, columns = int(ds.Rows), int(ds.Columns)
    with tempfile.TemporaryDirectory(prefix="cuimg-pixels-") as work:
        copy_path = os.path.join(work, "pixels.dcm")
        module.save_as(copy_path, write_like_original=False)
        reader = gdcm.ImageReader()
        reader.SetFileName(copy_path)
        if not reader.Read():
            raise DicomError(path, "PixelData", "CORRUPT_ENCODED_DATA", "GDCM cannot read its pixel data")
        image = reader.GetImage()
    pixel_format = image.GetPixelFormat()
    size = pixel_format.GetBitsAllocated() // 8
    if pixel_format.GetSamplesPerPixel() != 1 or size not in (1, 2) or \
            pixel_format.GetBitsAllocated() % 8:
        raise DicomError(path, "BitsAllocated", "UNSUPPORTED_PIXEL_TYPE",
                         f"GDCM decodes {pixel_format.GetSamplesPerPixel()} samples of "
                         f"{pixel_format.GetBitsAllocated()} bits (cuimg reads grayscale 8- or 16-bit pixels)")
    dims = [image.GetDimension(i) for i in range(image.GetNumberOfDimensions())]
    got = (dims[0], dims[1], dims[2] if len(dims) > 2 else 1)
    if got != (columns, rows, frames):
        raise DicomError(path, "PixelData", "SHAPE_MISMATCH",
                         f"GDCM sees {got[0]}x{got[1]}x{got[2]} pixels, the header "
                         f"{columns}x{rows}x{frames}")
    count = columns * rows * frames
    if image.GetBufferLength() != count * size:
        raise DicomError(path, "PixelData", "CORRUPT_ENCODED_DATA",
                         f"pixel buffer of {image.GetBufferLength()} bytes for {count} values "
                         f"({syntax.name})")
    change = gdcm.ImageChangeTransferSyntax()
    change.SetTransferSyntax(gdcm.TransferSyntax(gdcm.TransferSyntax.ExplicitVRLittleEndian))
    change.SetInput(image)
    if not change.Change():
        raise DicomError(path, "PixelData", "CORRUPT_ENCODED_DATA",
                         f"pixel data does not decode ({syntax.name})")
    data = change.GetOutput().GetBuffer().encode("utf-8", "surrogateescape")
    if len(data) != count * size:
        raise DicomError(path, "PixelData", "CORRUPT_ENCODED_DATA",
                         f"pixel data does not decode ({syntax.name})")
    values = np.frombuffer(data, np.uint8 if size == 1 else np.dtype("=u2"))
    return values.astype(np.uint16).reshape(frames, rows, columns)


def _encapsulated(ds):
    """Whether the pixel data is encapsulated (compressed): by the meta header's transfer syntax;
    a file without one is native, in the encoding pydicom found."""
    syntax = ds.file_meta.get("TransferSyntaxUID") if hasattr(ds, "file_meta") else None
    if syntax is None or str(syntax) in HTJ2K_SYNTAXES:
        return syntax is not None
    return pydicom.uid.UID(syntax).is_transfer_syntax and pydicom.uid.UID(syntax).is_encapsulated


def _stored_frames(ds, path, allocated, frames):
    """(frames, rows, columns) stored values as uint16, before masking and sign extension."""
    rows, columns = int(ds.Rows), int(ds.Columns)
    if "PixelData" not in ds:
        raise DicomError(path, "PixelData", "DATA_SIZE_MISMATCH", "missing")
    if _encapsulated(ds):
        return _decode_with_gdcm(ds, path, frames)
    count = frames * rows * columns
    raw = ds.PixelData  # as long as the pixels need (_read_headers)
    # The file's byte order (pydicom hands native 16-bit data over as the file stores it).
    dtype = np.uint8 if allocated == 8 else np.dtype("<u2" if ds.is_little_endian else ">u2")
    return np.frombuffer(raw, dtype, count).astype(np.uint16).reshape(frames, rows, columns)


def _modality(stored, bits, signed, slope, intercept):
    mask = (1 << bits) - 1
    values = stored.astype(np.int64) & mask
    if signed:
        values = np.where(values & (1 << (bits - 1)), values - (mask + 1), values)
    return values.astype(np.float64) * slope + intercept


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
        raise DicomError(path, "", "CORRUPT_ENCODED_DATA", f"does not parse ({type(e).__name__})") from None
    syntax = ds.file_meta.get("TransferSyntaxUID")
    if syntax is not None and pydicom.uid.UID(syntax).is_transfer_syntax and \
            not _encoded_as_declared(ds, pydicom.uid.UID(syntax)):
        return None
    return ds if "Rows" in ds else None


def _encoded_as_declared(ds, syntax):
    """Whether pydicom read the dataset in the VR and byte order `syntax` names: its first element
    not yet converted says how it was read (the dataset's own flags follow the meta header)."""
    for tag in ds.keys():
        raw = ds.get_item(tag)
        if isinstance(raw, pydicom.dataelem.RawDataElement):
            return raw.is_implicit_VR == syntax.is_implicit_VR and \
                raw.is_little_endian == syntax.is_little_endian
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
        raise DicomError(path, "RescaleSlope", "VALUE_OUT_OF_RANGE",
                         "RescaleSlope is 0 or not finite, or RescaleIntercept not finite")
    return {"ds": ds, "path": path, "frame": frame, "bits": stored_bits, "signed": signed,
            "spacing": _numbers(value("PixelMeasuresSequence", "PixelSpacing"), 2),
            "iop": _numbers(value("PlaneOrientationSequence", "ImageOrientationPatient"), 6),
            "ipp": _numbers(value("PlanePositionSequence", "ImagePositionPatient"), 3),
            "slope": slope, "intercept": intercept}


def _read_headers(path, series_uid):
    """Every slice (a frame of a file) of the series at `path`, in file order, checked."""
    if os.path.isfile(path):
        names = [path]
    elif os.path.isdir(path):
        names = [os.path.join(path, n) for n in sorted(os.listdir(path))]
    else:
        raise FileNotFoundError(f"{path}: not a directory or file")
    slices, others = [], set()
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
            raise DicomError(name, "PixelData", "DATA_SIZE_MISMATCH",
                             f"{count} pixels need {count * allocated // 8} bytes, the file has {held}")
        if frames > 1 and "PerFrameFunctionalGroupsSequence" not in ds and \
                "SharedFunctionalGroupsSequence" not in ds:
            raise DicomError(name, "PerFrameFunctionalGroupsSequence", "UNSUPPORTED_PIXEL_TYPE",
                             f"{frames} frames without functional groups (cuimg reads enhanced "
                             "multi-frame objects)")
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
            raise FileNotFoundError(f"{path}: no slice of series {series_uid} (it holds {sorted(others)})")
        raise FileNotFoundError(f"{path}: no DICOM image files")
    return slices


def _check_same_series(first, s, directory):
    ds, path = s["ds"], s["path"]
    if str(ds.SeriesInstanceUID) != str(first["ds"].SeriesInstanceUID):
        raise ValueError(f"{directory}: more than one series ({ds.SeriesInstanceUID} in {path}, "
                         f"{first['ds'].SeriesInstanceUID} in {first['path']}); pick one with series_uid")
    if (int(ds.Rows), int(ds.Columns)) != (int(first["ds"].Rows), int(first["ds"].Columns)):
        raise DicomError(path, "Rows", "SHAPE_MISMATCH", "Rows or Columns differ from the series' first slice")
    for keyword, key in (("PixelSpacing", "spacing"), ("ImageOrientationPatient", "iop")):
        if s[key] is not None and first[key] is not None and \
                not np.allclose(s[key], first[key], rtol=0, atol=1e-4):
            raise DicomError(path, keyword, "SHAPE_MISMATCH", "differs from the series' first slice")


def read_series(path: str, series_uid: str | None = None
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
            for keyword, key in (("PixelSpacing", "spacing"), ("ImageOrientationPatient", "iop"),
                                 ("ImagePositionPatient", "ipp")):
                if s[key] is None:
                    raise DicomError(s["path"], keyword, "FIELD_REQUIRED",
                                     f"missing for frame {s['frame'] + 1} (a series of several "
                                     "slices needs its geometry)")
        first = slices[0]
        normal = np.cross(first["iop"][:3], first["iop"][3:])
        slices.sort(key=lambda s: float(np.dot(normal, s["ipp"])))
        positions = [float(np.dot(normal, s["ipp"])) for s in slices]
        gaps = np.diff(positions)
        for i, gap in enumerate(gaps):
            if gap < 1e-4:
                raise DicomError(slices[i + 1]["path"], "ImagePositionPatient", "VALUE_OUT_OF_RANGE",
                                 f"frame {slices[i + 1]['frame'] + 1} at the same position as "
                                 f"{slices[i]['path']} along the slice normal")
        return slices, float(np.median(gaps))
    return slices, 0.0


def _is_floating(slices):
    """Whether the volume is float32: a fractional slope or intercept."""
    return any(s["slope"] != round(s["slope"]) or s["intercept"] != round(s["intercept"])
               for s in slices)


def _spacing(slices, z_spacing):
    row_spacing, column_spacing = slices[0]["spacing"] or [0.0, 0.0]
    return column_spacing, row_spacing, z_spacing


def _decoded(slices):
    """The volume of `slices`, decoded and rescaled."""
    floating = _is_floating(slices)
    decoded = {}
    planes = []
    for index, s in enumerate(slices):
        if s["path"] not in decoded:
            frames = _uint(s["ds"], "NumberOfFrames", 1)
            decoded[s["path"]] = _stored_frames(s["ds"], s["path"], int(s["ds"].BitsAllocated), frames)
        units = _modality(decoded[s["path"]][s["frame"]], s["bits"], s["signed"], s["slope"], s["intercept"])
        if floating:
            planes.append(units.astype(np.float32))
            continue
        units = np.rint(units)
        if units.min() < -32768 or units.max() > 32767:
            raise DicomError(s["path"], "PixelData", "VALUE_OUT_OF_RANGE",
                             f"(slice {index}) rescaled values [{units.min():g}, {units.max():g}] "
                             "do not fit int16 (cuimg reads integer rescales as int16, never clamped)")
        planes.append(units.astype(np.int16))
    return np.stack(planes)


def write_series(datasets: Sequence, volume: np.ndarray, directory: str, derivation: str = "cuimg",
                 uid_root: str | None = None) -> str:
    """Writes `volume` (int16 or float32, one slice per source dataset) as a new series; returns
    its SeriesInstanceUID. uid_root: the organisation's root (at most 40 digits and dots). By the
    rules above (cuimg/dicom_write.py)."""
    from cuimg.dicom_write import write_series as write
    return write(datasets, volume, directory, derivation, uid_root)
