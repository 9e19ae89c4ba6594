#!/usr/bin/env bash
# Profiles chosen benchmark workloads (morphology, gradient/pyramid, deform or detect) with Nsight
# Compute on the GPU machine (from the bundle), e.g. detect_1080p HogBlocksKernel:
#   bash bundle/gpu_profile.sh WORKLOAD KERNEL_REGEX [WORKLOAD KERNEL_REGEX ...]
# Writes $OUT/profile.txt: speed of light, occupancy, warp stalls, instruction mix, source hot
# spots. Clocks are left alone (--clock-control none).
set -uo pipefail
B=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$B/out}
mkdir -p "$OUT"
pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(dilate_volume_disk9_u8 ChordTile dilate_2d_rect63_u8 BoxTile)
for ((i = 0; i < ${#pairs[@]}; i += 2)); do
  echo "=== ${pairs[i]} (${pairs[i + 1]})"
  case "${pairs[i]}" in
    gradient* | pyramid*) bench=gradient_pyramid_bench ;;
    deform*) bench=deform_bench ;;
    detect*) bench=detect_bench ;;
    *) bench=morphology_bench ;;
  esac
  timeout 240 ncu --clock-control none --launch-skip 2 --launch-count 1 -k "regex:${pairs[i + 1]}" \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats \
    --section SourceCounters --section MemoryWorkloadAnalysis \
    "$B/bin/$bench" --quick --filter "${pairs[i]}" 2>&1 | grep -vE "^==PROF==|^\{"
done > "$OUT/profile.txt" 2>&1
grep -E "===|Duration|Throughput|Warp Cycles Per Issued|Issued Warp|Achieved Occupancy|Stall|stall|Executed Instructions  |Branch Instructions|Shared" "$OUT/profile.txt" | head -80
