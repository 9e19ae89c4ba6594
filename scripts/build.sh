#!/usr/bin/env bash
# Configures and builds cuimg (Release; CUDA sm_90 + PTX) into build/ ($CUIMG_BUILD_DIR to change).
# Extra arguments go to the CMake configure step, e.g. -DCMAKE_CUDA_ARCHITECTURES=89.
# CUIMG_BUILD_TARGETS="cuimg-server cuimg" builds only those targets (the Dockerfile: the image
# needs the two binaries, not the tools).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${CUIMG_BUILD_DIR:-build}"
# ccache where installed (install_deps.sh installs it): the sanitizer builds then reuse this
# build's CUDA objects instead of compiling the kernels twice more (CCACHE_DISABLE=1 turns it off).
launchers=()
if command -v ccache > /dev/null; then
  launchers=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launchers[@]}" "$@"
targets=()
for t in ${CUIMG_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" --parallel "${targets[@]}"
