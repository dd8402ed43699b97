#!/usr/bin/env bash
# The quick start: set up, build, serve a model, talk to it, benchmark it, stop.
#
#   scripts/quickstart.sh                      demo model (real tokenizer, random weights)
#   scripts/quickstart.sh --model DIR          a Hugging Face or `ringserve convert` directory
#   scripts/quickstart.sh --model synthetic:deepseek-r1-distill-qwen-7b --backend cuda
#
# Options:
#   --model SPEC        what `ringserve serve --model` gets (default: the demo model)
#   --tokenizer FILE    tokenizer.json(.gz), when the model directory has none
#   --backend B         cpu, cuda or auto (default auto)
#   --build-dir DIR     build folder (default: build)
#   --prompt TEXT       the prompt of the `ringctl generate` step
#   --skip-setup        do not run scripts/setup.sh
# Environment: RINGSERVE_CUDA=AUTO|ON|OFF is passed to CMake (default AUTO).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

model=""
tokenizer=""
backend="auto"
build="build"
prompt="Explain in one sentence why batching helps a memory-bound decoder."
setup=1
while (($#)); do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --tokenizer) tokenizer=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    --skip-setup) setup=0; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "quickstart.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

if ((setup)); then
  step "1/6 setup (Debian packages)"
  bash scripts/setup.sh
fi

step "2/6 build ($build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGSERVE_CUDA="${RINGSERVE_CUDA:-AUTO}"
cmake --build "$build" -j "$(nproc)" --target ringserve ringctl ringbench
bin="$root/$build/bin"

step "3/6 model"
if [[ -z $model ]]; then
  demo="$root/$build/demo-model"
  if [[ ! -f $demo/config.json ]]; then
    bash models/make_demo_model.sh "$demo" "$bin/ringserve"
  fi
  model=$demo
  echo "demo model: $model (real tokenizer, random weights: its text is gibberish by design)"
else
  echo "model: $model"
fi

step "4/6 start the server"
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/ringserve-quickstart.XXXXXX")
socket="$run_dir/ringserve.sock"
log="$run_dir/server.log"
serve_args=(serve --model "$model" --backend "$backend" --socket "$socket" --batch-policy adaptive)
[[ -n $tokenizer ]] && serve_args+=(--tokenizer "$tokenizer")
"$bin/ringserve" "${serve_args[@]}" >"$log" 2>&1 &
server_pid=$!
cleanup() {
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$run_dir"
}
trap cleanup EXIT
for _ in $(seq 1 600); do
  grep -q "ringserve: listening on" "$log" && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "quickstart.sh: the server exited; its log:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.5
done
grep -q "ringserve: listening on" "$log" || { echo "quickstart.sh: server not ready after 300 s" >&2; cat "$log" >&2; exit 1; }
grep "ringserve: listening on" "$log"

step "5/6 ringctl generate"
echo "prompt: $prompt"
"$bin/ringctl" --socket "$socket" generate --prompt "$prompt" --max-new-tokens 48
echo

step "6/6 ringbench (short)"
"$bin/ringbench" --socket "$socket" --input-len 128 --output-len 32 --batch 4 --runs 2 --warmup 1 \
  --json "$run_dir/bench.json"
"$bin/ringctl" --socket "$socket" stats

step "stop the server"
kill -TERM "$server_pid"
wait "$server_pid" && echo "server stopped cleanly" || { echo "server exit status $?" >&2; cat "$log" >&2; exit 1; }
