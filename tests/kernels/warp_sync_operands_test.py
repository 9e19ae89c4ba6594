#!/usr/bin/env python3
"""No warp-synchronous intrinsic in the segmentation kernels is an operand only some lanes evaluate.

A full-mask __shfl_*_sync / __ballot_sync / __any_sync / __all_sync / __reduce_*_sync /
__match_*_sync must be executed by every lane it names. Written as the right operand of || or
&&, or as a branch of ?:, it is skipped by the lanes whose left operand decides (issue 48:
`lane == 0 || __shfl_up_sync(...)` in ReduceRuns compiled to a branch around the shuffle for
lane 0, and the labelling and the mask steps hung on an H200). No GPU can catch this in CI, so
the sources of kernels/src/segmentation are checked: each statement (text between ; { }) with
such an intrinsic after a short-circuit or conditional operator fails. (Elsewhere two such
statements have compile-time left operands, so every lane of a warp takes the same side.)
Usage: warp_sync_operands_test.py [ROOT]
"""
import pathlib
import re
import sys

INTRINSIC = re.compile(r"__(shfl(_up|_down|_xor)?|ballot|any|all|reduce_\w+|match_\w+)_sync\b")
OPERATOR = re.compile(r"\|\||&&|\?")
SOURCES = ("*.cu", "*.cuh", "*.h")
FOLDER = pathlib.Path("kernels/src/segmentation")


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def offenders(path: pathlib.Path) -> list[str]:
    text = strip_comments(path.read_text(encoding="utf-8"))
    found = []
    start = 0
    for match in re.finditer(r"[;{}]", text + ";"):
        statement = text[start : match.start()]
        call = INTRINSIC.search(statement)
        if call is not None and OPERATOR.search(statement[: call.start()]):
            line = text.count("\n", 0, start + call.start()) + 1
            found.append(f"{path}:{line}: {' '.join(statement.split())}")
        start = match.end()
    return found


def main() -> int:
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2]
    files = sorted(f for pattern in SOURCES for f in (root / FOLDER).rglob(pattern))
    if not files:
        print(f"no sources under {root / FOLDER}")
        return 1
    bad = [o for f in files for o in offenders(f)]
    for o in bad:
        print("warp-synchronous intrinsic that only some lanes may execute:", o)
    print(f"{len(files)} files checked, {len(bad)} offending statements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
