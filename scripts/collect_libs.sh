#!/usr/bin/env bash
# Copies the shared libraries that BINARIES load into LIBDIR, except the C/C++ runtime and the GPU
# driver (present on any target), and points the binaries there (RPATH $ORIGIN/../lib when LIBDIR
# is ../lib of their directory). Used by the GPU bundle and the Docker runtime image.
#   scripts/collect_libs.sh LIBDIR BINARY...
set -euo pipefail
libdir=$1
shift
mkdir -p "$libdir"
system_libs='^(linux-vdso|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|ld-linux|libstdc\+\+|libgcc_s|libcuda\.so|libnvidia)'
for b in "$@"; do
  ldd "$b" | awk '/=> \//{print $1" "$3}' | while read -r name path; do
    if ! echo "$name" | grep -Eq "$system_libs" && [ ! -e "$libdir/$name" ]; then
      cp -L "$path" "$libdir/$name"
    fi
  done
done
for b in "$@"; do
  strip --strip-unneeded "$b"
  patchelf --set-rpath '$ORIGIN/../lib' "$b"
done
for l in "$libdir"/*; do
  strip --strip-unneeded "$l" 2>/dev/null || true
  patchelf --set-rpath '$ORIGIN' "$l"
done
