#!/usr/bin/env bash
# Starts the real `ringserve serve` with the HTTP API on a demo model (real
# tokenizer, random weights), then:
#   1. drives it with the official openai npm client (openai_client.test.mjs);
#   2. checks that the same greedy request gives the same text over HTTP and
#      over the shared-memory ring (ringctl);
#   3. checks /health and /metrics with curl.
# Usage: run_openai_client_test.sh BIN_DIR SOURCE_DIR
# Exit 77 (ctest: skipped) when node or the openai package is missing.
set -euo pipefail
bin=$1
src=$2
here="$src/tests/http"

if ! command -v node >/dev/null || [[ ! -d "$here/node_modules/openai" ]]; then
  echo "[  SKIPPED ] node or the openai npm package is missing (scripts/setup.sh installs it)"
  exit 77
fi

work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/ringserve" convert --model synthetic:demo \
  --tokenizer "$src/tests/fixtures/tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz" \
  --out "$work/model" >"$work/convert.log" 2>&1 || { cat "$work/convert.log"; exit 1; }

port=$((20000 + RANDOM % 20000))
sock="$work/ringserve.sock"
"$bin/ringserve" serve --model "$work/model" --backend cpu --socket "$sock" \
  --http "127.0.0.1:$port" --batch-policy adaptive --preflight off >"$work/server.log" 2>&1 &
server_pid=$!

for _ in $(seq 1 600); do
  if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/server.log"; exit 1; fi
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/health" | grep -q '"ok"'

status=0
RINGSERVE_HTTP_URL="http://127.0.0.1:$port/v1" node --test "$here/openai_client.test.mjs" || status=$?

# Same greedy request over HTTP and over the ring: the same text.
http_text=$(curl -fsS "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"ignore_eos":true}' |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).choices[0].text))')
ring_text=$("$bin/ringctl" --socket "$sock" generate --prompt "Once upon a time" --max-new-tokens 8 \
  --temperature 0 --ignore-eos --json |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).text))')
if [[ "$http_text" != "$ring_text" ]]; then
  echo "HTTP and ring disagree:"; printf 'http: %q\nring: %q\n' "$http_text" "$ring_text"
  status=1
else
  echo "HTTP and ring agree: $(printf '%q' "$http_text")"
fi

# /metrics parses as Prometheus text and counts what we did.
metrics=$(curl -fsS "http://127.0.0.1:$port/metrics")
echo "$metrics" | grep -q '^ringserve_requests_total [1-9]' || { echo "metrics: no requests counted"; status=1; }
echo "$metrics" | grep -q '^ringserve_time_to_first_token_seconds_bucket{le="+Inf"} [1-9]' ||
  { echo "metrics: no TTFT observations"; status=1; }

if [[ $status -ne 0 ]]; then echo "--- server log ---"; tail -50 "$work/server.log"; fi
exit $status
