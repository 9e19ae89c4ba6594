#!/usr/bin/env bash
# Sourced by scripts/build.sh and scripts/sanitize.sh: ccache's settings for cuimg's builds, so
# that builds of one tree in other directories, and the container image's build
# (scripts/test_image.sh), get hits from the regular build's cache.
#   - paths relative to the source tree (base dir), so build/, build-asan/ and the image's
#     /src/build/ compile with the same command lines;
#   - the compiler known by its --version (not its file's mtime), so the toolkit's nvcc mounted
#     into the image's build, or a wrapper script on PATH, counts as the same compiler;
#   - one locale for the compilers (LANG=C.UTF-8, no LC_ overrides): ccache hashes LANG and the
#     LC_ variables, and the image's build stage had none set where a host has LANG=C.UTF-8
#     (every object of the image's build missed).
# CMAKE_LAUNCHERS holds the CMake arguments that turn ccache on (empty without ccache).
CMAKE_LAUNCHERS=()
if command -v ccache > /dev/null; then
  CMAKE_LAUNCHERS=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
  export CCACHE_COMPILERCHECK="${CCACHE_COMPILERCHECK:-%compiler% --version}"
  export LANG=C.UTF-8
  unset LC_ALL LC_CTYPE LC_MESSAGES
fi
