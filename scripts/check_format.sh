#!/usr/bin/env bash
# Checks that every C++ and CUDA source is formatted as .clang-format says (clang-format 14, as
# Debian 12 ships it; scripts/install_deps.sh installs it). `--fix` rewrites the files instead.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' 2>/dev/null ||
                     find kernels server client tests benchmarks tools codec \
                       \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \))
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! clang-format --dry-run --Werror "${files[@]}" 2> "$log"; then
  grep -m 20 "error:" "$log" >&2 || true
  echo "check_format: $(grep -c 'error:' "$log") lines not formatted as .clang-format" \
       "says; run scripts/check_format.sh --fix (clang-format 14)" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
