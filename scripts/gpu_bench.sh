#!/usr/bin/env bash
# GPU build + checks + benchmark in one go, for one call on a lent H200 (or
# any CUDA machine): builds the CUDA targets, runs the GPU test suites
# (optionally under compute-sanitizer memcheck) and the benchmark, and leaves
# logs in $OUT (or ./gpu-out).
#
# Usage: scripts/gpu_bench.sh [--no-tests] [--no-bench] [--memcheck] [--quick]
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
tests=1 bench=1 memcheck=0 quick=""
for a in "$@"; do
  case $a in
    --no-tests) tests=0 ;;
    --no-bench) bench=0 ;;
    --memcheck) memcheck=1 ;;
    --quick) quick=--quick ;;
    *) echo "unknown option $a" >&2; exit 2 ;;
  esac
done

nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv \
  | tee "$out/device.txt"
start=$(date +%s)
# shellcheck source=/dev/null
source "$root/scripts/gpu_machine_build.sh" build-gpu kernels_gpu_test cuda_engine_test cuda_bench \
  > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
set +e  # the build script turned -e on; a failing suite must not stop the rest
echo "build: $(( $(date +%s) - start )) s"
bin=$root/build-gpu/bin
rc=0
if ((tests)); then
  "$bin/kernels_gpu_test" 2>&1 | tee "$out/kernels_gpu_test.log" | grep -E "^\[  (FAILED|PASSED) |OK \]|FAILED|Failure|error" | tail -60
  rc=$((rc | PIPESTATUS[0]))
  "$bin/cuda_engine_test" 2>&1 | tee "$out/cuda_engine_test.log" | grep -E "^\[  (FAILED|PASSED) |OK \]|FAILED|Failure|error|Expected|Which is|actual" | tail -60
  rc=$((rc | PIPESTATUS[0]))
fi
if ((bench)); then
  "$bin/cuda_bench" $quick 2>&1 | tee "$out/cuda_bench.log"
  rc=$((rc | PIPESTATUS[0]))
fi
if ((memcheck)); then
  timeout 170 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/kernels_gpu_test" \
    --gtest_filter='-Gemv.LmHeadShape' > "$out/memcheck_kernels.log" 2>&1
  echo "memcheck kernels_gpu_test: rc=$?  $(grep -E 'ERROR SUMMARY' "$out/memcheck_kernels.log" | tail -1)"
  timeout 170 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/cuda_engine_test" \
    --gtest_filter='CudaGolden*:CudaEngineApi*' > "$out/memcheck_engine.log" 2>&1
  echo "memcheck cuda_engine_test: rc=$?  $(grep -E 'ERROR SUMMARY' "$out/memcheck_engine.log" | tail -1)"
fi
exit $rc
