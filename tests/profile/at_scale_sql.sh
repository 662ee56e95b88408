#!/usr/bin/env bash
# docs/at-scale.md's two DuckDB queries over traces the profiler itself wrote: two ranks of
# tiny-llama's forward (profile-demo: operations and a module scope per module instance, several
# steps) in runtime/4 and in runtime/4-compact/1. Each query's per-module rows (calls, total,
# self) must equal what `candle-graph profile` prints for the same traces, and the compact traces
# must be the smaller.
# Usage: at_scale_sql.sh <candle-graph binary> <profile-demo binary> <repo root>
set -euo pipefail
bin="${1:?usage: at_scale_sql.sh <candle-graph> <profile-demo> <repo root>}"
demo="${2:?}"
root="${3:?}"
fail() { echo "FAILED: $*" >&2; exit 1; }
[ -d "$root/node_modules/@duckdb/node-api" ] ||
  fail "npm package @duckdb/node-api is missing; run scripts/setup.sh (npm ci)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CARGO_HOME="$work/no-cargo-home"  # the analysis must not depend on this machine's caches
crate="$root/examples/tiny-llama"
"$bin" check "$crate" -o "$work/ir.json" 2>"$work/check.err" ||
  fail "check failed: $(cat "$work/check.err")"

for format in runtime/4 runtime/4-compact/1; do
  tag="${format//\//-}"
  for rank in 0 1; do
    "$demo" "$work/ir.json" "$crate/config.json" "$work/$tag-rank$rank.jsonl" 3 "$format" \
      >"$work/demo.out" || fail "profile-demo ($format) failed: $(cat "$work/demo.out")"
  done
  grep -q "\"schema\":\"candle-graph/$format\"" "$work/$tag-rank0.jsonl" ||
    fail "$format: the trace does not declare its schema"
  "$bin" profile "$crate" --runtime-trace "$work/$tag-rank0.jsonl" \
    --runtime-trace "$work/$tag-rank1.jsonl" -o "$work/$tag-profile.json" 2>"$work/err" ||
    fail "profile ($format) failed: $(cat "$work/err")"
  sql=plain
  [ "$format" = runtime/4 ] || sql=compact
  (cd "$root" && CG_AT_SCALE_SQL=$sql node tests/e2e/at_scale_duckdb.mjs "$root" \
    "$work/$tag-rank0.jsonl" "$work/$tag-rank1.jsonl") >"$work/$tag-sql.json" ||
    fail "DuckDB query ($format) failed"
  python3 - "$format" "$work/$tag-profile.json" "$work/$tag-sql.json" <<'PY'
import json, sys
fmt = sys.argv[1]
profile = json.load(open(sys.argv[2]))["report"]["module_scopes"]
sql = json.load(open(sys.argv[3]))
if len(profile) < 10:
    sys.exit(f"FAILED: {fmt}: profile listed {len(profile)} module rows, expected tiny-llama's tree")
for row in profile:
    got = sql.get(row["path"])
    want = {"calls": row["calls"], "total_ns": row["total_ns"], "self_ns": row["self_ns"]}
    if got != want:
        sys.exit(f"FAILED: {fmt}: {row['path']!r}: profile {want}, DuckDB {got}")
    # 2 ranks x 3 steps, one scope per instance and step
    if row["calls"] != 6:
        sys.exit(f"FAILED: {fmt}: {row['path']!r} has {row['calls']} calls, expected 6")
    if not 0 <= row["self_ns"] <= row["total_ns"]:
        sys.exit(f"FAILED: {fmt}: {row['path']!r}: self {row['self_ns']} outside 0..total")
print(f"at-scale ({fmt}): DuckDB and profile agree on {len(profile)} module rows")
PY
done
plain=$(cat "$work"/runtime-4-rank*.jsonl | wc -c)
compact=$(cat "$work"/runtime-4-compact-1-rank*.jsonl | wc -c)
[ "$compact" -lt "$plain" ] || fail "compact traces ($compact bytes) not smaller than runtime/4 ($plain)"
echo "at-scale: runtime/4 $plain bytes, compact $compact bytes"
