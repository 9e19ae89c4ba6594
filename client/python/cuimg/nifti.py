"""NIfTI-1 and NIfTI-2 volumes (.nii, .nii.gz) for scripts, with nibabel (Debian python3-nibabel),
by the cuimg CLI's rules (client/io/nifti_file.h): read_nifti gives a (D, H, W) volume of uint8,
int16, uint16 or float32 (int8 widened to int16, other types refused with ValueError); a
scl_slope/scl_inter scaling (ignored when the slope is 0, or 1 and 0) gives int16 when slope,
intercept and data are integers (ValueError for a value outside int16, never clamped) and float32
otherwise (never rounded). write_nifti writes the volume as it is (scl_slope unset), keeping a
source image's qform and sform (codes included), xyzt_units and NIfTI version; the file is whole
or not there (written under a temporary name and renamed)."""
import nibabel as nib
import numpy as np

from cuimg._atomic import staged_file

_KEPT = (np.uint8, np.int16, np.uint16, np.float32)


def read_nifti(path):
    """(volume (D, H, W), spacing (x, y, z) mm, the nibabel image: its header, qform and sform)."""
    image = nib.load(path)
    # The NIfTI header's own dimensions, as the CLI reads them (nibabel gives a CIFTI-2 file's
    # shape from its XML extension, the NIfTI-2 header beside it).
    header = getattr(image, "nifti_header", image.header)
    shape = tuple(int(n) for n in header["dim"][1 : int(header["dim"][0]) + 1])
    if len(shape) < 2 or any(n != 1 for n in shape[3:]):
        raise ValueError(
            f"{path}: shape {shape} (cuimg reads 2D and 3D volumes; dimensions past "
            "the third must be 1)"
        )
    raw = np.asanyarray(image.dataobj.get_unscaled())
    if raw.dtype == np.int8:
        raw = raw.astype(np.int16)
    elif raw.dtype.newbyteorder("=") not in [np.dtype(t) for t in _KEPT]:
        raise ValueError(
            f"{path}: data type {raw.dtype} (cuimg reads uint8, int8, int16, uint16 and float32)"
        )
    raw = raw.astype(raw.dtype.newbyteorder("="))
    # nib.load moves scl_slope/scl_inter from the image's header to its data proxy.
    slope, inter = float(image.dataobj.slope), float(image.dataobj.inter)
    if np.isfinite(slope) and slope != 0 and not (slope == 1 and inter == 0):
        values = raw.astype(np.float64) * slope + inter
        if raw.dtype != np.float32 and slope == round(slope) and inter == round(inter):
            if values.min() < -32768 or values.max() > 32767:
                raise ValueError(f"{path}: values after scl_slope/scl_inter outside int16")
            raw = values.astype(np.int16)
        else:
            raw = values.astype(np.float32)
    volume = raw.reshape(shape[:3] if len(shape) >= 3 else shape[:2])
    # NIfTI's first index is x (fastest in the file): (x, y, z) -> (z, y, x).
    volume = np.ascontiguousarray(volume.T)
    zooms = [abs(float(z)) for z in header.get_zooms()[:3]] + [0.0]
    spacing = (zooms[0], zooms[1], zooms[2] if len(shape) >= 3 else 0.0)
    return volume, spacing, image


def write_nifti(path, volume, spacing=(1.0, 1.0, 1.0), like=None):
    """Writes `volume` ((H, W) or (D, H, W) of uint8, int16, uint16 or float32) to path; `like`
    (a nibabel image, e.g. read_nifti's third value) gives the qform, sform and version."""
    volume = np.asarray(volume)
    if volume.dtype.type not in _KEPT:
        raise ValueError(f"write_nifti: dtype {volume.dtype} (uint8, int16, uint16 or float32)")
    data = np.asarray(volume.T)
    kind = type(like) if isinstance(like, (nib.Nifti1Image, nib.Nifti2Image)) else nib.Nifti1Image
    image = kind(data, None)
    if like is not None:
        qform, qcode = like.header.get_qform(coded=True)
        sform, scode = like.header.get_sform(coded=True)
        if qform is not None:
            image.set_qform(qform, int(qcode))
        if sform is not None:
            image.set_sform(sform, int(scode))
        image.header.set_xyzt_units(*like.header.get_xyzt_units())
    if like is None:  # else the qform's own pixdim stays
        image.header.set_zooms([s if s > 0 else 1.0 for s in spacing[: data.ndim]])
    image.header.set_slope_inter(np.nan, np.nan)
    with staged_file(path) as temp:  # whole or not at all
        nib.save(image, temp)
