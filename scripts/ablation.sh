#!/usr/bin/env bash
# The article's ablation (issue 7), step by step, each step a runtime switch
# of the same `ringserve serve` binary, measured with ringbench at
# --input-len 512 --output-len 256:
#   0 naive   --pipeline naive --max-batch 1 (pageable synchronous copies,
#             copy-sync-compute, no graphs), ringbench over the socket, batch 1
#   1 pinned  --pipeline pinned
#   2 async   --pipeline async (copy stream, overlap and prefetch)
#   3 graphs  --pipeline graphs (CUDA graphs)
#   4 batch   + --max-batch 4 --batch-window-ms 10 --batch-policy window,
#             ringbench --concurrency 4 over the socket
#   5 shm     the same through the shared-memory ring
# once under --gpu-memory (default 8GiB, --offload stream) and once fully
# resident, to show where each lever matters. Per step: output tokens/s and
# TTFT p50 (ringbench's JSON) and the GPU's mean utilisation while ringbench
# ran (nvidia-smi sampled every 200 ms).
#
# Every step gets the same --max-context and --kv-blocks whatever its
# --max-batch: the KV pool (and so, under the budget, the weight placement
# and the bytes streamed per step) stays the same across the table, so a row
# differs from the one before it by its lever alone.
#
# Run on the GPU machine after building ringserve and ringbench into
# build-gpu/ (scripts/gpu_bench.sh, scripts/gpu_offload_bench.sh). Writes
# $OUT/ablation.json, $OUT/ablation.md, $OUT/ablation.svg (when python3 is
# there) and per-step logs under $OUT/ablation/.
#
# Time: 12 server starts (each generates the 7B's synthetic weights, ~10+ s)
# plus the runs; the defaults are sized to ~6 minutes on the H200. The slow
# naive step under the budget gets fewer runs (ABLATION_NAIVE_RUNS). Steps
# left when ABLATION_BUDGET_S runs out are recorded as skipped.
#
# Usage: scripts/ablation.sh [--tables budget,resident] [--quick]   (or ABLATION_TABLES=...)
# Environment (defaults in brackets):
#   ABLATION_GPU_MEMORY [8GiB]   budget of the first table
#   ABLATION_OFFLOAD [stream]    --offload under the budget
#   ABLATION_RUNS [3]            batch-mode runs, steps 0-3 (plus warm-up)
#   ABLATION_NAIVE_RUNS [1]      runs of step 0 under the budget (pageable copies: slowest)
#   ABLATION_REQUESTS [8]        measured requests, steps 4-5 (concurrency 4)
#   ABLATION_WARMUP [1]          unmeasured requests before each measurement
#   ABLATION_INPUT_LEN [512] ABLATION_OUTPUT_LEN [256] ABLATION_MAX_CONTEXT [4096]
#   ABLATION_KV_BLOCKS [4 x max context / 16]
#   ABLATION_MODEL [synthetic:deepseek-r1-distill-qwen-7b]
#   ABLATION_BIN [build-gpu/bin]  ABLATION_BACKEND [cuda] (cpu: a smoke test of the script)
#   ABLATION_BUDGET_S [420]      whole script; ABLATION_STEP_TIMEOUT_S [180] one ringbench
#   ABLATION_START_TIMEOUT_S [120] server start; ABLATION_GPU [0] GPU index to sample
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-./gpu-out}
mkdir -p "$out"
out=$(cd "$out" && pwd)
logs=$out/ablation
mkdir -p "$logs"

tables=${ABLATION_TABLES:-budget,resident}
quick=0
while (($#)); do
  case $1 in
    --tables) tables=$2; shift ;;
    --tables=*) tables=${1#--tables=} ;;
    --quick) quick=1 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

bin=${ABLATION_BIN:-$root/build-gpu/bin}
model=${ABLATION_MODEL:-synthetic:deepseek-r1-distill-qwen-7b}
backend=${ABLATION_BACKEND:-cuda}
gpu_memory=${ABLATION_GPU_MEMORY:-8GiB}
offload=${ABLATION_OFFLOAD:-stream}
runs=${ABLATION_RUNS:-3}
naive_runs=${ABLATION_NAIVE_RUNS:-1}
requests=${ABLATION_REQUESTS:-8}
warmup=${ABLATION_WARMUP:-1}
if ((quick)); then runs=1 naive_runs=1 requests=4; fi
input_len=${ABLATION_INPUT_LEN:-512}
output_len=${ABLATION_OUTPUT_LEN:-256}
max_context=${ABLATION_MAX_CONTEXT:-4096}
kv_blocks=${ABLATION_KV_BLOCKS:-$((4 * max_context / 16))}
step_timeout=${ABLATION_STEP_TIMEOUT_S:-180}
start_timeout=${ABLATION_START_TIMEOUT_S:-120}
gpu_index=${ABLATION_GPU:-0}
nvidia_smi=${NVIDIA_SMI:-nvidia-smi}
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}

t0=$(date +%s)
budget_s=${ABLATION_BUDGET_S:-420}
elapsed() { echo $(($(date +%s) - t0)); }
allow() {
  local left=$((budget_s - $(elapsed)))
  ((left < 5)) && left=5
  (($1 < left)) && echo "$1" || echo "$left"
}
for b in ringserve ringbench; do
  if [[ ! -x $bin/$b ]]; then
    echo "ablation: $bin/$b not built" >&2
    exit 1
  fi
done

# One line per step, read back by the report below:
# table, step, name, rc, seconds, server args, ringbench args (tab-separated).
steps_tsv=$logs/steps.tsv
: > "$steps_tsv"
rc=0

stop_server() {
  local pid=$1
  # TERM, not INT: a background job of a non-interactive shell starts with
  # SIGINT ignored. serve stops the same way on either.
  kill -TERM "$pid" 2> /dev/null
  for ((i = 0; i < 15; ++i)); do
    kill -0 "$pid" 2> /dev/null || break
    sleep 1
  done
  kill -KILL "$pid" 2> /dev/null
  wait "$pid" 2> /dev/null
}

# run_step TABLE STEP NAME SERVER_ARGS... -- RINGBENCH_ARGS...
run_step() {
  local table=$1 step=$2 name=$3
  shift 3
  local -a sargs=() bargs=()
  while (($#)) && [[ $1 != -- ]]; do sargs+=("$1"); shift; done
  (($#)) && shift
  bargs=("$@")
  local tag=${table}_${step}_${name}
  local -a table_args=()
  [[ $table == budget ]] && table_args=(--gpu-memory "$gpu_memory" --offload "$offload")
  local row_start
  row_start=$(date +%s)
  # A step needs a server start and at least a few requests: not worth
  # starting with less than 30 s left.
  if (($(elapsed) + 30 > budget_s)); then
    echo "== $tag: skipped (ablation budget of ${budget_s} s spent)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$table" "$step" "$name" skipped 0 \
      "${table_args[*]} ${sargs[*]}" "${bargs[*]}" >> "$steps_tsv"
    return
  fi
  local sock=/tmp/ringserve-ablation-$$-$tag.sock
  echo "== $tag: serve ${table_args[*]} ${sargs[*]} | ringbench ${bargs[*]}"
  "$bin/ringserve" serve --model "$model" --backend "$backend" --socket "$sock" \
    --max-context "$max_context" --kv-blocks "$kv_blocks" --preflight off \
    "${table_args[@]}" "${sargs[@]}" > "$logs/$tag.server.log" 2>&1 &
  local spid=$! ready=0 r
  for ((i = 0; i < $(allow "$start_timeout"); ++i)); do
    if grep -q "\[ipc\] listening on" "$logs/$tag.server.log"; then ready=1; break; fi
    kill -0 "$spid" 2> /dev/null || break
    sleep 1
  done
  if ((!ready)); then
    echo "   server did not start after $(($(date +%s) - row_start)) s:"
    tail -5 "$logs/$tag.server.log" | sed 's/^/   | /'
    stop_server "$spid"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$table" "$step" "$name" no-server \
      $(($(date +%s) - row_start)) "${table_args[*]} ${sargs[*]}" "${bargs[*]}" >> "$steps_tsv"
    rc=1
    return
  fi
  # Utilisation only while ringbench runs (its warm-up included), not
  # while the server loads.
  local upid=""
  if command -v "$nvidia_smi" > /dev/null; then
    "$nvidia_smi" -i "$gpu_index" --query-gpu=utilization.gpu --format=csv,noheader,nounits \
      -lms 200 > "$logs/$tag.util.csv" 2> /dev/null &
    upid=$!
  fi
  timeout "$(allow "$step_timeout")" "$bin/ringbench" --socket "$sock" \
    --input-len "$input_len" --output-len "$output_len" --warmup "$warmup" --no-progress \
    --label "$table/$step/$name" --json "$logs/$tag.json" "${bargs[@]}" \
    > "$logs/$tag.ringbench.log" 2>&1
  r=$?
  if [[ -n $upid ]]; then
    kill "$upid" 2> /dev/null
    wait "$upid" 2> /dev/null
  fi
  stop_server "$spid"
  ((r != 0)) && rc=1
  grep -E "output tokens/s|time to 1st token" "$logs/$tag.ringbench.log" | sed 's/^/   /'
  ((r != 0)) && tail -3 "$logs/$tag.ringbench.log" | sed 's/^/   | /'
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$table" "$step" "$name" "$r" \
    $(($(date +%s) - row_start)) "${table_args[*]} ${sargs[*]}" "${bargs[*]}" >> "$steps_tsv"
}

run_table() {
  local table=$1 r0=$runs
  [[ $table == budget ]] && r0=$naive_runs
  local -a one=(--transport socket --batch 1)
  local -a four=(--max-batch 4 --batch-window-ms 10 --batch-policy window)
  # Under the budget a naive step takes seconds (pageable copies of every
  # streamed layer): its one run is not preceded by a warm-up run.
  local w=$warmup
  [[ $table == budget ]] && warmup=${ABLATION_NAIVE_WARMUP:-0}
  run_step "$table" 0 naive --pipeline naive --max-batch 1 -- "${one[@]}" --runs "$r0"
  warmup=$w
  run_step "$table" 1 pinned --pipeline pinned --max-batch 1 -- "${one[@]}" --runs "$runs"
  run_step "$table" 2 async --pipeline async --max-batch 1 -- "${one[@]}" --runs "$runs"
  run_step "$table" 3 graphs --pipeline graphs --max-batch 1 -- "${one[@]}" --runs "$runs"
  run_step "$table" 4 batch4 --pipeline graphs "${four[@]}" -- \
    --transport socket --concurrency 4 --requests "$requests"
  run_step "$table" 5 shm --pipeline graphs "${four[@]}" -- \
    --transport shm --concurrency 4 --requests "$requests"
}

IFS=, read -r -a table_list <<< "$tables"
for t in "${table_list[@]}"; do
  case $t in
    budget | resident) run_table "$t" ;;
    *) echo "unknown table $t (budget, resident)" >&2; exit 2 ;;
  esac
done

device=$("$nvidia_smi" -i "$gpu_index" --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
python3 - "$logs" "$out" "$model" "$gpu_memory" "$offload" "$input_len" "$output_len" \
  "$max_context" "$kv_blocks" "${device:-unknown}" << 'EOF'
import datetime, json, os, re, sys

logs, out, model, gpu_memory, offload, input_len, output_len, max_context, kv_blocks, device = \
    sys.argv[1:11]
LEVERS = {
    "naive": "naive: pageable sync copies, copy-sync-compute, no graphs, batch 1, socket",
    "pinned": "+ pinned host memory",
    "async": "+ async copies: overlap and prefetch",
    "graphs": "+ CUDA graphs",
    "batch4": "+ batching 4 / 10 ms (concurrency 4)",
    "shm": "+ shared-memory ring instead of the socket",
}
TITLES = {
    "budget": f"--gpu-memory {gpu_memory} (--offload {offload})",
    "resident": "fully resident (no --gpu-memory)",
}


def util(path):
    try:
        vals = [float(l.strip()) for l in open(path) if re.fullmatch(r"\s*\d+(\.\d+)?\s*", l)]
    except OSError:
        return None, 0
    return (sum(vals) / len(vals) if vals else None), len(vals)


def plan_lines(path):
    # The engine's placement plan as it logged it: what is resident, what
    # streams, bytes per step.
    lines = []
    try:
        for l in open(path, errors="replace"):
            if re.search(r"\[offload\]|cuda: (pipeline|weights|the \w+ pipeline)|"
                         r"allocated on the GPU|offload auto", l):
                lines.append(l.rstrip())
    except OSError:
        pass
    return lines[:16]


tables = {}
for line in open(os.path.join(logs, "steps.tsv")):
    f = line.rstrip("\n").split("\t")
    if len(f) < 7:
        continue
    table, step, name, status, seconds, sargs, bargs = f[:7]
    tag = f"{table}_{step}_{name}"
    row = {"step": int(step), "name": name, "lever": LEVERS.get(name, name),
           "server_args": sargs.strip(), "ringbench_args": bargs.strip(),
           "seconds": int(seconds), "ok": False}
    if status == "skipped":
        row["error"] = "skipped: ablation time budget spent"
    elif status == "no-server":
        row["error"] = "server did not start"
        row["plan"] = plan_lines(os.path.join(logs, tag + ".server.log"))
    else:
        try:
            r = json.load(open(os.path.join(logs, tag + ".json")))
            res, srv = r["results"], r.get("server", {})
            row.update({
                "ok": status == "0" and res["requests_failed"] == 0,
                "tokens_per_s": res["output_tokens_per_s"],
                "ttft_p50_ms": res["ttft_ms"]["p50"],
                "itl_p50_ms": res["itl_ms"]["p50"],
                "e2e_p50_ms": res["e2e_ms"]["p50"],
                "requests_ok": res["requests_ok"],
                "requests_failed": res["requests_failed"],
                "server_mean_step_us": srv.get("mean_step_us"),
                "batch_size_histogram": srv.get("batch_size_histogram"),
            })
            if status != "0":
                row["error"] = f"ringbench exit status {status}"
        except (OSError, ValueError, KeyError) as e:
            row["error"] = f"no ringbench results (exit status {status}: {e})"
        avg, n = util(os.path.join(logs, tag + ".util.csv"))
        row["gpu_util_pct"] = avg
        row["gpu_util_samples"] = n
        row["plan"] = plan_lines(os.path.join(logs, tag + ".server.log"))
    tables.setdefault(table, []).append(row)

doc = {
    "schema": "ringserve-ablation/1",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "device": device,
    "model": model,
    "input_len": int(input_len),
    "output_len": int(output_len),
    "max_context": int(max_context),
    "kv_blocks": int(kv_blocks),
    "tables": [{"name": t, "title": TITLES.get(t, t),
                "gpu_memory": gpu_memory if t == "budget" else None,
                "offload": offload if t == "budget" else None,
                "steps": rows} for t, rows in tables.items()],
}
json.dump(doc, open(os.path.join(out, "ablation.json"), "w"), indent=2)


def num(v, fmt):
    return "n/a" if v is None else format(v, fmt)


md = [f"# Ablation: {model}, input {input_len}, output {output_len} tokens",
      "", f"{device}; {doc['date']}; max context {max_context}, {kv_blocks} KV blocks in every "
      "step. Each step adds one lever to the one before it; x = tokens/s over the previous "
      "step. GPU utilisation: nvidia-smi every 200 ms while ringbench ran.", ""]
for t in doc["tables"]:
    md += [f"## {t['title']}", "",
           "| step | lever | tokens/s | x | TTFT p50 (ms) | inter-token p50 (ms) | GPU util (%) |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    prev = None
    for s in t["steps"]:
        tps = s.get("tokens_per_s") if s["ok"] else None
        ratio = f"{tps / prev:.2f}" if tps and prev else ""
        lever = s["lever"] + ("" if s["ok"] else f" ({s.get('error', 'failed')})")
        md.append(f"| {s['step']} | {lever} | {num(tps, '.1f')} | {ratio} | "
                  f"{num(s.get('ttft_p50_ms') if s['ok'] else None, '.1f')} | "
                  f"{num(s.get('itl_p50_ms') if s['ok'] else None, '.2f')} | "
                  f"{num(s.get('gpu_util_pct'), '.0f')} |")
        prev = tps  # no ratio across a failed step
    plans = next((s["plan"] for s in t["steps"] if s.get("plan")), [])
    if plans:
        md += ["", "Placement and pipeline (server log, step 0):", "", "```"] + plans + ["```"]
    md.append("")
open(os.path.join(out, "ablation.md"), "w").write("\n".join(md))
print("\n".join(md))
EOF
py_rc=$?
((py_rc != 0)) && rc=1
if ((py_rc == 0)); then
  python3 "$root/scripts/ablation_chart.py" "$out/ablation.json" "$out/ablation.svg" || rc=1
fi
echo "ablation: $(elapsed) s, rc=$rc (logs: $logs)"
exit $rc
