# Time keeping for the GPU machine scripts, whose whole run must fit one
# device call: sourced after setting $budget (seconds for the whole run),
# $reserve (seconds kept for packing up at the end) and $out.
#   elapsed        seconds since sourcing
#   left           seconds of the budget left
#   allow CAP      seconds a stage may take: its own CAP, but never past the
#                  budget less the reserve (at least 5)
#   note TEXT...   prints TEXT and appends it to $out/summary.txt
# shellcheck shell=bash
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0)); }
left() { echo $((budget - $(elapsed))); }
allow() {
  local l=$(($(left) - ${reserve:-0}))
  ((l < 5)) && l=5
  (($1 < l)) && echo "$1" || echo "$l"
}
summary=$out/summary.txt
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
