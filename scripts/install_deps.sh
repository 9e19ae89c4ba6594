#!/usr/bin/env bash
# Installs every Debian package cuimg needs to build, test and run (CUDA excepted: the toolkit
# comes with the machine or the nvidia/cuda base image). One script for CI, the README and the
# Dockerfile, so the three never drift apart.
#   scripts/install_deps.sh          build + test dependencies (default)
#   scripts/install_deps.sh runtime  only the shared libraries the binaries load
set -euo pipefail

mode="${1:-build}"

runtime_pkgs=(
  libgrpc++1.51 libprotobuf32 libabsl20220623 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0
  libpng16-16 libjpeg62-turbo libturbojpeg0 libtiff6 libdcmtk17 libassimp5 ca-certificates
)

build_pkgs=(
  build-essential cmake ninja-build pkg-config git patchelf curl
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev
  libpng-dev libjpeg-dev libturbojpeg0-dev libtiff-dev libdcmtk-dev libassimp-dev
  # Test oracles only; cuimg itself never links OpenCV.
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev libopencv-objdetect-dev
  libopencv-videoio-dev opencv-doc
  # Over-the-wire tests and the Python client.
  python3 python3-grpcio python3-protobuf python3-numpy python3-scipy python3-pydicom
  python3-matplotlib
  # Metrics checks (promtool + a real Prometheus server in CI).
  prometheus
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

case "$mode" in
  runtime) pkgs=("${runtime_pkgs[@]}") ;;
  build) pkgs=("${build_pkgs[@]}" "${runtime_pkgs[@]}") ;;
  *) echo "usage: $0 [build|runtime]" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install_deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${#missing[@]} packages: ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
