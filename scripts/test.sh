#!/usr/bin/env bash
# The test command: installs dependencies, builds, and runs every test, then the container image's
# build and smoke test. Tests that need a GPU (ctest label `gpu`) skip cleanly without one. Extra
# arguments go to ctest (e.g. -L gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/install_deploy_tools.sh
# The fast checks, before the long build: C++ formatted as .clang-format says (includes ordered
# too), product files within 500 lines, Python formatted, linted and the client type-checked, and
# the layers (cmake/layers.txt) held by the CMake graph, the includes and docs/design.md.
bash scripts/check_format.sh
bash scripts/check_source_length.sh
bash scripts/check_python.sh
python3 scripts/check_layers.py
bash scripts/build.sh
bash scripts/check_stock_cmake.sh
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
