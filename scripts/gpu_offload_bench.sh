#!/usr/bin/env bash
# What issue 7 (small-VRAM mode) asks of the H200, on the lent GPU machine:
#   build    ringserve, ringbench, cuda_bench and the GPU test suites
#   tests    the GPU suites that exist (cuda_engine_test, cuda_offload_test,
#            checkpoint_stream_test)
#   offload  cuda_bench --offload: pinned and pageable H2D, then decode tok/s
#            at batch 1/2/4/8 under --gpu-memory 8GiB and 12GiB, stream
#            (double and triple buffering) and zerocopy, each against its
#            floor, and the fully resident reference
#   load     a 15 GB bf16 checkpoint written by `ringserve convert --format
#            hf-bf16`, loaded by cuda_bench --load twice (page cache warm),
#            the page-cache copy rate alone (read_bench), then once cold if
#            /proc/sys/vm/drop_caches is writable
#   ablation scripts/ablation.sh: the article's ablation under 8 GiB and
#            fully resident (tokens/s, TTFT, GPU utilisation; JSON, markdown,
#            SVG chart)
# Every stage runs under `timeout` within GPU_OFFLOAD_BUDGET_S (default 570,
# inside one device call's 600 s); a stage that would start with too little
# time left is skipped and says so in the summary. Everything does not fit
# one call: run the stages in two (the build is incremental on a machine
# kept warm between them), e.g.
#   scripts/gpu_offload_bench.sh --stages tests,offload,load
#   scripts/gpu_offload_bench.sh --stages ablation
#
# $OUT (default ./gpu-out) gets at most 7 files, the device call's limit
# being 8: summary.txt, offload_bench.log, load_bench.log, ablation.json,
# ablation.md, ablation.svg, and logs.tar.gz with everything else (build and
# test logs, the ablation's per-step server and ringbench logs).
#
# Usage: scripts/gpu_offload_bench.sh [--stages tests,offload,load,ablation] [--quick]
# Environment: GPU_OFFLOAD_BUDGET_S [570], CKPT_DIR [/root/ringserve-ckpt-7b-bf16],
#   ABLATION_* (scripts/ablation.sh).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-./gpu-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
stages=tests,offload,load,ablation
quick=0
while (($#)); do
  case $1 in
    --stages) stages=$2; shift ;;
    --stages=*) stages=${1#--stages=} ;;
    --quick) quick=1 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
want() { [[ ,$stages, == *,$1,* ]]; }

budget=${GPU_OFFLOAD_BUDGET_S:-570}
reserve=10  # packing the logs at the end
# shellcheck source-path=SCRIPTDIR source=lib/stage_budget.sh
source "$root/scripts/lib/stage_budget.sh"
rc=0

# At the end, whatever is not a headline file goes into logs.tar.gz: the
# device call brings back 8 files at most.
# shellcheck disable=SC2317  # called by the EXIT trap
pack() {
  local keep='^(summary\.txt|offload_bench\.log|load_bench\.log|ablation\.(json|md|svg)|logs\.tar\.gz)$'
  local -a rest=()
  local f
  while IFS= read -r f; do
    [[ $f =~ $keep ]] || rest+=("$f")
  done < <(cd "$out" && ls -A)
  if ((${#rest[@]})); then
    (cd "$out" && tar czf logs.tar.gz "${rest[@]}" && rm -rf "${rest[@]}")
  fi
}
trap pack EXIT

{
  nvidia-smi --query-gpu=name,memory.total,pcie.link.gen.max,pcie.link.width.max,driver_version \
    --format=csv
  nproc
  free -g
  df -h / /tmp /root 2> /dev/null
} > "$out/device.txt" 2>&1
cat "$out/device.txt"

# --- build ---------------------------------------------------------------------
gpu_tests=()
for t in cuda_engine_test cuda_offload_test checkpoint_stream_test; do
  grep -q "ringserve_add_test($t\b" "$root"/tests/cuda/CMakeLists.txt 2> /dev/null &&
    gpu_tests+=("$t")
done
targets=(cuda_bench ringserve ringbench read_bench)
want tests && targets+=("${gpu_tests[@]}")
(
  # shellcheck source=/dev/null
  source "$root/scripts/gpu_machine_build.sh" build-gpu "${targets[@]}"
) > "$out/build.log" 2>&1
r=$?
note "build (${targets[*]}): rc=$r at $(elapsed) s"
if ((r != 0)); then
  tail -60 "$out/build.log"
  exit 1
fi
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
bin=$root/build-gpu/bin

# --- GPU tests -----------------------------------------------------------------
if want tests; then
  for t in "${gpu_tests[@]}"; do
    if (($(left) < 60)); then note "$t: skipped (budget)"; continue; fi
    timeout "$(allow 240)" "$bin/$t" > "$out/$t.log" 2>&1
    r=$?
    rc=$((rc | (r != 0)))
    grep -E "^\[  FAILED  \]|Failure|error:" "$out/$t.log" | head -20
    note "$t: rc=$r $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/$t.log" | tr '\n' ' ')"
  done
fi

# --- decode under GPU memory budgets ---------------------------------------------------
if want offload; then
  if (($(left) < 90)); then
    note "cuda_bench --offload: skipped (budget)"
  else
    extra=(--ring-slots "2,3")
    ((quick)) && extra=(--ring-slots 2 --batches "1,4" --offload-steps 32)
    timeout "$(allow 240)" "$bin/cuda_bench" --offload "${extra[@]}" \
      > "$out/offload_bench.log" 2>&1
    r=$?
    rc=$((rc | (r != 0)))
    note "cuda_bench --offload: rc=$r at $(elapsed) s (log: offload_bench.log)"
    grep -E "^RESULT (h2d|offload)" "$out/offload_bench.log" >> "$summary"
  fi
fi

# --- checkpoint load ---------------------------------------------------------------
# On the local disk, not under $OUT (15 GB does not come back) and not /tmp
# (it may be memory-backed, which would make "cold" meaningless).
if want load; then
  ckpt=${CKPT_DIR:-/root/ringserve-ckpt-7b-bf16}
  if [[ ! -f $ckpt/.complete ]]; then
    if (($(left) < 150)); then
      note "checkpoint: skipped (budget)"
    else
      rm -rf "$ckpt"
      timeout "$(allow 180)" "$bin/ringserve" convert \
        --model synthetic:deepseek-r1-distill-qwen-7b --format hf-bf16 --out "$ckpt" \
        > "$out/convert.log" 2>&1
      r=$?
      note "ringserve convert --format hf-bf16: rc=$r at $(elapsed) s: $(tail -1 "$out/convert.log")"
      # Marked complete only after a clean write, so a convert cut off by
      # the timeout is redone next time, not loaded.
      ((r == 0)) && touch "$ckpt/.complete"
      rc=$((rc | (r != 0)))
    fi
  else
    note "checkpoint: reusing $ckpt"
  fi
  if [[ -f $ckpt/.complete ]]; then
    du -sh "$ckpt" | tee -a "$summary"
    : > "$out/load_bench.log"
    # The first load right after writing still finds the file in the page
    # cache; both are warm-cache figures.
    for run in warm1 warm2; do
      if (($(left) < 60)); then note "load $run: skipped (budget)"; continue; fi
      echo "== $run" >> "$out/load_bench.log"
      timeout "$(allow 120)" "$bin/cuda_bench" --load "$ckpt" >> "$out/load_bench.log" 2>&1
      r=$?
      rc=$((rc | (r != 0)))
      note "load $run: rc=$r $(grep -E '^RESULT load' "$out/load_bench.log" | tail -1)"
    done
    # The ceiling of a copying reader: pread threads out of the page cache
    # into memory, with no GPU work at all.
    if (($(left) > 60)); then
      echo "== page-cache copy rate alone (read_bench --warm 1)" >> "$out/load_bench.log"
      timeout "$(allow 40)" "$bin/read_bench" "$ckpt/model.safetensors" --warm 1 \
        --threads "$(nproc)" --slots 24 --slot 4 >> "$out/load_bench.log" 2>&1
      note "page cache alone: $(grep -E 'pread .*warm' "$out/load_bench.log" | tail -1)"
    fi
    if sync && { echo 1 > /proc/sys/vm/drop_caches; } 2> /dev/null; then
      if (($(left) < 60)); then
        note "load cold: skipped (budget)"
      else
        echo "== cold (after echo 1 > /proc/sys/vm/drop_caches)" >> "$out/load_bench.log"
        timeout "$(allow 180)" "$bin/cuda_bench" --load "$ckpt" >> "$out/load_bench.log" 2>&1
        r=$?
        rc=$((rc | (r != 0)))
        note "load cold: rc=$r $(grep -E '^RESULT load' "$out/load_bench.log" | tail -1)"
      fi
      # Under gVisor the write can succeed without emptying the sandbox's
      # own cache: a "cold" rate near the warm one means exactly that.
      note "load cold: drop_caches was writable; compare with the warm rate before calling it cold"
      # The disk's own sequential rate, for the cold figure to be judged by.
      sync && echo 1 > /proc/sys/vm/drop_caches
      note "disk: $(timeout 60 dd if="$ckpt/model.safetensors" of=/dev/null bs=64M count=64 \
        iflag=direct 2>&1 | tail -1) (dd, O_DIRECT, first 4 GiB)"
    else
      note "load cold: not run (/proc/sys/vm/drop_caches not writable here)"
    fi
  fi
fi

# --- the article's ablation --------------------------------------------------------
if want ablation; then
  if (($(left) < 120)); then
    note "ablation: skipped (budget)"
  else
    qa=()
    ((quick)) && qa=(--quick)
    ABLATION_BUDGET_S=$(($(left) - 20)) OUT=$out bash "$root/scripts/ablation.sh" "${qa[@]}" \
      > "$out/ablation.log" 2>&1
    r=$?
    rc=$((rc | (r != 0)))
    tail -40 "$out/ablation.log"
    note "ablation: rc=$r at $(elapsed) s (ablation.md, ablation.json, ablation.svg)"
  fi
fi

note "total: $(elapsed) s, rc=$rc"
echo "== summary"
cat "$summary"
exit $rc
