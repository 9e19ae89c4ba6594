#!/usr/bin/env bash
# Runs on the GPU machine from the bundle (bash bundle/gpu_run.sh): every GPU test, the GPU tests
# under compute-sanitizer, the server on the CUDA backend driven over the wire (and compared with the
# CPU backend byte for byte), then the benchmarks with their anchors. Results go to $OUT (or
# bundle/out): summary.md, gpu_tests.log, e2e.log, sanitizer.log, bench.jsonl, device.txt.
set -uo pipefail
B=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$B/out}
mkdir -p "$OUT"
export PYTHONPATH="$B/python:$B/tests/e2e"
export PYTHONUNBUFFERED=1
export CUIMG_DATA="$B/data"
export CUIMG_MODELS_DIR="$B/models"
export DCMDICTPATH="$B/share/dcmtk/dicom.dic:$B/share/dcmtk/private.dic"
status=0
step() { echo "== $* ($(date +%T))"; }
# CUIMG_STEPS picks the steps (tests sanitize e2e bench); default all.
want() { [[ " ${CUIMG_STEPS:-tests sanitize e2e bench} " == *" $1 "* ]]; }

step device
{
  echo "commit: $(cat "$B/COMMIT" | tr '\n' ' ')"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  nvcc --version | tail -1
  python3 -c 'import grpc, google.protobuf as pb, numpy, scipy; print("python grpcio", grpc.__version__, "protobuf", pb.__version__, "numpy", numpy.__version__, "scipy", scipy.__version__)'
} > "$OUT/device.txt" 2>&1
cat "$OUT/device.txt"

# A machine with a GPU: there a GPU test that skips fails the run (a missing device, driver or
# libnvjpeg would otherwise pass as a green run), and the compute-sanitizer steps must run.
has_gpu=0
nvidia-smi -L > /dev/null 2>&1 && has_gpu=1
# Runs a gtest binary (time-limited: a hang must not eat the lease; line-buffered: a killed step
# still leaves its log), its output to stdout; fails when it fails, or skips tests on a GPU.
run_gtest() {
  local log
  log=$(mktemp)
  local rc=0
  timeout "$1" stdbuf -oL "${@:2}" > "$log" 2>&1 || rc=1
  cat "$log"
  if [ "$has_gpu" = 1 ] && grep -qE '^\[  SKIPPED \] [0-9]+ test' "$log"; then
    echo "gpu_run: skipped tests on a machine with a GPU: ${*:2}"
    rc=1
  fi
  rm -f "$log"
  return "$rc"
}

if want tests; then
step "GPU tests"
for t in "$B"/bin/*_gpu_test; do
  run_gtest 300 "$t" --gtest_brief=1 || status=1
done > "$OUT/gpu_tests.log" 2>&1
grep -E "^gpu_run:" "$OUT/gpu_tests.log"
tail -5 "$OUT/gpu_tests.log"
fi

sanitizer=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
if want sanitize && [ "${CUIMG_SANITIZE:-1}" = 1 ] && [ ! -x "$sanitizer" ] && [ "$has_gpu" = 1 ]; then
  echo "gpu_run: compute-sanitizer not found on a machine with a GPU: the sanitizer steps did not run"
  status=1
fi
if want sanitize && [ "${CUIMG_SANITIZE:-1}" = 1 ] && [ -x "$sanitizer" ]; then
  step "compute-sanitizer"
  # sanitize TIMEOUT TOOL TEST [gtest args]: TEST under the tool, which fails the step on any
  # error it finds (--error-exitcode), as does a skipped test on a GPU (run_gtest).
  sanitize() {
    run_gtest "$1" "$sanitizer" --tool "$2" --error-exitcode 3 "$B/bin/$3" --gtest_brief=1 "${@:4}"
  }
  for tool in memcheck racecheck; do
    sanitize 240 "$tool" morphology_gpu_test \
      --gtest_filter='*IsDeterministic*:*3DRandom*:*Boxes*:*LargeElements*' || status=1
    sanitize 240 "$tool" pyramid_gpu_test --gtest_filter='*1080p*:*EveryType*' || status=1
    for t in gradient_gpu_test pyramid_gpu_test; do
      sanitize 240 "$tool" "$t" --gtest_filter='*IsDeterministic*' || status=1
    done
    # Reconstruction: bricks race on global memory by design (monotone updates); memcheck only.
    [ "$tool" = memcheck ] && { sanitize 240 memcheck reconstruction_gpu_test \
      --gtest_filter='*Chains*:*Cancelled*:*Marker*' || status=1; }
    sanitize 240 "$tool" deform_gpu_test --gtest_filter='*Torus*:*BitIdentical*' || status=1
    sanitize 240 "$tool" detect_gpu_test --gtest_filter='*IsDeterministic*:*NoHits*' || status=1
    # Frames of several calls in one HOG launch pair (DetectBatcher), 16 callers at once.
    [ "$tool" = memcheck ] && { sanitize 240 memcheck detect_batch_gpu_test || status=1; }
    # Labelling: tile unions in shared memory, atomic merges and flattening in global memory.
    sanitize 240 "$tool" label_gpu_test --gtest_filter='*IsDeterministic*' || status=1
    # nvJPEG: sound, corrupt and truncated streams decoded into device memory, and a decoded
    # image used by a work call on its device.
    [ "$tool" = memcheck ] && { sanitize 240 memcheck jpeg_decode_gpu_test || status=1; }
    # nvJPEG2000: frames of every type, bit-flipped and cut codestreams decoded into device memory.
    [ "$tool" = memcheck ] && { sanitize 300 memcheck nvjpeg2k_frames_gpu_test || status=1; }
    # Staged copies: every chunk's DMA stays inside its pinned chunk and device buffer.
    [ "$tool" = memcheck ] && { sanitize 120 memcheck staged_copy_gpu_test || status=1; }
  done > "$OUT/sanitizer.log" 2>&1
  grep -E "ERROR SUMMARY|PASSED|FAILED|^gpu_run:" "$OUT/sanitizer.log" | head -30
fi

if want e2e; then
step "server over the wire (CUDA backend)"
{
  # JPEG inputs decode with nvJPEG in every suite below (the start-up fails without it); the
  # last suite compares its decode with libjpeg-turbo's on the same backend.
  export CUIMG_SERVER_FLAGS=--jpeg_decoder=gpu
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 240 python3 "$B/tests/e2e/test_jpeg_decode_wire.py" || status=1
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 180 python3 "$B/tests/e2e/test_server_wire.py" || status=1
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 180 python3 "$B/tests/e2e/test_rpcs_wire.py" || status=1
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 180 python3 "$B/tests/e2e/test_detect_wire.py" || status=1
  # Frame streams on the CUDA backend: results == unary calls, back-pressure, cancellation.
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 240 python3 "$B/tests/e2e/test_detect_stream_wire.py" || status=1
  # Starts a CPU-backend server too: no GPU decoder there.
  CUIMG_SERVER_FLAGS= timeout 300 python3 "$B/tests/e2e/compare_backends.py" --server "$B/bin/cuimg-server" || status=1
  # Hardening on the CUDA backend: every bad request, and a device memory cap forcing
  # RESOURCE_EXHAUSTED then recovery.
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 180 python3 "$B/tests/e2e/test_bad_requests.py" || status=1
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 180 python3 "$B/tests/e2e/test_faults.py" DeviceMemoryCap || status=1
  # Local shared memory on the CUDA backend: regions page-locked (device_mapped), shm in/out ==
  # inline for every pixel type, unregistering under running requests, cuimg load --shm.
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 240 python3 "$B/tests/e2e/test_shared_memory_wire.py" || status=1
  # DICOM frames on the CUDA backend (issue 49): JPEG 2000 and HTJ2K frames decoded by
  # nvJPEG2000 (decode_device >= 0) equal pydicom's decode; results encoded by nvJPEG2000.
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    CUIMG_FRAME_DECODER="$B/bin/cuimg-frame-decoder" \
    timeout 300 python3 "$B/tests/e2e/test_dicom_frames_wire.py" || status=1
  # The clients' side (issue 49): series sent as frames (nvJPEG2000 decodes the JPEG 2000 and
  # HTJ2K ones) == the pixels path, results written as HTJ2K by nvJPEG2000's encoder.
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    CUIMG_FRAME_DECODER="$B/bin/cuimg-frame-decoder" \
    timeout 300 python3 "$B/tests/e2e/test_pacs_client.py" || status=1
  # Streamed volumes on the CUDA backend: slabs on several CUDA streams == the unary result.
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 240 python3 "$B/tests/e2e/test_volume_stream_wire.py" || status=1
  # Segmentation (issue 48) on the CUDA backend: against SciPy/scikit-image over the wire, and
  # CUDA == CPU byte for byte on random and adversarial chains and Label requests.
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 300 python3 "$B/tests/e2e/test_segmentation_wire.py" || status=1
  CUIMG_SERVER="$B/bin/cuimg-server" CUIMG_CLIENT="$B/bin/cuimg" CUIMG_BACKEND=cuda \
    timeout 300 python3 "$B/tests/e2e/test_segmentation_clients.py" || status=1
  CUIMG_SERVER_FLAGS= timeout 600 python3 "$B/tests/e2e/compare_segmentation_backends.py" \
    --server "$B/bin/cuimg-server" || status=1
  unset CUIMG_SERVER_FLAGS
} > "$OUT/e2e.log" 2>&1
grep -E "^(Ran|OK|FAILED)|backends" "$OUT/e2e.log"
fi

if want bench; then
step benchmarks
{
  # CUIMG_BENCH picks the benchmark families (kernels, rpc, transport, soak, multigpu, batches);
  # default all but multigpu and batches.
  benches=" ${CUIMG_BENCH:-kernels rpc transport soak} "
  if [[ $benches == *" kernels "* ]]; then
    timeout 180 "$B/bin/morphology_bench" ${CUIMG_BENCH_ARGS:-} || status=1
    timeout 180 "$B/bin/gradient_pyramid_bench" ${CUIMG_BENCH_ARGS:-} || status=1
    timeout 120 "$B/bin/deform_bench" ${CUIMG_BENCH_ARGS:-} || status=1
    # The segmentation steps (issue 48) and their cuCIM-class anchor (capped at 20000 passes).
    timeout 600 "$B/bin/reconstruction_bench" ${CUIMG_BENCH_ARGS:-} || status=1
    timeout 180 "$B/bin/detect_bench" ${CUIMG_BENCH_ARGS:-} || status=1
    timeout 180 "$B/bin/label_bench" ${CUIMG_BENCH_ARGS:-} || status=1
    # Pageable vs pinned-staged copies at request sizes (the staging pool's reason to exist).
    timeout 120 "$B/bin/staging_bench" || status=1
    # nvJPEG against libjpeg-turbo: max/mean |d| per file, decode times (1080p: the issue's row).
    timeout 180 "$B/bin/jpeg_decode_compare" "$B"/data/*.jpg || status=1
    # DICOM frames (issue 49): 300 512x512 i16 HTJ2K and JPEG 2000 frames on nvJPEG2000 against
    # OpenJPH and OpenJPEG on 1 thread and every core; byte ratios; the targets met or missed.
    timeout 300 "$B/bin/frame_decode_bench" || status=1
    # The CLI end to end (issue 49): a 300x512x512 CT series as JPEG 2000 and HTJ2K -> its
    # dilation written as HTJ2K, frames on the wire, against today's path (client decode, raw
    # wire, uncompressed out).
    timeout 600 python3 "$B/benchmarks/pacs_bench.py" --server "$B/bin/cuimg-server" \
      --client "$B/bin/cuimg" || status=1
  fi
  if [[ $benches == *" rpc "* ]]; then
    timeout 180 python3 "$B/benchmarks/rpc_bench.py" --server "$B/bin/cuimg-server" \
      --client "$B/bin/cuimg" || status=1
    # One unary 157 MB volume from Python and from the CLI: the server's peak RSS and its
    # h2d/d2h (issue 34).
    timeout 300 python3 "$B/benchmarks/unary_footprint.py" --server "$B/bin/cuimg-server" \
      --client "$B/bin/cuimg" --backend cuda --runs 10 || status=1
    # The 1080p JPEG detection row with each decoder, in the same run (issue 33's baseline).
    for decoder in cpu gpu; do
      timeout 120 python3 "$B/benchmarks/rpc_bench.py" --server "$B/bin/cuimg-server" \
        --server_flag=--jpeg_decoder=$decoder --only=rpc_detect_1080p_jpeg || status=1
    done
    # The 1080p JPEG detection from the C++ load client (no Python in the way): one call at a
    # time, then 16 in flight unary and over DetectStream (issue 33; runs 194-195).
    "$B/bin/cuimg-server" --backend=cuda --jpeg_decoder=gpu --listen_address=127.0.0.1:50551 \
      --metrics_address= > "$OUT/detect_load_server.log" 2>&1 &
    detect_server=$!
    for _ in $(seq 100); do
      "$B/bin/cuimg" --target=127.0.0.1:50551 --timeout=1 health > /dev/null 2>&1 && break
      sleep 0.2
    done
    for mode in "--concurrency=1" "--concurrency=16" "--concurrency=16 --detect_stream"; do
      echo "cuimg load --rpc=detect 1080p JPEG $mode"
      # shellcheck disable=SC2086  # $mode is two flags at most
      timeout 60 "$B/bin/cuimg" --target=127.0.0.1:50551 load --rpc=detect \
        --input="$B/data/vtest_1080p_00.jpg" --channels=4 --warmup=2 --duration=6 $mode \
        2> /dev/null | sed -n '1,4p' || status=1
    done
    kill "$detect_server"
    wait "$detect_server"
    # The small-payload RPCs again with a 16 MiB HTTP/2 lookahead on both ends (transport tuning).
    timeout 120 python3 "$B/benchmarks/rpc_bench.py" --server "$B/bin/cuimg-server" \
      --lookahead_bytes=16777216 --load_seconds=5 \
      --client "$B/bin/cuimg" --only=rpc_dilate_2d,rpc_deform,rpc_detect || status=1
  fi
  if [[ $benches == *" soak "* ]]; then
    # 100,000 mixed calls: does host or device memory grow after warm-up?
    timeout 600 python3 "$B/benchmarks/soak_bench.py" --server "$B/bin/cuimg-server" \
      --client "$B/bin/cuimg" || status=1
  fi
  if [[ $benches == *" batches "* ]]; then
    # Issue 50's rows, each beside its baseline (not in the default set: about 3 minutes).
    OUT="$OUT/batches" timeout 420 bash "$B/gpu_batches.sh" || status=1
  fi
  if [[ $benches == *" multigpu "* ]]; then
    # Throughput with one GPU, then all of the host's (not in the default set: run it on a
    # machine with several GPUs).
    timeout 200 python3 "$B/benchmarks/multi_gpu_bench.py" --server "$B/bin/cuimg-server" \
      --client "$B/bin/cuimg" || status=1
  fi
  if [[ $benches == *" transport "* ]]; then
    # The service against an echo server with the same transport settings, per setting tried.
    timeout 540 python3 "$B/benchmarks/transport_bench.py" --server "$B/bin/cuimg-server" \
      --echo_server "$B/bin/echo_server" --driver "$B/bin/transport_bench" || status=1
  fi
  # CUIMG_ANCHORS picks anchors by family (morphology, gradient, detect); default all.
  anchors=" ${CUIMG_ANCHORS:-morphology gradient detect} "
  if [[ $anchors == *" detect "* ]]; then
    timeout 300 "$B/bin/opencv_hog_cpu" ${CUIMG_BENCH_ARGS:-} || status=1
  fi
  if [[ $anchors == *" morphology "* ]]; then
    timeout 300 python3 "$B/benchmarks/anchors/cupy_morphology.py" || status=1
    timeout 120 python3 "$B/benchmarks/anchors/torch_morphology.py" || status=1
    if nvcc -O2 -std=c++17 -arch=sm_90 "$B/benchmarks/anchors/npp_morphology.cu" -o /tmp/npp_anchor \
        -lnppim -lnppidei -lnppif -lnppc 2> /tmp/npp_build.log; then
      timeout 120 /tmp/npp_anchor || status=1
    else
      echo "{\"anchor\":\"npp\",\"error\":\"build failed: $(head -c 300 /tmp/npp_build.log | tr '\n"' '  ')\"}"
    fi
  fi
  if [[ $anchors == *" gradient "* ]]; then
    timeout 300 python3 "$B/benchmarks/anchors/cupy_gradient.py" || status=1
    if nvcc -O2 -std=c++17 -arch=sm_90 "$B/benchmarks/anchors/npp_gradient_pyramid.cu" \
        -o /tmp/npp_gp_anchor -lnppif -lnppig -lnppidei -lnppc 2> /tmp/npp_gp_build.log; then
      timeout 120 /tmp/npp_gp_anchor || status=1
    else
      echo "{\"anchor\":\"npp\",\"workload\":\"npp_gradient_pyramid\",\"error\":\"build failed: $(head -c 300 /tmp/npp_gp_build.log | tr '\n"' '  ')\"}"
    fi
  fi
} > "$OUT/bench.jsonl" 2> "$OUT/bench_stderr.log"
python3 "$B/benchmarks/summarize.py" "$OUT/bench.jsonl" "$OUT/device.txt" > "$OUT/summary.md"
cat "$OUT/summary.md"
fi
echo "gpu_run status: $status"
exit $status
