#!/usr/bin/env bash
# The commands a user runs first, on the bundled example: outputs, determinism, exit codes.
# Usage: cli_audit.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/examples/tiny-llama"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$cg" audit "$work/out" "$crate" --config "$crate/config.json" >"$work/stdout" 2>"$work/stderr" \
  || fail "audit exited $? ($(cat "$work/stderr"))"
for f in summary.txt model.json findings.txt findings.sarif model.html; do
  [ -s "$work/out/$f" ] || fail "audit did not write $f"
done
grep -q '"schema": "candle-graph/model/1"' "$work/out/model.json" || fail "model.json schema"
grep -q 'tiny-llama 0.1.0' "$work/out/summary.txt" || fail "summary names the crate"
grep -q 'model::TinyLlama::forward' "$work/out/summary.txt" || fail "TinyLlama::forward is an entrypoint"
grep -q 'candle-nn 0.11.0' "$work/out/summary.txt" || fail "candle version from Cargo.lock"
grep -q '"version": "2.1.0"' "$work/out/findings.sarif" || fail "SARIF version"
ls "$work/out" | grep -q '\.tmp\.' && fail "temporary files left behind"

# Same input, same bytes.
"$cg" check "$crate" -o "$work/a.json" 2>/dev/null || fail "check exited $?"
"$cg" check "$crate" -o "$work/b.json" 2>/dev/null || fail "check exited $?"
cmp -s "$work/a.json" "$work/b.json" || fail "check output is not deterministic"

# Features change the identity (build_id / analysis_id).
"$cg" check "$crate" --features qkv-bias -o "$work/c.json" 2>/dev/null || fail "check --features"
id_a=$(grep -m1 '"analysis_id"' "$work/a.json"); id_c=$(grep -m1 '"analysis_id"' "$work/c.json")
[ "$id_a" != "$id_c" ] || fail "a feature did not change analysis_id"

# Bad input: clear message and exit 2, never a crash.
"$cg" check "$work/nowhere" >/dev/null 2>"$work/err"; rc=$?
[ $rc -eq 2 ] || fail "missing crate exited $rc"
grep -q "nowhere" "$work/err" || fail "missing crate error does not name the path: $(cat "$work/err")"
"$cg" check "$crate" --features no-such-feature >/dev/null 2>"$work/err"; rc=$?
[ $rc -eq 2 ] || fail "unknown feature exited $rc"
grep -q "qkv-bias" "$work/err" || fail "unknown feature error should list valid ones: $(cat "$work/err")"
"$cg" frobnicate >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown command should exit 2"
"$cg" check "$crate" --message-format yaml >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad --message-format"
"$cg" audit "$work/out2" "$crate" --config "$work/nowhere.json" >/dev/null 2>"$work/err"; rc=$?
[ $rc -eq 2 ] || fail "missing config exited $rc"
grep -q "nowhere.json" "$work/err" || fail "missing config not named"

# Diagnostics in JSON are one object per line, ending with the summary record.
"$cg" report "$crate" --message-format json >/dev/null 2>"$work/diag.jsonl" || fail "report exited $?"
tail -1 "$work/diag.jsonl" | grep -q '"reason":"analysis-finished"' || fail "json diagnostics end"
echo "ok"
