#!/usr/bin/env bash
# Numeric health end to end on the demo's stand-in workload (examples/profile-demo, the C++ API):
# a run with statistics on every step, and the same run with a NaN injected into
# model.layers.2.mlp's output at step 12. What a user sees must name that module and that step:
# `query first-non-finite`, the runtime-first-non-finite finding of `check` (which still exits 0:
# a run's observation is never a proven error), `summary --stats` (non-finite counts on that row
# and none on a row that ran before it in the first 12 steps), and `compare`, whose
# --fail-on-regression fails on the tensor that became non-finite and passes two clean runs.
# Usage: numeric_health.sh <candle-graph> <profile-demo> <repo root>
set -euo pipefail
cg="$1"; demo="$2"; root="$3"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
crate="$root/examples/tiny-llama"
config=(--config "$crate/config.json")
"$cg" check "$crate" "${config[@]}" -o "$work/ir.json" 2>/dev/null
"$demo" "$work/ir.json" "$crate/config.json" "$work/base.jsonl" 20 --stats-every 1 >/dev/null
"$demo" "$work/ir.json" "$crate/config.json" "$work/base2.jsonl" 20 --stats-every 1 >/dev/null
"$demo" "$work/ir.json" "$crate/config.json" "$work/nan.jsonl" 20 --stats-every 1 \
  --inject-nan model.layers.2.mlp@12 >/dev/null

# query: the module and the step, and "all finite" (not "unknown") for the clean run.
q="$("$cg" query first-non-finite --path "$crate" "${config[@]}" --runtime-trace "$work/nan.jsonl")"
grep -q '"answer": "`model.layers.2.mlp` at step 12:' <<<"$q" || fail "query first-non-finite: $q"
grep -q '"found": true' <<<"$q" || fail "query first-non-finite: not found: $q"
q="$("$cg" query first-non-finite --path "$crate" "${config[@]}" --runtime-trace "$work/base.jsonl")"
grep -q '"found": false' <<<"$q" && grep -q 'no non-finite value recorded' <<<"$q" \
  || fail "clean run: expected found false: $q"

# check: the finding names module and step; exit 0 (conditional, not proven).
"$cg" check "$crate" "${config[@]}" --runtime-trace "$work/nan.jsonl" -o /dev/null 2>"$work/check.err" \
  || fail "check exited $? on a run's observation (must not gate): $(cat "$work/check.err")"
grep -q 'first non-finite module output in execution order: `model.layers.2.mlp` at step 12' "$work/check.err" \
  || fail "check: no runtime-first-non-finite naming the module and step: $(grep -i non-finite "$work/check.err")"
grep -q 'code: runtime-first-non-finite (conditional)' "$work/check.err" || fail "check: finding not conditional"

# summary --stats: the injected module's row counts non-finite values, layer 0's norm (which ran
# before the NaN at every step up to 12, after it from step 13) too, and without the flag there is
# no such column.
"$cg" summary "$crate" "${config[@]}" --runtime-trace "$work/nan.jsonl" --stats >"$work/summary.txt" 2>/dev/null
grep -q 'Non-finite' "$work/summary.txt" || fail "summary --stats: no Non-finite column: $(head -8 "$work/summary.txt")"
"$cg" summary "$crate" "${config[@]}" --runtime-trace "$work/base.jsonl" --stats >"$work/summary0.txt" 2>/dev/null
grep -q 'Non-finite' "$work/summary0.txt" || fail "summary --stats on a clean run: no column"
"$cg" summary "$crate" "${config[@]}" --runtime-trace "$work/nan.jsonl" >"$work/plain.txt" 2>/dev/null
grep -q 'Non-finite' "$work/plain.txt" && fail "summary without --stats shows statistics"

# compare: the NaN is a regression whatever the time threshold; two clean runs are not.
set +e
"$cg" compare --base "$work/base.jsonl" --candidate "$work/nan.jsonl" --fail-on-regression 100000 \
  >"$work/compare.txt" 2>"$work/compare.err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "compare with a new NaN: exit $rc, expected 1: $(cat "$work/compare.err")"
grep -q '^regression: rms model.layers.2.mlp holds NaN/Inf in' "$work/compare.err" \
  || fail "compare did not name model.layers.2.mlp: $(cat "$work/compare.err")"
grep -q 'became non-finite' "$work/compare.txt" || fail "compare text: $(head -20 "$work/compare.txt")"
"$cg" compare --base "$work/base.jsonl" --candidate "$work/base2.jsonl" --fail-on-regression 100000 \
  >"$work/clean.txt" 2>"$work/clean.err" || fail "two clean runs fail the gate: $(cat "$work/clean.err")"
grep -q '0 became non-finite' "$work/clean.txt" || fail "clean compare: $(tail -3 "$work/clean.txt")"
echo "ok: first non-finite model.layers.2.mlp at step 12 named by query, check, summary and compare"
