#!/usr/bin/env bash
# Hostile and careless input through the real binary (issue 22): a trace that is an endless
# stream of NUL bytes fails within the line bound, a checkpoint shard that is a directory or a
# FIFO is an error (and never blocks), and writing an output neither follows a symlink planted
# under a temporary name nor loosens an existing file's permissions.
# Usage: hostile_inputs.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/examples/tiny-llama"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# /dev/zero: no newline ever; the over-long line is reported at the bound (ran for minutes).
if [ -c /dev/zero ]; then
  timeout 60 "$cg" profile "$crate" --runtime-trace /dev/zero -o "$work/p.json" 2>"$work/err"; rc=$?
  [ "$rc" -eq 2 ] || fail "profile --runtime-trace /dev/zero exits $rc, expected 2 ($(cat "$work/err"))"
  grep -q '/dev/zero:1: line is longer than' "$work/err" || fail "names /dev/zero ($(cat "$work/err"))"
  timeout 60 "$cg" profile "$crate" --lenient --runtime-trace /dev/zero -o "$work/p.json" 2>"$work/err"; rc=$?
  [ "$rc" -eq 2 ] || fail "lenient /dev/zero exits $rc, expected 2 ($(cat "$work/err"))"
fi

# Shards that exist but are not files: the checkpoint will not load, so verify must not say so.
mkdir -p "$work/ck"
printf '{"weight_map":{"model.norm.weight":"model-00001-of-00001.safetensors"}}' \
  >"$work/ck/model.safetensors.index.json"
mkdir "$work/ck/model-00001-of-00001.safetensors"
"$cg" verify "$crate" --config "$crate/config.json" --checkpoint "$work/ck" -o "$work/v.txt" \
  2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "a directory shard exits $rc, expected 2 ($(cat "$work/err"))"
grep -q 'model.safetensors.index.json: shard "model-00001-of-00001.safetensors"' "$work/err" \
  || fail "the error names the index and the shard ($(cat "$work/err"))"
rmdir "$work/ck/model-00001-of-00001.safetensors"
mkfifo "$work/ck/model-00001-of-00001.safetensors"
timeout 60 "$cg" verify "$crate" --config "$crate/config.json" --checkpoint "$work/ck" \
  -o "$work/v.txt" 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "a FIFO shard exits $rc, expected 2 (124 = blocked) ($(cat "$work/err"))"
grep -q 'is a FIFO' "$work/err" || fail "the FIFO is named ($(cat "$work/err"))"

# Outputs: an existing 0600 report stays 0600; a symlink planted under the old temporary name
# (<out>.tmp.<pid>, pid guessed by the attacker) is never written through.
echo secret >"$work/victim"
: >"$work/ir.json"; chmod 600 "$work/ir.json"
for pid in $(seq $$ $(($$ + 200))); do ln -s "$work/victim" "$work/ir.json.tmp.$pid"; done
"$cg" check "$crate" --config "$crate/config.json" -o "$work/ir.json" 2>/dev/null \
  || fail "check -o exited $?"
[ "$(cat "$work/victim")" = secret ] || fail "a planted symlink was followed: victim overwritten"
[ "$(stat -c %a "$work/ir.json")" = 600 ] || fail "mode became $(stat -c %a "$work/ir.json"), expected 600"
grep -q '"schema"' "$work/ir.json" || fail "the report was written"
# --lenient reads a damaged trace but says so: end counts that disagree with the file.
cat >"$work/damaged.jsonl" <<'JSONL'
{"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"m::M::forward","profile":"release","cargo_features":[],"cfg":[],"analysis_id":"analysis:x","phase":"infer","clock":"steady_clock","start_unix_ns":1,"pid":1,"backpressure":"block","buffer_records_per_thread":1024,"counter_block":64,"writer":"test"}
{"kind":"operation","event_id":"infer-op-0-1","op":"matmul","static_id":"operation:f:matmul:0","inputs":[],"step":0,"duration_ns":10,"start_ns":5,"thread":0}
{"kind":"end","operations":999,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":100}
JSONL
"$cg" export --chrome "$work/chrome.json" --runtime-trace "$work/damaged.jsonl" --lenient 2>"$work/err" \
  || fail "export --lenient of a damaged trace exited $?"
grep -q "disagree" "$work/err" || fail "export --lenient is silent about the damaged end record"
"$cg" export --chrome "$work/chrome.json" --runtime-trace "$work/damaged.jsonl" 2>/dev/null \
  && fail "export without --lenient accepted a damaged end record"
# A reader that goes away early: the documented exit 2 ("stdout could not be written"), never a
# death by SIGPIPE (141).
"$cg" check "$crate" 2>"$work/err" | head -c10 >/dev/null; rc=${PIPESTATUS[0]}
[ "$rc" -eq 2 ] || fail "check | head -c10 exits $rc, expected 2 ($(cat "$work/err"))"
grep -q 'standard output' "$work/err" || fail "the lost output is said ($(cat "$work/err"))"
echo "hostile inputs: ok"
