#!/usr/bin/env bash
# Sourced by scripts/build.sh and scripts/sanitize.sh: ccache's settings for cuimg's builds, so
# that builds of one tree in other directories, and the container image's build
# (scripts/test_image.sh), get hits from the regular build's cache.
#   - paths relative to the source tree (base dir), so build/, build-asan/ and the image's
#     /src/build/ compile with the same command lines;
#   - the compiler known by its --version (not its file's mtime), so the toolkit's nvcc mounted
#     into the image's build, or a wrapper script on PATH, counts as the same compiler;
#   - system headers left out of the direct-mode manifests (sloppiness system_headers): the
#     image's Debian 12 base and the host differ in point releases of header packages
#     (linux-libc-dev, libssl-dev), which made every object of the image's build a miss. Point
#     releases keep the ABI; after a wholesale change of the system's headers run `ccache -C`.
# CMAKE_LAUNCHERS holds the CMake arguments that turn ccache on (empty without ccache).
CMAKE_LAUNCHERS=()
if command -v ccache > /dev/null; then
  CMAKE_LAUNCHERS=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
  export CCACHE_COMPILERCHECK="${CCACHE_COMPILERCHECK:-%compiler% --version}"
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-system_headers}"
fi
