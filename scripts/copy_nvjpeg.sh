#!/usr/bin/env bash
# Copies libnvjpeg.so.13 into LIBDIR (the bundle's and the Docker image's lib/, on the binaries'
# RPATH), where the server's dlopen finds it: from .deps/nvjpeg (scripts/install_deps.sh), else
# from the CUDA toolkit when it ships one (NVIDIA's devel images). Without either, nothing is
# copied and the server decodes JPEGs on the CPU (its start-up line says so).
#   scripts/copy_nvjpeg.sh LIBDIR
set -euo pipefail
cd "$(dirname "$0")/.."
libdir=$1
for candidate in .deps/nvjpeg/nvidia/cu13/lib/libnvjpeg.so.13 /usr/local/cuda/lib64/libnvjpeg.so.13; do
  if [ -e "$candidate" ]; then
    mkdir -p "$libdir"
    cp -L "$candidate" "$libdir/libnvjpeg.so.13"
    echo "copy_nvjpeg: $candidate -> $libdir"
    exit 0
  fi
done
echo "copy_nvjpeg: no libnvjpeg.so.13 (scripts/install_deps.sh); JPEGs will decode on the CPU"
