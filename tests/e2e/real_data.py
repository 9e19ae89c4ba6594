"""The files test_real_data_corpus.py reads: every DICOM and NIfTI file Debian's python3-pydicom
and python3-nibabel ship (found in the installed packages, never copied into the repository), and
DICOM variants of a CT-like series made here with DCMTK's tools (gdcmconv for JPEG 2000), each
with the values it holds, known independently of cuimg."""
import gzip
import os
import shutil
import subprocess

import numpy as np
import pydicom
from pydicom.dataset import Dataset, FileDataset, FileMetaDataset
from pydicom.pixel_data_handlers.util import apply_modality_lut
from pydicom.sequence import Sequence
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

_SKIP_SUFFIXES = (".py", ".pyc", ".json", ".txt", ".md", ".dump", ".rst", ".bin", ".gz.bin")


def _package_dir(module):
    return os.path.dirname(module.__file__)


def corpus_dicom_files():
    """Every DICOM file under pydicom's data and nibabel's package: a .dcm (or .dcm.gz) name, or
    "DICM" after a 128-byte preamble (DICOMDIR, the dicomdirtests' files without extension)."""
    import nibabel

    found = []
    for root in (os.path.join(_package_dir(pydicom), "data"), _package_dir(nibabel)):
        for directory, _, names in os.walk(root):
            for name in names:
                path = os.path.join(directory, name)
                if name.endswith((".dcm", ".dcm.gz")):
                    found.append(path)
                elif not name.endswith(_SKIP_SUFFIXES):
                    with open(path, "rb") as f:
                        if f.read(132)[128:] == b"DICM":
                            found.append(path)
    return sorted(found)


def corpus_nifti_files():
    import nibabel

    found = []
    for directory, _, names in os.walk(_package_dir(nibabel)):
        found += [os.path.join(directory, n) for n in names if n.endswith((".nii", ".nii.gz"))]
    return sorted(found)


def stage(path, directory):
    """A folder holding only `path` (a link; a .gz decompressed), for a series reader."""
    os.makedirs(directory)
    name = os.path.basename(path)
    if name.endswith(".gz"):
        with gzip.open(path) as src, open(os.path.join(directory, name[:-3]), "wb") as dst:
            shutil.copyfileobj(src, dst)
        return os.path.join(directory, name[:-3])
    os.symlink(path, os.path.join(directory, name))
    return os.path.join(directory, name)


def pydicom_reference(path):
    """(modality values in cuimg's slice order, None) by pydicom's own decoders and modality
    LUT, or (None, why) when pydicom does not decode the file."""
    try:
        ds = pydicom.dcmread(path)
        frames = ds.pixel_array
    except Exception as e:  # pydicom's handlers raise what they meet
        return None, f"pydicom cannot decode it ({type(e).__name__}: {str(e)[:80]})"
    count = int(ds.get("NumberOfFrames", 1) or 1)
    frames = frames.reshape(count, int(ds.Rows), int(ds.Columns))
    groups = ds.get("PerFrameFunctionalGroupsSequence")
    if count == 1 or groups is None:
        return apply_modality_lut(frames, ds).astype(np.float64), None
    # Enhanced multi-frame: each frame's rescale and position from its functional groups.
    shared = ds.get("SharedFunctionalGroupsSequence", [Dataset()])[0]

    def macro(index, name):
        for item in (groups[index], shared):
            if name in item:
                return item[name][0]
        return Dataset()

    planes, keys = [], []
    for i in range(count):
        transform = macro(i, "PixelValueTransformationSequence")
        slope = float(transform.get("RescaleSlope", 1))
        intercept = float(transform.get("RescaleIntercept", 0))
        iop = np.array(macro(i, "PlaneOrientationSequence").ImageOrientationPatient, float)
        ipp = np.array(macro(i, "PlanePositionSequence").ImagePositionPatient, float)
        planes.append(frames[i].astype(np.float64) * slope + intercept)
        keys.append(float(np.dot(np.cross(iop[:3], iop[3:]), ipp)))
    return np.stack([planes[i] for i in np.argsort(keys, kind="stable")]), None


# --- CT-like variants -----------------------------------------------------------------------


def write_series(
    directory,
    stored,
    *,
    bits_allocated=16,
    bits_stored=12,
    signed=False,
    slopes=None,
    intercept=-1024.0,
    gap=2.5,
    row=(1.0, 0, 0),
    col=(0, 0.8, -0.6),
):
    """One file per slice of `stored` (the stored values as unsigned bit patterns), oblique,
    slopes per slice (default 1); returns the datasets written, in slice order."""
    os.makedirs(directory)
    row, col = np.array(row), np.array(col)
    normal = np.cross(row, col)
    study, series, frame = generate_uid(), generate_uid(), generate_uid()
    written = []
    for z, plane in enumerate(stored):
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = pydicom.uid.CTImageStorage
        meta.MediaStorageSOPInstanceUID = generate_uid()
        meta.TransferSyntaxUID = ExplicitVRLittleEndian
        path = os.path.join(directory, f"ct{(z * 3) % len(stored):03d}.dcm")  # not in z order
        ds = FileDataset(path, {}, file_meta=meta, preamble=b"\0" * 128)
        ds.SOPClassUID, ds.SOPInstanceUID = (
            meta.MediaStorageSOPClassUID,
            meta.MediaStorageSOPInstanceUID,
        )
        ds.StudyInstanceUID, ds.SeriesInstanceUID, ds.FrameOfReferenceUID = study, series, frame
        ds.PatientName, ds.PatientID, ds.Modality = "Corpus^Test", "RD-1", "CT"
        ds.SeriesNumber, ds.InstanceNumber, ds.SeriesDescription = 7, z + 1, "Corpus 2.5mm"
        ds.ImageType = ["ORIGINAL", "PRIMARY", "AXIAL"]
        ds.ImagePositionPatient = [
            f"{v:.4f}" for v in np.array([-40.0, 12.5, 30.0]) + z * gap * normal
        ]
        ds.ImageOrientationPatient = [f"{v:.6f}" for v in list(row) + list(col)]
        ds.PixelSpacing = ["0.75", "0.7"]
        ds.SliceThickness = f"{gap}"
        ds.Rows, ds.Columns = plane.shape
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.BitsAllocated, ds.BitsStored, ds.HighBit = bits_allocated, bits_stored, bits_stored - 1
        ds.PixelRepresentation = 1 if signed else 0
        ds.RescaleSlope = f"{1 if slopes is None else slopes[z]:g}"
        ds.RescaleIntercept = f"{intercept:g}"
        dtype = "<u1" if bits_allocated == 8 else "<u2"
        ds.PixelData = np.ascontiguousarray(plane, dtype=dtype).tobytes()
        ds.is_little_endian, ds.is_implicit_VR = True, False
        ds.save_as(path, write_like_original=False)
        written.append(ds)
    return written


def modality(stored, bits, signed, slope, intercept):
    """The standard's modality values of unsigned stored bit patterns (PS3.3 C.7.6.3, C.11.1)."""
    mask = (1 << bits) - 1
    v = stored.astype(np.int64) & mask
    if signed:
        v = np.where(v & (1 << (bits - 1)), v - (mask + 1), v)
    return v * slope + intercept


def write_multi_frame(path, stored, slopes, intercept, gap=1.5):
    """An enhanced CT object: the frames of `stored` (12-bit unsigned) in reverse position order,
    per-frame position and rescale, shared orientation and spacing."""
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = pydicom.uid.EnhancedCTImageStorage
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = FileDataset(path, {}, file_meta=meta, preamble=b"\0" * 128)
    ds.SOPClassUID, ds.SOPInstanceUID = (
        meta.MediaStorageSOPClassUID,
        meta.MediaStorageSOPInstanceUID,
    )
    ds.StudyInstanceUID, ds.SeriesInstanceUID, ds.FrameOfReferenceUID = (
        generate_uid(),
        generate_uid(),
        generate_uid(),
    )
    ds.Modality, ds.PatientName, ds.SeriesNumber = "CT", "Corpus^Multi", 9
    ds.NumberOfFrames, (ds.Rows, ds.Columns) = len(stored), stored.shape[1:]
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 12, 11, 0
    shared = Dataset()
    orientation, measures = Dataset(), Dataset()
    orientation.ImageOrientationPatient = ["0", "1", "0", "0", "0", "-1"]
    measures.PixelSpacing, measures.SliceThickness = ["0.5", "0.6"], f"{gap}"
    shared.PlaneOrientationSequence, shared.PixelMeasuresSequence = Sequence(
        [orientation]
    ), Sequence([measures])
    ds.SharedFunctionalGroupsSequence = Sequence([shared])
    frames = []
    for k in range(len(stored)):
        item, position, transform = Dataset(), Dataset(), Dataset()
        position.ImagePositionPatient = [
            f"{-(len(stored) - 1 - k) * gap:g}",
            "-20",
            "35",
        ]  # x = normal
        transform.RescaleSlope, transform.RescaleIntercept = f"{slopes[k]:g}", f"{intercept:g}"
        item.PlanePositionSequence = Sequence([position])
        item.PixelValueTransformationSequence = Sequence([transform])
        frames.append(item)
    ds.PerFrameFunctionalGroupsSequence = Sequence(frames)
    ds.PixelData = np.ascontiguousarray(stored, dtype="<u2").tobytes()
    ds.is_little_endian, ds.is_implicit_VR = True, False
    ds.save_as(path, write_like_original=False)


def convert_each(src, dst, command):
    """Every file of src through a DCMTK/GDCM converter (command + [in, out]) into dst."""
    os.makedirs(dst)
    for name in sorted(os.listdir(src)):
        subprocess.run(
            command + [os.path.join(src, name), os.path.join(dst, name)],
            check=True,
            capture_output=True,
        )


def ras_affine(ds_first, spacing_z):
    """NIfTI's (RAS) affine of a DICOM (LPS) placement, from the first slice's own tags."""
    iop = np.array(ds_first.ImageOrientationPatient, float)
    row_spacing, column_spacing = (float(v) for v in ds_first.PixelSpacing)
    m = np.eye(4)
    m[:3, 0] = iop[:3] * column_spacing
    m[:3, 1] = iop[3:] * row_spacing
    m[:3, 2] = np.cross(iop[:3], iop[3:]) * spacing_z
    m[:3, 3] = np.array(ds_first.ImagePositionPatient, float)
    return np.diag([-1, -1, 1, 1]) @ m
