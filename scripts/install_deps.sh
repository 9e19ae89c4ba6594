#!/usr/bin/env bash
# Installs every Debian/Ubuntu package cuimg needs (CUDA excepted: the toolkit comes with the
# machine or the nvidia/cuda base image), and nvJPEG's and nvJPEG2000's headers and libraries into
# .deps/nvjpeg and .deps/nvjpeg2k. One script for CI, the README and the Dockerfile, so the
# three never drift apart. Runtime images copy the libraries the binaries load instead
# (scripts/collect_libs.sh), which works whatever the base distribution.
#   scripts/install_deps.sh        build + test dependencies (default; CI, the README)
#   scripts/install_deps.sh build  only what compiling the server and client needs (Dockerfile)
#   scripts/install_deps.sh image  what building and running the image needs (scripts/test_image.sh)
set -euo pipefail

mode="${1:-test}"

build_pkgs=(
  build-essential cmake ninja-build pkg-config git patchelf curl
  # The sanitizer builds reuse the regular build's CUDA objects through it (scripts/sanitize.sh).
  ccache
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev
  libpng-dev libjpeg-dev libturbojpeg0-dev libtiff-dev libdcmtk-dev libassimp-dev libteem-dev
  # DICOM pixel data of every transfer syntax (GDCM with its JPEG, CharLS and OpenJPEG codecs);
  # NIfTI-1/2 through nifticlib.
  libgdcm-dev libnifti2-dev zlib1g-dev
  # DICOM frames the server decodes and encodes on the CPU: JPEG 2000 (OpenJPEG), HTJ2K (OpenJPH),
  # JPEG-LS (CharLS); JPEG through DCMTK's IJG codecs (libdcmtk-dev above).
  libopenjp2-7-dev libopenjph-dev libcharls-dev
  nlohmann-json3-dev libcurl4-openssl-dev
  # nvJPEG comes as NVIDIA's wheel (below), fetched with pip.
  python3-pip
)

test_pkgs=(
  # Test oracles only; cuimg itself never links OpenCV.
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev libopencv-objdetect-dev
  libopencv-videoio-dev opencv-doc
  # `cuimg detect --video` runs the ffmpeg program (tests; the GPU bundle's vtest frames).
  ffmpeg
  # Over-the-wire tests and the Python client.
  python3 python3-grpcio python3-protobuf python3-numpy python3-scipy python3-pydicom
  # Segmentation oracles: scikit-image's reconstruction and regionprops (SciPy's label).
  python3-skimage
  # cuimg.dicom decodes compressed series with GDCM as the CLI does; cuimg.nifti reads NIfTI.
  python3-gdcm python3-nibabel
  # Compressed DICOM test series made and decoded by independent tools (DCMTK's dcmcjpeg,
  # dcmcjpls, dcmcrle and their decoders, from dcmtk below; gdcmconv --j2k; opj_decompress).
  libgdcm-tools libopenjp2-tools
  # HTJ2K frames decoded by OpenJPH's own tool (ojph_expand) to check ours.
  openjph-tools
  python3-matplotlib
  # Pillow: an independent JPEG decoder the server's decodes are held to (test_jpeg_decode_wire).
  python3-pil
  # The Python checks (scripts/check_python.sh): formatter, linter, type checker.
  black flake8 mypy
  # The Python client installed by pip into a venv (tests/e2e/test_python_package.py).
  python3-pip python3-setuptools
  # Metrics checks (promtool + a real Prometheus server in CI); deployment YAML checks; a venv
  # for kubernetes-validate (scripts/install_deploy_tools.sh) and the Python client's install test.
  prometheus yamllint python3-yaml python3-venv
  # DICOMweb: a real PACS (Orthanc and its DICOMweb plugin) and DCMTK's compressors for its series.
  orthanc orthanc-dicomweb dcmtk
  # Throwaway certificates for the TLS tests.
  openssl
  # libFuzzer targets and sanitizer builds (clang's runtimes; llvm-symbolizer for reports).
  clang libclang-rt-dev llvm
  # The format check (scripts/check_format.sh, .clang-format): Debian 12's clang-format 14.
  clang-format
)

# scripts/test_image.sh: the Debian base from Debian's repository (debootstrap), the image built
# (`podman build` carries buildah's code) and run with podman on runc (podman would pull in crun
# otherwise; runc is what test_image.sh configures), /metrics read with curl. The test command runs
# it, so `test` includes these.
image_pkgs=(podman debootstrap runc curl)

# `kubectl kustomize` renders the Kubernetes overlays (tests/e2e/test_deploy.py). Debian's
# kubernetes-client (1.20, kustomize v2.0) unless some kubectl is already installed: another
# package's /usr/bin/kubectl (Kubernetes' or Google Cloud's) would conflict with it.
if [ "$mode" = test ] && ! command -v kubectl > /dev/null; then
  test_pkgs+=(kubernetes-client)
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

case "$mode" in
  build) pkgs=("${build_pkgs[@]}") ;;
  image) pkgs=("${image_pkgs[@]}") ;;
  test) pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}" "${image_pkgs[@]}") ;;
  *) echo "usage: $0 [test|build|image]" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install_deps: all ${#pkgs[@]} packages present"
else
  echo "install_deps: installing ${#missing[@]} packages: ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# NVIDIA's GPU codecs are in neither Debian nor the CUDA toolkit we build with; their wheels carry
# the headers and libraries. Each wheel is unpacked (installed into no Python) into .deps/<name>,
# where CMake looks; scripts/copy_nvjpeg.sh puts the libraries into the bundle and the image. The
# server loads them at run time and decodes on the CPU without them. --target installs into no
# environment (so no PEP 668 refusal); Debian's python3 has the pip installed above. Optional: a
# container build that cannot reach PyPI (a proxy's certificate the image does not trust) takes
# the host's .deps from the build context instead (.dockerignore lets it in).
#   install_wheel NAME PACKAGE VERSION SHA256 HEADER
install_wheel() {
  local name=$1 package=$2 version=$3 sha256=$4 header=$5
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/.deps/$name"
  if [ "$(cat "$dir/VERSION" 2>/dev/null)" = "$version" ] && [ -f "$dir/$header" ]; then
    echo "install_deps: $name $version present"
    return
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "$package==$version --hash=sha256:$sha256" > "$dir/requirements.txt"
  if /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
       --no-deps --no-compile --require-hashes --target "$dir" -r "$dir/requirements.txt"; then
    echo "$version" > "$dir/VERSION"
    echo "install_deps: $name $version in $dir"
  else
    rm -rf "$dir"
    echo "install_deps: $name not installed (pip failed): its frames will decode on the CPU" >&2
  fi
}

if [ "$mode" != image ]; then
  # nvJPEG: JPEG inputs. 13.0.x belongs to CUDA 13.0, which the 580 driver runs.
  install_wheel nvjpeg nvidia-nvjpeg 13.0.4.44 \
    87453d1fcb30ba4d990fcc8753805a1c9ccf786ba17f99cb9e97b84637672646 nvidia/cu13/include/nvjpeg.h
  # nvJPEG2000: JPEG 2000 and HTJ2K DICOM frames (decode) and HTJ2K results (encode); 0.11 is
  # built for CUDA 13.
  install_wheel nvjpeg2k nvidia-nvjpeg2k-cu13 0.11.0.51 \
    5a2463f641842c7571065e0ffb3e380bdc42375987d7bd10aa6c21683837a178 nvidia/nvjpeg2k/include/nvjpeg2k.h
fi
