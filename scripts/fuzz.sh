#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang, ASan and UBSan into build-fuzz/ and runs
# each from its seed corpus (tests/fuzz/corpus/, left unchanged) for its time budget below (each
# CUIMG_FUZZ_SECONDS seconds instead, when set). Fails on any crash, sanitizer report, leak (but
# assimp's own, tests/fuzz/lsan.supp), timeout or out-of-memory; the input that did it is kept
# under build-fuzz/artifacts/. A fixed seed (-seed=1) makes a CI run explore what the last local
# run explored (up to its time budget), so CI fails on a regression, not on a new random find.
#   scripts/fuzz.sh [FUZZER...]      (default: all sixteen, 251 s in all)
set -euo pipefail
cd "$(dirname "$0")/.."
# Seconds per target: the most for the parsers with the most code behind them (protobuf requests,
# DCMTK with GDCM's codecs, Teem, the image codecs, the DICOM frame decoders); the total
# (about 4 minutes) is what CI's 70-minute budget leaves them; longer runs are for local hunts.
declare -A budget=([request_validation]=30 [wire_pixels]=12 [image_decode]=30 [mesh_reader]=15
                   [tiff_reader]=18 [lattice_json]=8 [npy_reader]=12 [nrrd_reader]=25
                   [dicom_series]=30 [multipart]=8 [nifti_reader]=15 [jpeg_header]=8
                   [rle_frame]=8 [jpeg_frame]=10 [j2k_frame]=12 [frame_sandbox]=10)
build_dir=build-fuzz
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCUIMG_BUILD_FUZZERS=ON -DCUIMG_BUILD_TESTS=OFF -DCUIMG_BUILD_BENCHMARKS=OFF \
  -DCUIMG_WARNINGS_AS_ERRORS=OFF > "$build_dir/configure.log" 2>&1 \
  || { cat "$build_dir/configure.log"; exit 1; }
cmake --build "$build_dir" --target fuzzers --parallel

fuzzers=("$@")
[ ${#fuzzers[@]} -gt 0 ] || fuzzers=(request_validation wire_pixels image_decode mesh_reader tiff_reader
                                     lattice_json npy_reader nrrd_reader dicom_series multipart
                                     nifti_reader jpeg_header rle_frame jpeg_frame j2k_frame
                                     frame_sandbox)
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp"
mkdir -p "$build_dir/artifacts"
passed=0
failed=0
for f in "${fuzzers[@]}"; do
  [ -n "${budget[$f]:-}" ] || { echo "fuzz: unknown fuzzer $f"; exit 2; }
  seconds="${CUIMG_FUZZ_SECONDS:-${budget[$f]}}"
  work="$build_dir/corpus/$f"
  mkdir -p "$work"
  log="$build_dir/$f.log"
  if "$build_dir/tests/fuzz/${f}_fuzzer" -max_total_time="$seconds" -seed=1 -timeout=10 \
      -rss_limit_mb=2048 \
      -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$build_dir/artifacts/$f-" \
      "$work" "tests/fuzz/corpus/$f" > "$log" 2>&1; then
    passed=$((passed + 1))
    echo "fuzz $f: ok, $(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$') runs in ${seconds}s, $(grep -Eo 'cov: [0-9]+' "$log" | tail -1)"
  else
    failed=$((failed + 1))
    echo "fuzz $f: FAILED (log: $log)"
    grep -E "ERROR|SUMMARY|runtime error|#[0-9]+ 0x" "$log" | head -30
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
