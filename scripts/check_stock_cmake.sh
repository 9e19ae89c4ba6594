#!/usr/bin/env bash
# Configures a scratch build against the distribution's unmodified CMake modules, taken from the
# cmake-data package of the installed version, ahead of the machine's own copy on
# CMAKE_MODULE_PATH. A build machine whose modules were edited by hand (one of ours once had
# FindCUDAToolkit.cmake patched) would otherwise hide a configure failure that a fresh install
# hits. Configure only, tests and benchmarks off: about 10 s plus a 10 MB download.
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(dpkg-query -W -f='${Version}' cmake-data)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# apt's sandbox user must be able to write there.
chmod 0755 "$work"
mkdir -m 0777 "$work/deb"
(cd "$work/deb" && apt-get download -qq "cmake-data=$version")
dpkg-deb -x "$work"/deb/cmake-data_*.deb "$work/stock"
modules="$(echo "$work"/stock/usr/share/cmake-*/Modules)"
cmake -S . -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_MODULE_PATH="$modules" \
  -DCUIMG_BUILD_TESTS=OFF -DCUIMG_BUILD_BENCHMARKS=OFF > "$work/configure.log" 2>&1 || {
  cat "$work/configure.log" >&2
  echo "check_stock_cmake: configure fails with the stock modules of cmake-data $version" >&2
  exit 1
}
echo "check_stock_cmake: configures with the stock modules of cmake-data $version"
