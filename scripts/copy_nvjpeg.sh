#!/usr/bin/env bash
# Copies the NVIDIA codec libraries the server loads at run time (dlopen) into LIBDIR (the
# bundle's and the Docker image's lib/, on the binaries' RPATH), where the server finds them:
# libnvjpeg.so.13 (JPEG inputs) and libnvjpeg2k.so.0 (JPEG 2000 and HTJ2K DICOM frames), from
# .deps (scripts/install_deps.sh), else from the CUDA toolkit when it ships them (NVIDIA's devel
# images). Without one, nothing is copied for it and the server decodes those inputs on the CPU
# (its start-up line says so).
#   scripts/copy_nvjpeg.sh LIBDIR
set -euo pipefail
cd "$(dirname "$0")/.."
libdir=$1
# copy NAME CANDIDATE...
copy() {
  local name=$1
  shift
  for candidate in "$@"; do
    if [ -e "$candidate" ]; then
      mkdir -p "$libdir"
      cp -L "$candidate" "$libdir/$name"
      echo "copy_nvjpeg: $candidate -> $libdir"
      return
    fi
  done
  echo "copy_nvjpeg: no $name (scripts/install_deps.sh); its inputs will decode on the CPU"
}
copy libnvjpeg.so.13 .deps/nvjpeg/nvidia/cu13/lib/libnvjpeg.so.13 /usr/local/cuda/lib64/libnvjpeg.so.13
copy libnvjpeg2k.so.0 .deps/nvjpeg2k/nvidia/nvjpeg2k/lib/libnvjpeg2k.so.0 \
  /usr/local/cuda/lib64/libnvjpeg2k.so.0
