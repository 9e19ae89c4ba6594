#!/usr/bin/env bash
# The test command: installs dependencies, builds, and runs every test, then the container image's
# build and smoke test. Tests that need a GPU (ctest label `gpu`) skip cleanly without one. Extra
# arguments go to ctest (e.g. -L gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/install_deploy_tools.sh
bash scripts/build.sh
bash scripts/check_stock_cmake.sh
# The format check (.clang-format): a mis-formatted source fails fast, before the tests.
bash scripts/check_format.sh
ctest --test-dir "${CUIMG_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
# The Docker image, built offline with podman and run read-only as non-root (CI; like the
# hardening runs, CUIMG_SKIP_IMAGE=1 or ctest arguments skip it).
if [ "${CUIMG_SKIP_IMAGE:-0}" != 1 ] && [ $# -eq 0 ]; then
  if ! bash scripts/test_image.sh; then
    echo "test.sh: the container image failed to build or its smoke test failed" \
         "(scripts/test_image.sh; podman's build log and state in build-image/)" >&2
    exit 1
  fi
fi
# The hardening runs (CI; CUIMG_SKIP_HARDENING=1 skips them, and so do ctest arguments): the
# service under ASan+UBSan and TSan, then every fuzzer for a bounded time.
if [ "${CUIMG_SKIP_HARDENING:-0}" != 1 ] && [ $# -eq 0 ]; then
  bash scripts/sanitize.sh
  bash scripts/fuzz.sh
fi
