#!/usr/bin/env bash
# Sanitizer builds for CI (no GPU needed), each in its own directory with only the targets it runs:
#   build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer (gcc): the server's unit and
#                in-process service tests and the client's threaded volume streaming, then
#                cuimg-server itself under the over-the-wire bad-request, limit, security and
#                frame-stream suites (a leak at exit fails the server's exit code, which the
#                suites check).
#                Needs the regular build's cuimg (scripts/build.sh).
#   build-tsan/  ThreadSanitizer (gcc): the server library's concurrent pieces (work queue, CPU
#                warmer, in-flight budget, resident store, CPU backend device slots, the nvJPEG
#                batcher's LeaderBatch) driven from
#                many threads. Not the in-process gRPC service: Debian's gRPC and Abseil are not
#                built with -fsanitize=thread, so TSan cannot see their synchronization and
#                reports hundreds of races inside them.
#   scripts/sanitize.sh [asan|tsan]...   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(asan tsan)

unit_tests=(request_validation_test resident_store_test work_queue_test inflight_budget_test
            auth_tokens_test concurrency_test imaging_service_test volume_stream_client_test
            wire_pixels_test pinned_message_pool_test packed_pieces_test cpu_warmer_test
            result_over_input_test)

# The sanitizers instrument host C++ only. The CUDA sources compile with the regular build's
# Release flags, so ccache (install_deps.sh) hands back scripts/build.sh's objects: each variant
# would otherwise spend minutes of CI compiling the kernels' device code again.
source scripts/ccache_env.sh
# The host code at -O1 with line tables only (-g1: reports still name functions, files and lines):
# gcc compiled a service test under ASan in 31 s this way against 78 s at RelWithDebInfo's -O2 -g
# (2-core CI machine), which made the ASan build about 20 of CI's minutes.
configure() {  # DIR FLAGS
  mkdir -p "$1"
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUIMG_BUILD_BENCHMARKS=OFF \
    -DCMAKE_CXX_FLAGS="$2 -fno-omit-frame-pointer" -DCMAKE_EXE_LINKER_FLAGS="$2" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CUDA_FLAGS_RELWITHDEBINFO="-O3 -DNDEBUG" "${CMAKE_LAUNCHERS[@]}" \
    > "$1/configure.log" 2>&1 || { cat "$1/configure.log"; exit 1; }
}

passed=0
failed=0
run_unit_tests() {  # DIR TEST...
  local dir=$1
  shift
  for t in "$@"; do
    if "$dir/tests/$t" --gtest_brief=1 > "$dir/$t.log" 2>&1; then
      passed=$((passed + 1))
      echo "$dir: $t ok ($(grep -Eo '[0-9]+ tests? from [0-9]+ test suites? ran' "$dir/$t.log"))"
    else
      failed=$((failed + 1))
      echo "$dir: $t FAILED"
      grep -E "ERROR|SUMMARY|WARNING: ThreadSanitizer|runtime error|FAILED|#[0-9]+ 0x" "$dir/$t.log" | head -40
    fi
  done
}

run_suite() {  # DIR SUITE: tests/e2e/test_SUITE.py against DIR's cuimg-server
  local dir=$1 suite=$2
  if CUIMG_SERVER="$dir/server/cuimg-server" CUIMG_CLIENT="${CUIMG_BUILD_DIR:-build}/client/cuimg" \
      PYTHONPATH="$dir/proto/python:tests/e2e" timeout 900 /usr/bin/python3 \
      "tests/e2e/test_$suite.py" > "$dir/e2e_$suite.log" 2>&1; then
    passed=$((passed + 1))
    echo "$dir: e2e $suite ok ($(grep -E '^Ran [0-9]+ tests' "$dir/e2e_$suite.log"))"
  else
    failed=$((failed + 1))
    echo "$dir: e2e $suite FAILED"
    grep -E "ERROR|FAIL|SUMMARY|runtime error|#[0-9]+ 0x|Error" "$dir/e2e_$suite.log" | head -40
  fi
}

for v in "${variants[@]}"; do
  case "$v" in
    asan)
      configure build-asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
      # cuimg_python_client: the stubs and the Python client's modules (the suites import its
      # wire_contract); cuimg_rpc_status_python: google.rpc's, which bad_requests decodes.
      cmake --build build-asan --parallel --target "${unit_tests[@]}" cuimg-server \
        cuimg_python_client cuimg_rpc_status_python
      # protect_shadow_gap=0: CUDA maps memory where ASan's shadow gap would be (GPU machines).
      export ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0
      export UBSAN_OPTIONS=print_stacktrace=1
      run_unit_tests build-asan "${unit_tests[@]}"
      # The sanitized server under the over-the-wire suites; the client side (Python, and the
      # regular build's cuimg CLI) is not under test here.
      for suite in bad_requests limits security detect_stream_wire; do
        run_suite build-asan "$suite"
      done
      unset ASAN_OPTIONS UBSAN_OPTIONS
      ;;
    tsan)
      configure build-tsan "-fsanitize=thread"
      cmake --build build-tsan --parallel --target work_queue_test inflight_budget_test \
        resident_store_test concurrency_test cpu_warmer_test leader_batch_test
      export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp"
      run_unit_tests build-tsan work_queue_test inflight_budget_test resident_store_test \
        concurrency_test cpu_warmer_test leader_batch_test
      unset TSAN_OPTIONS
      ;;
    *)
      echo "usage: $0 [asan|tsan]..." >&2
      exit 2
      ;;
  esac
done
echo "sanitizers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
