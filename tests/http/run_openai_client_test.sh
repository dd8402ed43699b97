#!/usr/bin/env bash
# Starts the real `ringserve serve` with the HTTP API on a demo model (real
# tokenizer, random weights), then:
#   1. drives it with the official openai npm client, and checks /health,
#      /metrics (parsed as Prometheus text) and the error cases over plain
#      HTTP (openai_client.test.mjs);
#   2. checks that the same greedy request gives the same token ids and text
#      over HTTP and over the shared-memory ring (ringctl), for a completion
#      and for a chat;
#   3. runs `ringbench --transport all` briefly (shm, socket, http), and
#      checks that SIGTERM stops the server with exit status 0.
# Usage: run_openai_client_test.sh BIN_DIR SOURCE_DIR
# Exit 77 (ctest: skipped) only when node is missing; a missing openai
# package with node present is a failure (scripts/setup.sh installs it).
set -euo pipefail
bin=$1
src=$2
here="$src/tests/http"

if ! command -v node >/dev/null; then
  echo "[  SKIPPED ] node is not installed (scripts/setup.sh installs it)"
  exit 77
fi
if [[ ! -d "$here/node_modules/openai" ]]; then
  echo "FAIL: node is installed but $here/node_modules/openai is missing: run scripts/setup.sh"
  exit 1
fi
for tool in "$bin/ringserve" "$bin/ringctl"; do
  [[ -x $tool ]] || { echo "FAIL: $tool is not built"; exit 1; }
done
command -v curl >/dev/null || { echo "FAIL: curl is missing"; exit 1; }

work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/ringserve" convert --model synthetic:demo \
  --tokenizer "$src/tests/fixtures/tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz" \
  --out "$work/model" >"$work/convert.log" 2>&1 || { cat "$work/convert.log"; exit 1; }

# --max-batch 1 --max-queue 1: one request runs, one waits, a third is refused (429);
# small body and prompt limits keep the error cases cheap.
sock="$work/ringserve.sock"
start_server() {
  port=$((20000 + RANDOM % 20000))
  "$bin/ringserve" serve --model "$work/model" --backend cpu --threads 2 --socket "$sock" \
    --http "127.0.0.1:$port" --http-max-body-bytes 65536 --max-prompt-tokens 1024 \
    --max-context 2048 --max-batch 1 --max-queue 1 --batch-policy adaptive --preflight off \
    >"$work/server.log" 2>&1 &
  server_pid=$!
}
start_server
# /health: nothing (not listening yet), then 503 {"status":"loading"} while
# the model and tokenizer load, then 200.
ready=0
saw_loading=no
for _ in $(seq 1 600); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    if grep -q "Address already in use" "$work/server.log"; then start_server; continue; fi
    cat "$work/server.log"
    exit 1
  fi
  code=$(curl -s -o "$work/health" -w '%{http_code}' "http://127.0.0.1:$port/health" || true)
  case $code in
    200) ready=1; break ;;
    503) grep -q '"loading"' "$work/health" || { echo "FAIL: 503 without loading"; exit 1; }
         saw_loading=yes ;;
    000) ;;
    *) echo "FAIL: /health answered $code while starting"; exit 1 ;;
  esac
  sleep 0.05
done
[[ $ready == 1 ]] || { echo "FAIL: /health never answered 200"; cat "$work/server.log"; exit 1; }
echo "server up on port $port (saw /health 503 loading: $saw_loading)"

status=0
RINGSERVE_HTTP_URL="http://127.0.0.1:$port/v1" node --test --test-reporter=spec \
  "$here/openai_client.test.mjs" || status=$?

# Same greedy request over HTTP and over the ring: the same ids and text.
json_field() { node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const j=JSON.parse(s);process.stdout.write(JSON.stringify($1))})"; }
compare() {
  local what=$1 http=$2 ring=$3
  if [[ "$http" != "$ring" ]]; then
    echo "FAIL: $what: HTTP and ring disagree"
    printf '  http: %s\n  ring: %s\n' "$http" "$ring"
    status=1
  else
    echo "ok: $what: HTTP and ring agree: $http"
  fi
}
http_completion=$(curl -fsS "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"ignore_eos":true,"return_token_ids":true}' |
  json_field '[j.choices[0].token_ids, j.choices[0].text]')
ring_completion=$("$bin/ringctl" --socket "$sock" generate --prompt "Once upon a time" \
  --max-new-tokens 8 --temperature 0 --ignore-eos --json | json_field '[j.ids, j.text]')
compare "completion" "$http_completion" "$ring_completion"

http_chat=$(curl -fsS "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"Name three colours."}],"max_tokens":8,"temperature":0,"ignore_eos":true,"return_token_ids":true}' |
  json_field 'j.choices[0].token_ids')
ring_chat=$("$bin/ringctl" --socket "$sock" generate --chat "Name three colours." \
  --max-new-tokens 8 --temperature 0 --ignore-eos --json | json_field 'j.ids')
compare "chat" "$http_chat" "$ring_chat"

# ringbench over the three transports (a smoke run: all requests succeed;
# concurrency 1, as --max-queue 1 would refuse some at 2).
if [[ -x "$bin/ringbench" ]]; then
  if "$bin/ringbench" --socket "$sock" --http "127.0.0.1:$port" --transport all --input-len 8 \
    --output-len 4 --concurrency 1 --requests 3 --warmup 1 --no-progress >"$work/bench.log" 2>&1 &&
    grep -q "transports side by side" "$work/bench.log"; then
    echo "ok: ringbench --transport all"
  else
    echo "FAIL: ringbench --transport all"; cat "$work/bench.log"; status=1
  fi
fi

# A clean stop on SIGTERM: exit 0.
kill -TERM "$server_pid"
server_rc=0
wait "$server_pid" || server_rc=$?
server_pid=
if [[ $server_rc -ne 0 ]]; then
  echo "FAIL: ringserve exited $server_rc on SIGTERM"
  status=1
fi

if [[ $status -ne 0 ]]; then echo "--- server log ---"; tail -50 "$work/server.log"; fi
exit $status
