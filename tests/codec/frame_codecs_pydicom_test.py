"""The server's frame codecs (codec/dicom_frame.h, frame_encode.h, run by frame_codec_tool) against
independent decoders, on frames the real tools compress:

- DCMTK's dcmcrle, dcmcjpeg (baseline, extended, lossless SV1 and predictor 6), dcmcjpls (lossless,
  near-lossless) and GDCM's gdcmconv --j2k write 2-frame series of u8, u16 (12 and 16 bits stored)
  and i16 (12 and 16) pixels; every frame decodes to pydicom's pixel_array (pydicom 2.3 with GDCM's
  codecs, as Debian has them), and lossless frames to the source values.
- HTJ2K, which Debian's pydicom and GDCM do not know: ojph_compress's unsigned codestreams
  (lossless and lossy) decode to opj_decompress's output, and lossless ones to ojph_expand's and
  the source. (ojph_compress 0.9 stores a signed raw image's samples as their unsigned bit
  patterns in a signed component, which decoders clamp: codec/dicom_frame.h. Signed HTJ2K is
  checked on our encoder's frames.)
- Our lossless encoders: HTJ2K and JPEG 2000 frames that opj_decompress (and, for unsigned pixels,
  ojph_expand, whose raw writer clips negative samples to 0) decodes to the source.
- Every frame above cut in half is refused: exit 3, INVALID_ARGUMENT CORRUPT_ENCODED_DATA.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import pydicom
from pydicom import encaps
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import ExplicitVRLittleEndian, generate_uid

TOOL = os.environ["CUIMG_FRAME_CODEC_TOOL"]
HTJ2K_LOSSLESS, HTJ2K = "1.2.840.10008.1.2.4.201", "1.2.840.10008.1.2.4.203"
J2K_LOSSLESS = "1.2.840.10008.1.2.4.90"
ROWS, COLUMNS, FRAMES = 61, 47, 2

# name: (dtype, bits stored, signed)
PIXELS = {
    "u8": (np.uint8, 8, False),
    "u16_12": (np.uint16, 12, False),
    "u16": (np.uint16, 16, False),
    "i16": (np.int16, 16, True),
    "i16_12": (np.int16, 12, True),
}
# name: (command, lossless)
COMPRESSORS = {
    "rle": (["dcmcrle"], True),
    "jpeg_baseline": (["dcmcjpeg", "+eb"], False),
    "jpeg_extended": (["dcmcjpeg", "+ee"], False),
    "jpeg_sv1": (["dcmcjpeg", "+e1"], True),
    "jpeg_lossless_p6": (["dcmcjpeg", "+el", "+sv", "6"], True),
    "jpegls": (["dcmcjpls"], True),
    "jpegls_near": (["dcmcjpls", "+en", "+md", "2"], False),
    "j2k": (["gdcmconv", "--j2k"], True),
}
# What the tools themselves refuse to make (so no frame exists to test).
TOOL_REFUSES = {("i16", "jpegls_near"), ("i16_12", "jpegls_near")}

failures = []
checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        failures.append(what)
        print("FAIL", what)


def pixels(name, seed):
    dtype, bits, signed = PIXELS[name]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:ROWS, 0:COLUMNS]
    smooth = (x * 37 + y * 91) % (hi - lo + 1) + lo
    noise = rng.integers(lo, hi + 1, (ROWS, COLUMNS))
    a = np.where(rng.random((ROWS, COLUMNS)) < 0.3, noise, smooth)
    a[0, 0], a[0, 1] = lo, hi  # both ends of the range
    return a.astype(dtype)


def write_native(path, frames, bits, signed):
    ds = Dataset()
    ds.file_meta = FileMetaDataset()
    ds.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds.file_meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.2"
    ds.file_meta.MediaStorageSOPInstanceUID = generate_uid()
    ds.SOPClassUID = ds.file_meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = ds.file_meta.MediaStorageSOPInstanceUID
    ds.is_little_endian, ds.is_implicit_VR = True, False
    ds.Modality, ds.PatientName = "CT", "Test^Frames"
    ds.Rows, ds.Columns, ds.NumberOfFrames = ROWS, COLUMNS, len(frames)
    ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
    ds.BitsAllocated = frames[0].dtype.itemsize * 8
    ds.BitsStored, ds.HighBit, ds.PixelRepresentation = bits, bits - 1, int(signed)
    ds.PixelData = np.stack(frames).tobytes()
    ds.save_as(path, write_like_original=False)


def decode(tmp, uid, frame, rows, columns, bits_allocated, bits_stored, signed):
    """Our decode of `frame`: (values, None) or (None, the tool's stderr and exit code)."""
    src, out = os.path.join(tmp, "frame.bin"), os.path.join(tmp, "decoded.bin")
    with open(src, "wb") as f:
        f.write(frame)
    r = subprocess.run(
        [
            TOOL,
            "decode",
            uid,
            str(rows),
            str(columns),
            str(bits_allocated),
            str(bits_stored),
            str(int(signed)),
            src,
            out,
        ],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        return None, (r.returncode, r.stderr.strip())
    dtype = np.int16 if signed else (np.uint8 if bits_allocated == 8 else np.uint16)
    return np.fromfile(out, dtype).reshape(rows, columns), None


def expect_refused(tmp, what, uid, frame, rows, columns, bits_allocated, bits_stored, signed):
    values, error = decode(tmp, uid, frame, rows, columns, bits_allocated, bits_stored, signed)
    check(
        values is None
        and error[0] == 3
        and error[1].startswith("INVALID_ARGUMENT CORRUPT_ENCODED_DATA frame:"),
        f"{what}: a frame cut to {len(frame)} bytes is refused ({error})",
    )


def dicom_series(tmp):
    for pname, (dtype, bits, signed) in PIXELS.items():
        source = [pixels(pname, 10 * k + len(pname)) for k in range(FRAMES)]
        native = os.path.join(tmp, f"{pname}.dcm")
        write_native(native, source, bits, signed)
        for cname, (command, lossless) in COMPRESSORS.items():
            what = f"{pname} {cname}"
            path = os.path.join(tmp, f"{pname}_{cname}.dcm")
            r = subprocess.run(command + [native, path], capture_output=True, text=True)
            if (pname, cname) in TOOL_REFUSES:
                check(r.returncode != 0, f"{what}: the tool still refuses it (update the list)")
                continue
            check(r.returncode == 0, f"{what}: {command[0]} compresses ({r.stderr.strip()})")
            if r.returncode != 0:
                continue
            ds = pydicom.dcmread(path)
            reference = ds.pixel_array
            uid = str(ds.file_meta.TransferSyntaxUID)
            frames = list(encaps.generate_pixel_data_frame(ds.PixelData, FRAMES))
            check(len(frames) == FRAMES, f"{what}: {FRAMES} frames")
            for k, frame in enumerate(frames):
                # The tools may rewrite the pixel module (dcmcjpeg +eb stores 8 bits).
                desc = (
                    ds.Rows,
                    ds.Columns,
                    ds.BitsAllocated,
                    ds.BitsStored,
                    bool(ds.PixelRepresentation),
                )
                values, error = decode(tmp, uid, frame, *desc)
                check(error is None, f"{what} frame {k} ({uid}) decodes: {error}")
                if error is not None:
                    continue
                check(
                    np.array_equal(values.astype(np.int64), reference[k].astype(np.int64)),
                    f"{what} frame {k} ({uid}) equals pydicom's",
                )
                if lossless:
                    check(
                        np.array_equal(values.astype(np.int64), source[k].astype(np.int64)),
                        f"{what} frame {k} equals the source",
                    )
                if k == 0:
                    expect_refused(tmp, what, uid, frame[: len(frame) // 2], *desc)


def raw_args(dtype, bits, signed):
    return [
        "-dims",
        f"{{{COLUMNS},{ROWS}}}",
        "-num_comps",
        "1",
        "-signed",
        "true" if signed else "false",
        "-bit_depth",
        str(bits),
        "-downsamp",
        "{1,1}",
    ]


def read_raw(path, dtype):
    return np.fromfile(path, dtype).reshape(ROWS, COLUMNS)


def openjph_codestreams(tmp):
    for pname, (dtype, bits, signed) in PIXELS.items():
        a = pixels(pname, 99)
        raw, j2c, expanded = (os.path.join(tmp, n) for n in ("a.raw", "a.j2c", "e.raw"))
        # A raw file of 12-bit samples holds their 12-bit patterns.
        (a & ((1 << bits) - 1) if signed and bits < 16 else a).tofile(raw)
        allocated = 8 * a.dtype.itemsize
        for uid, options in (
            (HTJ2K_LOSSLESS, ["-reversible", "true"]),
            (HTJ2K, ["-reversible", "false", "-qstep", "0.01"]),
        ):
            what = f"{pname} ojph_compress {uid}"
            subprocess.run(
                ["ojph_compress", "-i", raw, "-o", j2c] + options + raw_args(dtype, bits, signed),
                check=True,
                capture_output=True,
            )
            with open(j2c, "rb") as f:
                frame = f.read()
            values, error = decode(tmp, uid, frame, ROWS, COLUMNS, allocated, bits, signed)
            check(error is None, f"{what} decodes: {error}")
            if error is not None:
                continue
            if not signed:  # the tools' raw writers change signed samples
                subprocess.run(
                    ["opj_decompress", "-i", j2c, "-o", expanded], check=True, capture_output=True
                )
                check(
                    np.array_equal(values, read_raw(expanded, dtype)),
                    f"{what} equals opj_decompress's",
                )
            if uid == HTJ2K_LOSSLESS and not signed:
                # Lossy decoders round the inverse wavelet their own way; lossless ones agree.
                subprocess.run(
                    ["ojph_expand", "-i", j2c, "-o", expanded], check=True, capture_output=True
                )
                check(
                    np.array_equal(values, read_raw(expanded, dtype)),
                    f"{what} equals ojph_expand's",
                )
                check(np.array_equal(values, a), f"{what} equals the source")
            expect_refused(
                tmp, what, uid, frame[: len(frame) // 2], ROWS, COLUMNS, allocated, bits, signed
            )


def our_encoders(tmp):
    for pname in ("u8", "u16", "i16"):
        dtype, bits, signed = PIXELS[pname]
        a = pixels(pname, 7)
        raw, j2c, out = (os.path.join(tmp, n) for n in ("a.raw", "enc.j2c", "d.raw"))
        a.tofile(raw)
        for codec, uid in (("htj2k", HTJ2K_LOSSLESS), ("j2k", J2K_LOSSLESS)):
            what = f"{pname} our {codec} encoder"
            r = subprocess.run(
                [TOOL, "encode", codec, pname, str(ROWS), str(COLUMNS), raw, j2c],
                capture_output=True,
                text=True,
            )
            check(r.returncode == 0, f"{what} encodes ({r.stderr.strip()})")
            if r.returncode != 0:
                continue
            with open(j2c, "rb") as f:
                frame = f.read()
            subprocess.run(
                ["opj_decompress", "-i", j2c, "-o", out], check=True, capture_output=True
            )
            check(np.array_equal(read_raw(out, dtype), a), f"{what}: opj_decompress's equals")
            if codec == "htj2k" and not signed:
                subprocess.run(
                    ["ojph_expand", "-i", j2c, "-o", out], check=True, capture_output=True
                )
                check(np.array_equal(read_raw(out, dtype), a), f"{what}: ojph_expand's equals")
            values, error = decode(
                tmp, uid, frame, ROWS, COLUMNS, 8 * a.dtype.itemsize, bits, signed
            )
            check(error is None and np.array_equal(values, a), f"{what}: ours equals ({error})")


def unknown_syntax(tmp):
    _, error = decode(tmp, "1.2.840.10008.1.2.4.100", b"\0" * 8, 2, 2, 8, 8, False)
    check(
        error is not None
        and error[0] == 3
        and error[1].startswith("INVALID_ARGUMENT UNSUPPORTED_ENCODING syntax:"),
        f"MPEG-2 is refused as a syntax the server does not decode ({error})",
    )


def main():
    with tempfile.TemporaryDirectory() as tmp:
        dicom_series(tmp)
        openjph_codestreams(tmp)
        our_encoders(tmp)
        unknown_syntax(tmp)
    print(f"frame codecs: {checks - len(failures)} of {checks} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
