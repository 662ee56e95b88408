#!/usr/bin/env bash
# docs/at-scale.md's DuckDB SQL over two ranks' runtime/4 traces gives the per-module table
# (calls, total, self) that `candle-graph profile` prints for the same traces.
# Usage: at_scale_duckdb.sh <candle-graph binary> <repo root>
set -euo pipefail
bin="${1:?usage: at_scale_duckdb.sh <candle-graph binary> <repo root>}"
root="${2:?}"
fail() { echo "FAILED: $*" >&2; exit 1; }
[ -d "$root/node_modules/@duckdb/node-api" ] ||
  fail "npm package @duckdb/node-api is missing; run scripts/setup.sh (npm ci)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Two ranks of tiny-llama: the model scope (path "" is the root instance), two layers on thread 0
# and a layer with its MLP on thread 1 (each scope closes before its parent, as written); rank 1's layer 0 and its MLP ran longer.
meta='{"kind":"meta","schema":"candle-graph/runtime/4","entrypoint":"tiny::forward","profile":"release","cargo_features":[],"cfg":[],"phase":"infer","clock":"steady_clock","timer":"steady_clock","start_unix_ns":1,"pid":PID,"backpressure":"block","buffer_records_per_thread":1024,"counter_block":4096,"writer":"candle-graph-profile/0.4.0"}'
rank() {  # rank <pid> <mlp ns> <layer0 ns>
  echo "${meta/PID/$1}"
  echo '{"kind":"module","event_id":"infer-mod-0-3","path":"model.layers.0.mlp","step":0,"duration_ns":'"$2"',"start_ns":3000,"thread":0,"parent":"infer-mod-0-2"}'
  echo '{"kind":"module","event_id":"infer-mod-0-2","path":"model.layers.0","step":0,"duration_ns":'"$3"',"start_ns":2000,"thread":0,"parent":"infer-mod-0-1"}'
  echo '{"kind":"module","event_id":"infer-mod-0-5","path":"model.layers.1","step":0,"duration_ns":3000,"start_ns":6500,"thread":0,"parent":"infer-mod-0-1"}'
  echo '{"kind":"module","event_id":"infer-mod-0-1","path":"","step":0,"duration_ns":10000,"start_ns":1000,"thread":0}'
  echo '{"kind":"module","event_id":"infer-mod-0-4098","path":"model.layers.1.mlp","step":0,"duration_ns":300,"start_ns":1100,"thread":1,"parent":"infer-mod-0-4097"}'
  echo '{"kind":"module","event_id":"infer-mod-0-4097","path":"model.layers.1","step":0,"duration_ns":500,"start_ns":1000,"thread":1}'
  echo '{"kind":"end","operations":0,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":2,"duration_ns":12000,"modules":6,"open_modules":0}'
}
rank 7 2000 4000 >"$work/rank0.jsonl"
rank 8 2500 4600 >"$work/rank1.jsonl"
"$bin" profile "$root/examples/tiny-llama" --runtime-trace "$work/rank0.jsonl" \
  --runtime-trace "$work/rank1.jsonl" -o "$work/profile.json" 2>"$work/err" ||
  fail "profile failed: $(cat "$work/err")"
(cd "$root" && node tests/e2e/at_scale_duckdb.mjs "$root" "$work/rank0.jsonl" "$work/rank1.jsonl") \
  >"$work/sql.json" || fail "DuckDB query failed"
python3 - "$work/profile.json" "$work/sql.json" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))["report"]["module_scopes"]
sql = json.load(open(sys.argv[2]))
if len(profile) < 5:
    sys.exit(f"FAILED: profile listed {len(profile)} module rows, expected 5")
for row in profile:
    got = sql.get(row["path"])
    want = {"calls": row["calls"], "total_ns": row["total_ns"], "self_ns": row["self_ns"]}
    if got != want:
        sys.exit(f"FAILED: {row['path']!r}: profile {want}, DuckDB {got}")
# Hand-computed: layer 0 on both ranks: total 4000 + 4600, self less its MLP (2000, 2500).
assert sql["model.layers.0"] == {"calls": 2, "total_ns": 8600, "self_ns": 4100}, sql
assert sql["model.layers.1"] == {"calls": 4, "total_ns": 7000, "self_ns": 6400}, sql
assert sql[""] == {"calls": 2, "total_ns": 20000, "self_ns": 20000 - 8600 - 6000}, sql
print("at-scale: DuckDB and profile agree on", len(profile), "module rows")
PY
