#!/usr/bin/env bash
# Product source files stay within 500 lines: a file that grows past it is split by
# responsibility (docs/design.md). Tests, benchmarks and tools are not product; vendored protos
# are not ours. A file that must stay longer is listed in `exceptions` with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=500
exceptions=()  # none
mapfile -t files < <(git ls-files common kernels codec proto server client |
                     grep -E '\.(h|cc|cu|cuh|py|proto)$' | grep -v '^proto/third_party/')
long=0
for f in "${files[@]}"; do
  lines=$(wc -l < "$f")
  if [ "$lines" -gt "$limit" ] && [[ " ${exceptions[*]} " != *" $f "* ]]; then
    echo "check_source_length: $f has $lines lines (at most $limit: split it by responsibility)" >&2
    long=$((long + 1))
  fi
done
[ "$long" = 0 ] || exit 1
echo "check_source_length: ${#files[@]} product files within $limit lines"
