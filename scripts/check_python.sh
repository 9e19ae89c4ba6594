#!/usr/bin/env bash
# Checks the Python sources: formatted as black says, clean under flake8, and the client package
# (client/python/cuimg) type-checked by mypy. Debian 12's tools (scripts/install_deps.sh installs
# them); their settings are in pyproject.toml and .flake8. `--fix` formats instead of checking.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.py' 2>/dev/null || find . -name '*.py' -not -path './build*')
# client/python has a pyproject.toml of its own (the package's), which black would take instead.
black=(black --quiet --config pyproject.toml)
if [ "${1:-}" = --fix ]; then
  "${black[@]}" "${files[@]}"
  exit 0
fi
status=0
if ! "${black[@]}" --check "${files[@]}"; then
  echo "check_python: files not formatted as black says; run scripts/check_python.sh --fix" >&2
  status=1
fi
flake8 "${files[@]}" || status=1
mypy client/python/cuimg || status=1
[ "$status" = 0 ] && echo "check_python: ${#files[@]} files formatted and linted; cuimg type-checked"
exit "$status"
