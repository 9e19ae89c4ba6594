#!/usr/bin/env bash
# The test command: installs dependencies, builds, and runs every test. Tests that need a GPU
# (ctest label `gpu`) skip cleanly without one. Extra arguments go to ctest (e.g. -L gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/install_deploy_tools.sh
bash scripts/build.sh
bash scripts/check_stock_cmake.sh
ctest --test-dir "${CUIMG_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
# The hardening runs (CI; CUIMG_SKIP_HARDENING=1 skips them, and so do ctest arguments): the
# service under ASan+UBSan and TSan, then every fuzzer for a bounded time.
if [ "${CUIMG_SKIP_HARDENING:-0}" != 1 ] && [ $# -eq 0 ]; then
  bash scripts/sanitize.sh
  bash scripts/fuzz.sh
fi
