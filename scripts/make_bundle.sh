#!/usr/bin/env bash
# Builds a self-contained bundle for the GPU machine in bundle/: the binaries (server, client, GPU
# tests, benchmarks) with the non-system .so files they load (RPATH $ORIGIN/../lib), the Python
# stubs and test/benchmark scripts, and gpu_run.sh. Run there as: bash bundle/gpu_run.sh
# CUIMG_BUNDLE picks the binaries when all of them no longer fit the device tool's carry limit:
# all (default), tests (the GPU tests, for gpu_run.sh's tests, sanitize and e2e steps) or bench
# (the benchmarks); the server, client and transport binaries travel in each.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--no-build" ] || bash scripts/build.sh
build_dir="${CUIMG_BUILD_DIR:-build}"
out=bundle
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/python" "$out/tests" "$out/benchmarks"

binaries=(
  "$build_dir/server/cuimg-server"
  # The server's helper for frames whose decoders may abort (codec/frame_sandbox.h), beside it.
  "$build_dir/codec/cuimg-frame-decoder"
  "$build_dir/client/cuimg"
  "$build_dir/benchmarks/morphology_bench"
  "$build_dir/tests/morphology_gpu_test"
  "$build_dir/benchmarks/gradient_pyramid_bench"
  "$build_dir/tests/gradient_gpu_test"
  "$build_dir/tests/pyramid_gpu_test"
  "$build_dir/benchmarks/deform_bench"
  "$build_dir/tests/deform_gpu_test"
  "$build_dir/benchmarks/reconstruction_bench"
  "$build_dir/tests/reconstruction_gpu_test"
  "$build_dir/benchmarks/detect_bench"
  "$build_dir/tests/detect_gpu_test"
  "$build_dir/tests/hog_math_gpu_test"
  "$build_dir/benchmarks/label_bench"
  "$build_dir/tests/label_gpu_test"
  # The segmentation steps chained with today's on CUDA equal the CPU reference's chain (issue 48).
  "$build_dir/tests/segmentation_chain_gpu_test"
  "$build_dir/tests/jpeg_decode_gpu_test"
  "$build_dir/benchmarks/jpeg_decode_compare"
  "$build_dir/tests/staged_copy_gpu_test"
  "$build_dir/tests/shared_memory_gpu_test"
  # Batches (issue 50): stacked images, and frames sharing HOG launches, equal each alone.
  "$build_dir/tests/batch_gpu_test"
  "$build_dir/tests/detect_batch_gpu_test"
  "$build_dir/benchmarks/staging_bench"
  # DICOM frames: nvJPEG2000 against the CPU decoders (issue 49).
  "$build_dir/tests/nvjpeg2k_frames_gpu_test"
  "$build_dir/benchmarks/frame_decode_bench"
  # OpenCV 4.6's CPU HOG, timed beside detect_bench (the GPU machine's OpenCV 5 has no HOG).
  "$build_dir/benchmarks/opencv_hog_cpu"
  # The transport floor: echo server and the driver comparing it with cuimg-server.
  "$build_dir/benchmarks/echo_server"
  "$build_dir/benchmarks/transport_bench"
)
# Built only where nvjpeg.h and the library were found (linked to it, unlike the server).
[ -x "$build_dir/benchmarks/nvjpeg_modes_bench" ] && binaries+=("$build_dir/benchmarks/nvjpeg_modes_bench")
part=${CUIMG_BUNDLE:-all}
for b in "${binaries[@]}"; do
  case "$part:$(basename "$b")" in
    *:cuimg-server | *:cuimg-frame-decoder | *:cuimg | *:echo_server | *:transport_bench | all:*) ;;
    tests:*_gpu_test | bench:*_bench | bench:jpeg_decode_compare | bench:opencv_hog_cpu) ;;
    tests:* | bench:*) continue ;;
    *) echo "make_bundle: CUIMG_BUNDLE=$part: expected all, tests or bench" >&2; exit 2 ;;
  esac
  cp "$b" "$out/bin/"
done

bash scripts/collect_libs.sh "$out/lib" "$out"/bin/*
# The server dlopens libnvjpeg and libnvjpeg2k (GPU JPEG and JPEG 2000 decoding), so ldd does not
# list them.
bash scripts/copy_nvjpeg.sh "$out/lib"

cp -r "$build_dir/proto/python/." "$out/python/"
cp -r tests/e2e "$out/tests/"
[ -d benchmarks/anchors ] && cp -r benchmarks/anchors "$out/benchmarks/"
cp benchmarks/summarize.py benchmarks/attack_bench.py benchmarks/rpc_bench.py benchmarks/pacs_bench.py benchmarks/multi_gpu_bench.py benchmarks/soak_bench.py benchmarks/transport_bench.py benchmarks/unary_footprint.py \
  benchmarks/first_calls.py "$out/benchmarks/"
cp scripts/gpu_run.sh scripts/gpu_profile.sh scripts/gpu_batches.sh "$out/"
cp -r models "$out/models"
# DCMTK's data dictionary (Debian's libdcmtk17 reads it from /usr/share at run time): without it
# the CLI cannot write a DICOM attribute ("cannot set Unknown Tag"); gpu_run.sh sets DCMDICTPATH.
mkdir -p "$out/share/dcmtk"
cp /usr/share/libdcmtk17/dicom.dic /usr/share/libdcmtk17/private.dic "$out/share/dcmtk/"
# Sample images (Debian's opencv-doc; the GPU machine has no package registry), and frames of
# vtest.avi decoded here (the GPU machine has no decoder for it): every 80th at 768x576 (JPEG, to keep the bundle small) for the
# detection test, benchmark and anchor, and three scaled to 1920x1080 as JPEG for the RPC benchmark.
mkdir -p "$out/data"
data=/usr/share/doc/opencv-doc/examples/data
cp "$data"/{basketball1.png,basketball2.png,smarties.png,pic1.png,fruits.jpg,HappyFish.jpg,baboon.jpg,building.jpg,home.jpg,left01.jpg} "$out/data/"
# JPEGs nvJPEG's route leaves to the CPU (test_jpeg_decode_wire.py).
cp tests/fuzz/corpus/jpeg_header/{cmyk,progressive}.jpg "$out/data/"
command -v ffmpeg >/dev/null || { echo "make_bundle: needs ffmpeg (scripts/install_deps.sh)" >&2; exit 1; }
ffmpeg -v error -i "$data/vtest.avi" -vf "select=not(mod(n\,80))" -vsync vfr -start_number 0 \
  -q:v 2 "$out/data/vtest_%02d.jpg"
# Three one-component (gray) frames: the wire test compares decoded pixels through Pyramid (one
# channel only). ffmpeg's JPEG encoder always writes three components, so PIL (python3-pil, with
# matplotlib from install_deps) re-encodes the first three frames as grayscale.
/usr/bin/python3 - "$out/data" <<'PY'
import sys
from PIL import Image
for k in range(3):
    Image.open(f"{sys.argv[1]}/vtest_{k:02d}.jpg").convert("L").save(
        f"{sys.argv[1]}/vtest_gray_{k:02d}.jpg", quality=90)
PY
ffmpeg -v error -i "$data/vtest.avi" -vf "select=not(mod(n\,80)),scale=1920:1080" -vsync vfr \
  -frames:v 3 -q:v 3 -start_number 0 "$out/data/vtest_1080p_%02d.jpg"
git rev-parse --short HEAD > "$out/COMMIT" 2>/dev/null || echo unknown > "$out/COMMIT"
git status --porcelain | grep -q . && echo "+dirty" >> "$out/COMMIT" || true

# The device tool carries at most 64 MiB, so the bundle travels as one xz archive, unpacked there
# with: tar xJf bundle.txz && bash bundle/gpu_run.sh. Every GPU binary embeds the same kernel
# images (the kernels library is static): a dictionary as large as the whole bundle lets xz store
# them once (67 -> 43 MiB; one thread, a few minutes, 256 MiB to unpack).
rm -f bundle.tgz
tar -cf - "$out" | xz --lzma2=preset=6,dict=256MiB -T1 > bundle.txz
size_kb=$(du -sk bundle.txz | cut -f1)
echo "bundle: bundle.txz ($((size_kb / 1024)) MiB compressed, $(du -sm "$out" | cut -f1) MiB unpacked, $(ls "$out/lib" | wc -l) libraries)"
if [ "$size_kb" -gt $((60 * 1024)) ]; then
  echo "bundle.txz exceeds 60 MiB: pack a part (CUIMG_BUNDLE=tests or bench)" >&2
  exit 1
fi
