#!/usr/bin/env bash
# Configures and builds cuimg (Release; CUDA sm_90 + PTX) into build/ ($CUIMG_BUILD_DIR to change).
# Extra arguments go to the CMake configure step, e.g. -DCMAKE_CUDA_ARCHITECTURES=89.
# CUIMG_BUILD_TARGETS="cuimg-server cuimg" builds only those targets (the Dockerfile: the image
# needs the two binaries, not the tools).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${CUIMG_BUILD_DIR:-build}"
# ccache where installed (install_deps.sh installs it; CCACHE_DISABLE=1 turns it off): the
# sanitizer builds and the image's build then reuse this build's objects.
source scripts/ccache_env.sh
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${CMAKE_LAUNCHERS[@]}" "$@"
targets=()
for t in ${CUIMG_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" --parallel "${targets[@]}"
