#!/usr/bin/env python3
"""What a PACS script does with cuimg: send a CT series, get the processed series back.

    PYTHONPATH=build/proto/python python3 client/python/examples/dicom_series_morphology.py \
        --target localhost:50051 --steps open:ellipse:5x5x3 ct_in/ ct_out/

(or with the package installed: `pip install client/python`, no PYTHONPATH). A CT volume above
the client's stream_threshold is streamed over several connections by itself; the result is the
same. Prints the new series' UID and size; never a patient field.
"""
import argparse
import sys

import cuimg
from cuimg.dicom import read_series, write_series


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="directory holding one DICOM series")
    parser.add_argument("output", help="new directory for the derived series")
    parser.add_argument("--target", default="localhost:50051")
    parser.add_argument(
        "--steps",
        default="open:ellipse:5x5x3",
        help="morphology chain op:shape:WxH[xD][:iterations],...",
    )
    parser.add_argument("--series_uid", help="the series to read from a directory of several")
    parser.add_argument("--uid_root", help="the organisation's UID root for the new UIDs")
    parser.add_argument("--ca_file", help="PEM CA for TLS")
    parser.add_argument("--token_file", help="bearer token file (TLS only)")
    args = parser.parse_args()

    volume, spacing, datasets = read_series(args.input, series_uid=args.series_uid)
    with cuimg.Client(args.target, ca_file=args.ca_file, token_file=args.token_file) as client:
        try:
            result = client.morphology(volume, args.steps, spacing=spacing)
        except cuimg.CuimgError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    series_uid = write_series(
        datasets, result, args.output, derivation=f"cuimg {args.steps}", uid_root=args.uid_root
    )
    print(
        f"wrote {len(datasets)} slices ({volume.shape[2]}x{volume.shape[1]}, spacing "
        f"{spacing[0]:.3f}x{spacing[1]:.3f}x{spacing[2]:.3f} mm) as series {series_uid}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
