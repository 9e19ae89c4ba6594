#!/usr/bin/env bash
# The test command: installs dependencies, builds, and runs every test. Tests that need a GPU
# (ctest label `gpu`) skip cleanly without one. Extra arguments go to ctest (e.g. -L gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
ctest --test-dir "${CUIMG_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
