#!/usr/bin/env bash
# Writes the quick-start demo model: random INT8 weights of the `demo` shape
# (models/demo/config.json) and the real DeepSeek-R1-Distill (Qwen2) tokenizer.
#
#   models/make_demo_model.sh [OUT_DIR] [RINGSERVE_BINARY]
#
# OUT_DIR defaults to build/demo-model; the binary to build/bin/ringserve or
# the first `ringserve` on PATH.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/build/demo-model}"
bin="${2:-}"
if [[ -z "$bin" ]]; then
  if [[ -x "$root/build/bin/ringserve" ]]; then
    bin="$root/build/bin/ringserve"
  elif command -v ringserve >/dev/null; then
    bin="$(command -v ringserve)"
  else
    echo "make_demo_model.sh: no ringserve binary; build first or pass its path" >&2
    exit 2
  fi
fi
tokenizer="$root/tests/fixtures/tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz"

"$bin" convert --model synthetic:demo --tokenizer "$tokenizer" --out "$out"
cp "$root/models/deepseek-r1-distill-qwen-7b/chat_template.jinja" "$out/chat_template.jinja"
echo "demo model written to $out"
