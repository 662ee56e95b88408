#!/usr/bin/env bash
# Per-layer time for real candle-transformers models, proven by building and running them: each
# model file (with what it uses: with_tracing.rs, utils.rs) is copied from $CG_CANDLE_SRC into a
# scratch crate on our own stand-in candle-core/candle-nn (tests/instrument/perlayer; serde and
# tracing stand-ins too, so cargo runs --offline with nothing from crates.io), instrumented by the
# built binary with --root, patched, built with `cargo build --offline` without and with
# `--features candle-graph-profile`, and run on a tiny config by a small example main
# (tests/instrument/perlayer/models/MODEL.rs). The trace must hold a timed row for at least 95% of
# the module instances the analysis lists for the model (every block, attention, MLP, norm,
# embedding and linear), and the rows' self times must sum to at most the run's wall time.
# Nothing of candle is committed: the files are read from CG_CANDLE_SRC at run time. The models:
# llama, bert, whisper, t5, vit and resnet18 (the conv net, made of closure modules). Each is also
# instrumented with --stats on a fresh copy, built with and without `candle-graph-stats`, and run
# with statistics on every step: the output is unchanged and the scoped paths have consistent
# `stats` lines (closure modules too).
# Exit 77 (skipped) without CG_CANDLE_SRC, cargo or python3. CG_MODELS="llama t5" runs a subset.
# Usage: instrument_models.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
if [ -z "${CG_CANDLE_SRC:-}" ] || [ ! -d "${CG_CANDLE_SRC}/candle-transformers/src/models" ]; then
  echo "skipped: CG_CANDLE_SRC is not set to a candle checkout"; exit 77
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "skipped: cargo not found"; exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "skipped: python3 not found (it reads the analysis and the trace)"; exit 77
fi
# CG_KEEP_WORK=DIR: work in DIR (a new or empty directory) and keep it, to look at the crates.
if [ -n "${CG_KEEP_WORK:-}" ]; then
  work="$CG_KEEP_WORK"; mkdir -p "$work"
  [ -z "$(ls -A "$work")" ] || { echo "FAIL: CG_KEEP_WORK=$work is not empty"; exit 1; }
else work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT; fi
fail() { echo "FAIL: $*"; exit 1; }
export CARGO_TARGET_DIR="$work/target" CARGO_TERM_COLOR=never
src="$CG_CANDLE_SRC/candle-transformers/src"
per="$root/tests/instrument/perlayer"
for c in candle-core candle-nn serde serde_derive serde_plain tracing; do cp -R "$per/$c" "$work/$c"; done

# MODEL ROOT-TYPE FILE... (paths under candle-transformers/src/models)
declare -A root_of files_of
root_of[llama]=models::llama::Llama;                  files_of[llama]="llama.rs"
root_of[bert]=models::bert::BertModel;                files_of[bert]="bert.rs"
root_of[whisper]=models::whisper::model::Whisper;     files_of[whisper]="whisper/mod.rs whisper/model.rs"
root_of[t5]=models::t5::T5ForConditionalGeneration;   files_of[t5]="t5.rs"
root_of[vit]=models::vit::Model;                      files_of[vit]="vit.rs"
root_of[resnet]=models::resnet::resnet18;             files_of[resnet]="resnet.rs"
# Analysis arguments besides the config (resnet has none: its root is a function).
declare -A args_of
args_of[resnet]="--arg num_classes=10"
models="${CG_MODELS:-llama bert whisper t5 vit resnet}"

# A scratch crate laid out as candle-transformers is (crate::models::…, crate::utils), so the
# copied files build unchanged.
make_crate() {  # make_crate MODEL [DIR]
  local m="$1" dir="${2:-$work/$1}" f
  mkdir -p "$dir/src/models" "$dir/examples"
  cat >"$dir/Cargo.toml" <<EOF
[package]
name = "cg-$m"
version = "0.1.0"
edition = "2021"
publish = false
autoexamples = false

[lib]
name = "cg_model"

[features]
flash-attn = []

[dependencies]
candle = { package = "candle-core", path = "../candle-core" }
candle-nn = { path = "../candle-nn" }
serde = { path = "../serde" }
serde_plain = { path = "../serde_plain" }
tracing = { path = "../tracing" }

[[example]]
name = "run"
path = "examples/run.rs"
EOF
  printf 'pub mod models {\n    pub mod with_tracing;\n    pub mod %s;\n}\npub mod quantized_var_builder;\npub mod utils;\n' "$m" \
    >"$dir/src/lib.rs"
  cp "$src/utils.rs" "$dir/src/utils.rs" || return 1
  cp "$src/models/with_tracing.rs" "$dir/src/models/" || return 1
  cp "$per/models/standin/quantized_var_builder.rs" "$dir/src/"
  for f in ${files_of[$m]}; do
    mkdir -p "$dir/src/models/$(dirname "$f")"
    cp "$src/models/$f" "$dir/src/models/$f" || return 1
  done
  # whisper/mod.rs declares audio.rs (the mel spectrogram) and the quantized variant: our stand-ins.
  if [ "$m" = whisper ]; then cp "$per/models/standin/whisper/"*.rs "$dir/src/models/whisper/"; fi
  cp "$per/models/$m.rs" "$dir/examples/run.rs"
  cp "$per/models/cg_example.rs" "$dir/examples/cg_example.rs"
}

# Warnings a build prints, one per line (the same set is expected before and after the patch).
warnings() { grep -E '^warning' "$1" | grep -v 'generated [0-9]* warning' | sort; }

summary=""
for m in $models; do
  [ -n "${root_of[$m]:-}" ] || fail "unknown model $m"
  make_crate "$m" || fail "$m: could not copy its files from $src"
  dir="$work/$m"
  (cd "$dir" && cargo build --offline --example run 2>"$work/$m.build0.err") \
    || fail "$m: the unpatched copy does not build on the stand-in API: $(grep -A12 '^error' "$work/$m.build0.err" | head -60)"
  (cd "$dir" && cargo run --offline -q --example run >"$work/$m.off0.out" 2>&1) \
    || fail "$m: the unpatched copy does not run: $(cat "$work/$m.off0.out")"
  "$cg" instrument "$dir" --root "${root_of[$m]}" --profile-dep "path=$root/bindings/rust/candle-graph-profile" \
    -o "$work/$m.diff" 2>"$work/$m.instrument.err" || fail "$m: instrument exited $?: $(cat "$work/$m.instrument.err")"
  (cd "$dir" && patch -p1 -s <"$work/$m.diff") || fail "$m: patch -p1 refused the diff"
  (cd "$dir" && cargo build --offline --example run 2>"$work/$m.build1.err") \
    || fail "$m: patched, feature off: $(grep -A12 '^error' "$work/$m.build1.err" | head -60)"
  [ "$(warnings "$work/$m.build1.err")" = "$(warnings "$work/$m.build0.err")" ] \
    || fail "$m: the patch adds warnings (feature off): $(diff <(warnings "$work/$m.build0.err") <(warnings "$work/$m.build1.err"))"
  (cd "$dir" && cargo run --offline -q --example run >"$work/$m.off.out" 2>&1) || fail "$m: run, feature off: $(cat "$work/$m.off.out")"
  cmp -s "$work/$m.off0.out" "$work/$m.off.out" || fail "$m: the patch changes the output"
  (cd "$dir" && cargo build --offline --features candle-graph-profile --example run 2>"$work/$m.build2.err") \
    || fail "$m: patched, feature on: $(grep -A12 '^error' "$work/$m.build2.err" | head -80)"
  [ "$(warnings "$work/$m.build2.err" | grep -v candle-graph-profile)" = "$(warnings "$work/$m.build0.err")" ] \
    || fail "$m: the patch adds warnings (feature on): $(grep -A8 '^warning' "$work/$m.build2.err" | head -60)"
  (cd "$dir" && cargo run --offline -q --features candle-graph-profile --example run -- "$work/$m.trace.jsonl" \
    >"$work/$m.on.out" 2>&1) || fail "$m: run, feature on: $(cat "$work/$m.on.out")"
  cmp -s "$work/$m.off.out" "$work/$m.on.out" || fail "$m: the output differs with the feature: $(cat "$work/$m.off.out" "$work/$m.on.out")"
  [ -s "$work/$m.trace.jsonl" ] || fail "$m: no trace written"

  # The module instances of the model, from the analysis with the run's config bound (families
  # expanded): each module that holds weights, and the owner of each weight (the key less its
  # last segment: t5's own `Linear` is not an IR module, its `….q.weight` still names an instance).
  # Instances the analysis calls conditional (bert's fallback `bert.encoder` built when
  # `encoder` fails to load) are alternatives of which the run builds one: reported, not required.
  config=(); [ -f "$per/models/$m.json" ] && config=(--config "$per/models/$m.json")
  # shellcheck disable=SC2086 # args_of holds separate words
  "$cg" report "$dir" --root "${root_of[$m]}" "${config[@]}" ${args_of[$m]:-} \
    >"$work/$m.ir.json" 2>"$work/$m.ir.err" || fail "$m: report exited $?: $(cat "$work/$m.ir.err")"
  "$cg" query module-timings --path "$dir" --root "${root_of[$m]}" --runtime-trace "$work/$m.trace.jsonl" --limit 100000 \
    >"$work/$m.timings.json" 2>"$work/$m.timings.err" || fail "$m: query module-timings exited $?: $(cat "$work/$m.timings.err")"
  line="$(python3 - "$m" "$work/$m.ir.json" "$work/$m.timings.json" "$work/$m.trace.jsonl" 2>&1 <<'PY'
import json, sys
m, ir, timings, trace = sys.argv[1:]
ir = json.load(open(ir))
def under(key, prefix):
    return prefix == "" or key.startswith(prefix + ".")
params = {p["key"]: p["confidence"] != "conditional" for p in ir["parameters"]}
required, optional = set(), set()
for key, sure in params.items():
    (required if sure else optional).add(key.rpartition(".")[0])
for mod in ir["modules"]:
    p = mod["prefix"]
    if "{" in p:
        sys.exit(f"{m}: module family {p} left unexpanded with the config bound")
    keys = [k for k in params if under(k, p)]
    if not keys:
        continue  # no weight under it: not built in this configuration
    sure = mod["confidence"] != "conditional" and any(params[k] for k in keys)
    (required if sure else optional).add(p)
optional -= required
t = json.load(open(timings))
rows = {i["path"]: i for i in t["items"] if not i["family"]}
def timed(p):
    return p in rows and rows[p]["calls"] > 0 and rows[p]["total_ns"] > 0
missing = sorted(p for p in required if not timed(p))
opt_timed = sorted(p for p in optional if timed(p))
# Wall time from the trace itself: the union of the module records' intervals over all threads.
spans = sorted((r["start_ns"], r["start_ns"] + r["duration_ns"])
               for r in map(json.loads, open(trace)) if r.get("kind") == "module")
wall, end = 0, None
for a, b in spans:
    if end is None or a > end:
        wall += b - a; end = b
    elif b > end:
        wall += b - end; end = b
self_sum = sum(r["self_ns"] for r in rows.values())
n = len(required)
share = (n - len(missing)) / n
print(f"{m}: {n - len(missing)}/{n} module instances timed ({100 * share:.1f}%), "
      f"{len(opt_timed)}/{len(optional)} conditional alternatives timed; self times {self_sum} ns <= wall {wall} ns"
      + (f"; untimed: {' '.join(p or '(root)' for p in missing)}" if missing else ""))
if t["wall_ns"] != wall:
    sys.exit(f"{m}: the tool's wall time {t['wall_ns']} ns is not the trace's span union {wall} ns")
if self_sum > wall:
    sys.exit(f"{m}: self times sum to {self_sum} ns, more than the wall time {wall} ns")
if share < 0.95:
    sys.exit(f"{m}: only {n - len(missing)} of {n} module instances timed; untimed: {missing}")
PY
)" || fail "$line"
  summary+="$line"$'\n'
  echo "$line"

  # Numeric health (instrument --stats) on a fresh copy: builds without a feature and with
  # candle-graph-stats (no new warning), gives the same output, and with CANDLE_GRAPH_STATS_EVERY=1
  # records a consistent `stats` line for every module path the timed run scoped, except the
  # forwards --stats says it skipped (printed).
  sdir="$work/$m-stats"
  make_crate "$m" "$sdir" || fail "$m: could not copy its files again"
  "$cg" instrument "$sdir" --stats --root "${root_of[$m]}" --profile-dep "path=$root/bindings/rust/candle-graph-profile" \
    -o "$work/$m.stats.diff" 2>"$work/$m.stats.err" || fail "$m --stats: instrument exited $?: $(cat "$work/$m.stats.err")"
  (cd "$sdir" && patch -p1 -s <"$work/$m.stats.diff") || fail "$m --stats: patch -p1 refused the diff"
  (cd "$sdir" && cargo build --offline --example run 2>"$work/$m.sbuild1.err") \
    || fail "$m --stats, no feature: $(grep -A12 '^error' "$work/$m.sbuild1.err" | head -60)"
  [ "$(warnings "$work/$m.sbuild1.err")" = "$(warnings "$work/$m.build0.err")" ] \
    || fail "$m --stats: the patch adds warnings (no feature): $(diff <(warnings "$work/$m.build0.err") <(warnings "$work/$m.sbuild1.err"))"
  (cd "$sdir" && cargo run --offline -q --example run >"$work/$m.soff.out" 2>&1) || fail "$m --stats, no feature, run: $(cat "$work/$m.soff.out")"
  cmp -s "$work/$m.off0.out" "$work/$m.soff.out" || fail "$m --stats: the patch changes the output"
  (cd "$sdir" && cargo build --offline --features candle-graph-stats --example run 2>"$work/$m.sbuild2.err") \
    || fail "$m --stats, candle-graph-stats: $(grep -A14 '^error' "$work/$m.sbuild2.err" | head -80)"
  [ "$(warnings "$work/$m.sbuild2.err" | grep -v candle-graph-profile)" = "$(warnings "$work/$m.build0.err")" ] \
    || fail "$m --stats: the patch adds warnings (candle-graph-stats): $(grep -A8 '^warning' "$work/$m.sbuild2.err" | head -60)"
  (cd "$sdir" && CANDLE_GRAPH_STATS_EVERY=1 cargo run --offline -q --features candle-graph-stats --example run -- \
    "$work/$m.stats.jsonl" >"$work/$m.son.out" 2>&1) || fail "$m --stats, run: $(cat "$work/$m.son.out")"
  cmp -s "$work/$m.off0.out" "$work/$m.son.out" || fail "$m --stats: the output differs with statistics on: $(cat "$work/$m.son.out")"
  line="$(python3 - "$m" "$work/$m.trace.jsonl" "$work/$m.stats.jsonl" "$work/$m.stats.err" 2>&1 <<'PY'
import json, sys
m, timed_trace, stats_trace, instrument_err = sys.argv[1:]
scoped = {r["path"] for r in map(json.loads, open(timed_trace)) if r.get("kind") == "module"}
recs = [json.loads(l) for l in open(stats_trace)]
end = recs[-1]
if end.get("kind") != "end" or end["errors"] != 0:
    sys.exit(f"{m}: the stats run's trace ends with {end}")
stats = [r for r in recs if r["kind"] == "stats"]
if end.get("stats") != len(stats):
    sys.exit(f"{m}: end.stats {end.get('stats')} but {len(stats)} stats lines")
skipped = [l for l in open(instrument_err) if l.startswith("skipped") and "statistics of forward" in l]
for r in stats:  # the documented consistency rules, each number within 1e-3 of its bound
    n = 1
    for d in r["shape"]:
        n *= d
    finite = n - r["nan"] - r["pos_inf"] - r["neg_inf"]
    if r["elements"] != n or finite < 0 or r["zeros"] > finite or ("min" in r) != (finite > 0):
        sys.exit(f"{m}: inconsistent counts {r}")
    if finite:
        tol = 1e-3 * max(abs(r["min"]), abs(r["max"]), 1e-30)
        ok = (r["min"] <= r["mean"] + tol and r["mean"] <= r["max"] + tol
              and abs(r["abs_max"] - max(abs(r["min"]), abs(r["max"]))) <= tol
              and abs(r["mean"]) <= r["rms"] + tol and r["rms"] <= r["abs_max"] + tol)
        if not ok:
            sys.exit(f"{m}: inconsistent numbers {r}")
with_stats = {r["path"] for r in stats}
missing = sorted(scoped - with_stats)
share = (len(scoped) - len(missing)) / max(1, len(scoped))
print(f"{m} --stats: {len(scoped) - len(missing)}/{len(scoped)} scoped paths have output statistics "
      f"({100 * share:.1f}%), {len(stats)} records, {len(skipped)} forwards skipped for statistics"
      + (f"; without: {' '.join(p or '(root)' for p in missing[:12])}" if missing else ""))
if share < 0.95:
    sys.exit(f"{m}: only {len(scoped) - len(missing)} of {len(scoped)} scoped paths have statistics")
PY
)" || fail "$line"
  summary+="$line"$'\n'
  echo "$line"
done
printf '%s' "$summary"
echo "ok"
