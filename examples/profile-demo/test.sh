#!/usr/bin/env bash
# profile-demo on hand-made IRs: `bash test.sh PROFILE_DEMO_BINARY CONFIG_JSON`.
# Checks what a user of `make demo` sees: a trace with one operation record per timed op and step
# under the IR's ids; a clear message and exit 0 (no trace) when the IR has no inference
# operations; exit 2 naming the file on a malformed IR.
set -euo pipefail
demo="$1"
config="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$tmp/ir.json" <<'JSON'
{"analysis_id":"analysis:test:1","operations":[
 {"id":"operation:f%3Amodel%253A%253AM%253A%253Aforward%3A:matmul:0","name":"matmul",
  "function":"function:model%3A%3AM%3A%3Aforward:","execution_phase":"infer"},
 {"id":"operation:f%3Atrain:loss:0","name":"cross_entropy","function":"function:train:",
  "execution_phase":"train"},
 {"id":"operation:f%3Amodel%253A%253AM%253A%253Aforward%3A:softmax:0","name":"softmax",
  "function":"function:model%3A%3AM%3A%3Aforward:","execution_phase":"infer"},
 {"id":"operation:helper:add:0","name":"add","function":"function:helper:","execution_phase":null}],
 "modules":[
 {"prefix":"","repeat":null,"type_name":"M"},
 {"prefix":"model.layers.{i}","repeat":"i in 0..cfg.num_hidden_layers","type_name":"Block"},
 {"prefix":"model.layers.{i}.self_attn","repeat":"i in 0..cfg.num_hidden_layers","type_name":"Attention"},
 {"prefix":"model.layers.{i}.self_attn.q_proj","repeat":"i in 0..cfg.num_hidden_layers","type_name":"Linear"},
 {"prefix":"model.norm","repeat":null,"type_name":"RmsNorm"},
 {"prefix":"extra.{j}","repeat":"j in 0..cfg.no_such_field","type_name":"Linear"}]}
JSON
"$demo" "$tmp/ir.json" "$config" "$tmp/t.jsonl" 3 >"$tmp/stdout"
grep -q '"schema":"candle-graph/runtime/4"' "$tmp/t.jsonl" || fail "no runtime/4 meta"
grep -q '"entrypoint":"model::M::forward"' "$tmp/t.jsonl" || fail "entrypoint not decoded"
grep -q '"analysis_id":"analysis:test:1"' "$tmp/t.jsonl" || fail "analysis_id not carried"
n=$(grep -c '"kind":"operation"' "$tmp/t.jsonl")
[[ "$n" == 6 ]] || fail "expected 2 ops x 3 steps = 6 operation records, got $n"
m=$(grep -c '"static_id":"operation:f%3Amodel%253A%253AM%253A%253Aforward%3A:softmax:0"' "$tmp/t.jsonl")
[[ "$m" == 3 ]] || fail "softmax id timed $m times, expected 3"
! grep -q 'cross_entropy\|helper:add' "$tmp/t.jsonl" || fail "timed an operation outside inference"
grep -q '"kind":"end","operations":6,.*"dropped":0' "$tmp/t.jsonl" || fail "end record"
# Module scopes: every module instance of the IR (templates expanded with the config's
# num_hidden_layers = 4) once per step under its VarBuilder path, nested as the paths nest.
mods=$(grep -c '"kind":"module"' "$tmp/t.jsonl")
[[ "$mods" == 39 ]] || fail "expected (4 layers x 3 + model.norm) x 3 steps = 39 module lines, got $mods"
[[ $(grep -c '"path":"model.layers.3.self_attn"' "$tmp/t.jsonl") == 3 ]] || fail "layer 3 attention not timed per step"
attn=$(grep -m1 '"path":"model.layers.2.self_attn",' "$tmp/t.jsonl")
parent=$(sed -E 's/.*"parent":"([^"]+)".*/\1/' <<<"$attn")
grep -q "\"event_id\":\"$parent\",\"path\":\"model.layers.2\"" "$tmp/t.jsonl" \
  || fail "self_attn's parent is not its layer's scope: $attn"
grep -q '"modules":39,"open_modules":0[,}]' "$tmp/t.jsonl" || fail "end record without module counts"
grep -q 'STAND-IN' "$tmp/stdout" || fail "the demo must say its work is a stand-in"
grep -q 'module family not timed: `extra.{j}`' "$tmp/stdout" || fail "unresolved family not reported"

# No inference operations (e.g. an IR from before the dataflow filled `operations`).
echo '{"analysis_id":"a","operations":[]}' >"$tmp/empty.json"
"$demo" "$tmp/empty.json" "$config" "$tmp/e.jsonl" >"$tmp/stdout" || fail "empty IR must exit 0"
grep -q 'no operations of an inference entrypoint' "$tmp/stdout" || fail "no clear message"
[[ ! -e "$tmp/e.jsonl" ]] || fail "a trace was written for an empty IR"

# Malformed input: exit 2 with the file named.
echo '{"operations": [' >"$tmp/bad.json"
set +e
"$demo" "$tmp/bad.json" "$config" "$tmp/b.jsonl" 2>"$tmp/stderr"
rc=$?
set -e
[[ $rc == 2 ]] || fail "malformed IR: exit $rc, expected 2"
grep -q "bad.json" "$tmp/stderr" || fail "malformed IR: file not named"
echo '{"schema":"x"}' >"$tmp/noops.json"
set +e
"$demo" "$tmp/noops.json" "$config" "$tmp/b.jsonl" 2>"$tmp/stderr"
rc=$?
set -e
[[ $rc == 2 ]] && grep -q "operations" "$tmp/stderr" || fail "IR without operations[]: exit $rc"
# An unknown trace format: exit 2 naming the argument and the formats it takes, nothing written.
set +e
"$demo" "$tmp/ir.json" "$config" "$tmp/f.jsonl" 2 runtime/9 2>"$tmp/stderr"
rc=$?
set -e
[[ $rc == 2 ]] && grep -q "FORMAT.*runtime/4-compact/1" "$tmp/stderr" || fail "bad FORMAT: exit $rc"
[[ ! -e "$tmp/f.jsonl" ]] || fail "a trace was written for a bad FORMAT"
"$demo" "$tmp/ir.json" "$config" "$tmp/c.jsonl" 2 runtime/4-compact/1 >"$tmp/stdout"
grep -q '"schema":"candle-graph/runtime/4-compact/1"' "$tmp/c.jsonl" || fail "FORMAT not applied"
# Numeric health: with --stats-every 2 each module's output is recorded after its scope on steps
# 0 and 2; --inject-nan puts a NaN into model.layers.1.self_attn's output at step 1, and with
# --stats-on-non-finite the first non-finite record (in the file's order: the order of execution
# on its one thread) is that module's at that step, every later one non-finite too.
"$demo" "$tmp/ir.json" "$config" "$tmp/s.jsonl" 3 --stats-every 2 --stats-on-non-finite \
  --inject-nan model.layers.1.self_attn@1 >"$tmp/stdout"
python3 - "$tmp/s.jsonl" <<'PY' || fail "stats records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
stats = [r for r in recs if r["kind"] == "stats"]
assert recs[0]["stats_every"] == 2 and recs[0]["stats_on_non_finite"] is True, recs[0]
assert recs[-1]["stats"] == len(stats) and recs[-1]["errors"] == 0, recs[-1]
sampled0 = {r["path"] for r in stats if r["step"] == 0}
assert len(sampled0) == 13 and all(r["nan"] == 0 for r in stats if r["step"] == 0), sampled0
first = next(r for r in stats if r["nan"])
assert (first["path"], first["step"], first["reason"]) == ("model.layers.1.self_attn", 1, "non_finite"), first
later = stats[stats.index(first):]
assert all(r["nan"] for r in later), [r["path"] for r in later if not r["nan"]]
assert all(r["reason"] == "sampled" for r in later if r["step"] == 2)
PY
grep -q '(a NaN injected after model.layers.1.self_attn at step 1)' "$tmp/stdout" || fail "injection not said"
set +e
"$demo" "$tmp/ir.json" "$config" "$tmp/n.jsonl" 3 --inject-nan model.layers.9.mlp@1 2>"$tmp/stderr"
rc=$?
set -e
[[ $rc == 2 ]] && grep -q "no module instance \`model.layers.9.mlp\`" "$tmp/stderr" || fail "unknown --inject-nan path: exit $rc"
echo "profile-demo: ok"
