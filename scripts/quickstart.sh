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
#   --backend B         cpu, cuda or auto (default auto: cuda when built and a GPU is usable)
#   --build-dir DIR     build folder (default: build)
#   --prompt TEXT       the prompt of the `ringctl generate` step
#   --skip-setup        do not run scripts/setup.sh
# Environment: RINGSERVE_CUDA=AUTO|ON|OFF is passed to CMake (default AUTO).
# Exits 0 when every step worked; otherwise non-zero, naming the step and
# showing the end of the server's log.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

model=""
tokenizer=""
backend="auto"
build="build"
prompt="Explain in one sentence why batching helps a memory-bound decoder."
setup=1
usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
die() {
  echo "quickstart.sh: $*" >&2
  exit 2
}
while (($#)); do
  case "$1" in
    --model | --tokenizer | --backend | --build-dir | --prompt)
      (($# >= 2)) || die "$1 needs a value (see --help)"
      case "$1" in
        --model) model=$2 ;;
        --tokenizer) tokenizer=$2 ;;
        --backend) backend=$2 ;;
        --build-dir) build=$2 ;;
        --prompt) prompt=$2 ;;
      esac
      shift 2
      ;;
    --skip-setup) setup=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

# Cheap checks first, before minutes of building.
case "$backend" in cpu | cuda | auto) ;; *) die "--backend must be cpu, cuda or auto, not '$backend'" ;; esac
if [[ -n $model && $model != synthetic:* && ! -d $model ]]; then
  die "--model $model: no such directory (give a model directory or synthetic:NAME)"
fi
if [[ -n $tokenizer && ! -f $tokenizer ]]; then
  die "--tokenizer $tokenizer: no such file"
fi
[[ $build = /* ]] || build="$root/$build"

current="starting"
step() {
  current=$1
  printf '\n\033[1m== %s\033[0m\n' "$1"
}

server_pid=""
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/ringserve-quickstart.XXXXXX")
socket="$run_dir/ringserve.sock"
log="$run_dir/server.log"
stop_server() {
  [[ -n $server_pid ]] || return 0
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  server_pid=""
}
on_exit() {
  local status=$?
  stop_server
  if ((status != 0)); then
    echo >&2
    echo "quickstart.sh: FAILED at step '$current' (exit status $status)" >&2
    if [[ $current == 2/6* ]] && ((!setup)); then
      echo "quickstart.sh: missing packages? run without --skip-setup (as root) to install them" >&2
    fi
    if [[ -s $log ]]; then
      echo "quickstart.sh: the last lines of the server log ($log):" >&2
      tail -n 40 "$log" >&2
    fi
  fi
  rm -rf "$run_dir"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

if ((setup)); then
  step "1/6 setup (Debian packages)"
  bash scripts/setup.sh
else
  for tool in cmake ninja; do
    command -v "$tool" >/dev/null ||
      die "$tool is not installed; run scripts/setup.sh (as root) or drop --skip-setup"
  done
fi

step "2/6 build ($build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRINGSERVE_CUDA="${RINGSERVE_CUDA:-AUTO}"
cmake --build "$build" -j "$(nproc)" --target ringserve ringctl ringbench
bin="$build/bin"

step "3/6 model"
demo_model=0
if [[ -z $model ]]; then
  demo="$build/demo-model"
  if [[ ! -f $demo/chat_template.jinja ]]; then  # its last file: absent after an interrupted run
    rm -rf "$demo"
    bash models/make_demo_model.sh "$demo" "$bin/ringserve"
  fi
  model=$demo
  demo_model=1
  echo "demo model: $model"
  echo "(real tokenizer, random weights: its text is gibberish by design)"
else
  echo "model: $model"
fi

step "4/6 start the server"
serve_args=(serve --model "$model" --backend "$backend" --socket "$socket" --batch-policy adaptive)
[[ -n $tokenizer ]] && serve_args+=(--tokenizer "$tokenizer")
echo "$bin/ringserve ${serve_args[*]}"
"$bin/ringserve" "${serve_args[@]}" >"$log" 2>&1 &
server_pid=$!
ready=0
for _ in $(seq 1 1200); do  # loading a large model from a slow disk takes a while
  if grep -q "ringserve: listening on" "$log"; then
    ready=1
    break
  fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    wait "$server_pid" || true
    server_pid=""
    echo "quickstart.sh: the server exited before it was ready" >&2
    exit 1
  fi
  sleep 0.5
done
((ready)) || { echo "quickstart.sh: the server was not ready after 600 s" >&2; exit 1; }
engine=$(sed -n 's/.*\[main\] engine \([a-z]*\):.*/\1/p' "$log" | head -n 1)
grep "ringserve: listening on" "$log"
grep "\[main\] engine " "$log" | sed 's/.*\[main\] /server /' || true

# A real model on the CPU engine is slow: keep its steps short.
gen_tokens=48
bench=(--input-len 128 --output-len 32 --batch 4 --runs 2 --warmup 1)
if [[ $engine == cpu ]] && ((!demo_model)); then
  gen_tokens=16
  bench=(--input-len 32 --output-len 8 --batch 2 --runs 1 --warmup 0)
fi

step "5/6 ringctl generate"
if grep -q "no tokenizer" "$log"; then
  echo "the model has no tokenizer (pass --tokenizer FILE for text); sending token ids instead"
  "$bin/ringctl" --socket "$socket" generate --prompt-ids 1,2,3,4 --ids \
    --max-new-tokens "$gen_tokens"
else
  echo "prompt: $prompt"
  "$bin/ringctl" --socket "$socket" generate --prompt "$prompt" --max-new-tokens "$gen_tokens"
fi
echo

step "6/6 ringbench (short)"
"$bin/ringbench" --socket "$socket" "${bench[@]}" --json "$run_dir/bench.json"
echo
"$bin/ringctl" --socket "$socket" stats

step "stop the server"
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=""
if ((status != 0)); then
  echo "quickstart.sh: the server exited with status $status on SIGTERM" >&2
  exit 1
fi
echo "server stopped cleanly"

current="done"
cat <<EOF

quickstart.sh: all steps passed.
Next:
  $bin/ringserve serve --model $model --backend $backend
  $bin/ringctl chat                 (interactive; ringctl --help for more)
  $bin/ringbench --help             (the load generator)
EOF
