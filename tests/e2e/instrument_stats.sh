#!/usr/bin/env bash
# Numeric health by module path, proven by building and running it: the fixture model
# (tests/instrument/perlayer/model, on our stand-in candle-core/candle-nn) is instrumented with
# `--stats`, patched, and compiled with real `cargo --offline` without any feature (output
# unchanged, no new warning) and with `--features candle-graph-stats` (the real profiler crate).
# The run with CANDLE_GRAPH_STATS_EVERY=1 must write a `stats` line for every module instance and
# child layer on every step, and the numbers must be the ones the example computes itself on the
# host from the same tensors (a plain loop over `to_vec1`, not the device reductions the generated
# code uses): the logits of `Model::forward` (the root's record and `lm_head`'s). Gradients: `cg_stats::grads(&varmap, &grads)` records the gradients the example
# inserts (one holding a NaN) and a zero gradient for every parameter the store lacks. With
# CANDLE_GRAPH_STATS_EVERY=2 only even steps are sampled; with ON_NON_FINITE only the tensors
# holding a NaN or Inf. Exit 77 (skipped) without cargo or python3.
# Usage: instrument_stats.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; root="$(cd "$2" && pwd)"
if ! command -v cargo >/dev/null 2>&1; then
  echo "skipped: cargo not found (the build check needs cargo and a C++ compiler)"; exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "skipped: python3 not found (it reads the trace)"; exit 77
fi
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export CARGO_TARGET_DIR="$work/target" CARGO_TERM_COLOR=never
unset CANDLE_GRAPH_STATS_EVERY CANDLE_GRAPH_STATS_ON_NON_FINITE
cp -R "$root/tests/instrument/perlayer" "$work/perlayer"
model="$work/perlayer/model"

"$cg" instrument "$model" --stats --profile-dep "path=$root/bindings/rust/candle-graph-profile" \
  -o "$work/model.diff" 2>"$work/instrument.err" || fail "instrument exited $?: $(cat "$work/instrument.err")"
grep -q '^statistics: 4 forward outputs and 12 child outputs' "$work/instrument.err" \
  || fail "expected 4 forward and 12 child outputs recorded: $(cat "$work/instrument.err")"
(cd "$model" && cargo build --offline -q 2>"$work/build0.err") || fail "the fixture does not build: $(cat "$work/build0.err")"
(cd "$model" && patch -p1 -s <"$work/model.diff") || fail "patch -p1 refused the diff"
grep -q '^candle-graph-stats = \["candle-graph-profile"\]' "$model/Cargo.toml" \
  || fail "no candle-graph-stats feature: $(cat "$model/Cargo.toml")"
mkdir -p "$model/examples"
cat >"$model/examples/run.rs" <<'RS'
use perlayer_model::{Config, Model};

// min, max, mean, rms, abs_max, zeros over the values, computed here on the host in f64.
fn host_stats(v: &[f32]) -> String {
    let n = v.len() as f64;
    let (mut lo, mut hi, mut sum, mut sq, mut zeros) = (f64::MAX, f64::MIN, 0.0, 0.0, 0);
    for &x in v {
        let x = x as f64;
        lo = lo.min(x);
        hi = hi.max(x);
        sum += x;
        sq += x * x;
        zeros += (x == 0.0) as u64;
    }
    format!(
        "{{\"min\":{lo},\"max\":{hi},\"mean\":{},\"rms\":{},\"abs_max\":{},\"zeros\":{zeros},\"elements\":{}}}",
        sum / n,
        (sq / n).sqrt(),
        lo.abs().max(hi.abs()),
        v.len()
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "candle-graph-profile")]
    if let Some(trace) = std::env::args().nth(1) {
        candle_graph_profile::install_global(
            trace,
            candle_graph_profile::ProfileConfig::infer("Model::forward"),
        )?;
    }
    let device = candle::Device::Cpu;
    let varmap = candle_nn::VarMap::new();
    let vb = candle_nn::VarBuilder::from_varmap(&varmap, candle::DType::F32, &device);
    let cfg = Config::tiny();
    let model = Model::new(&cfg, vb)?;
    let ids = candle::Tensor::from_vec(vec![1.0, 5.0, 7.0], 3, &device)?;
    let mut sum = 0.0f64;
    for step in 0..4u64 {
        #[cfg(feature = "candle-graph-profile")]
        if let Some(s) = candle_graph_profile::global() {
            s.set_step(step);
        }
        let logits = model.forward(&ids)?;
        let values = logits.to_vec1::<f32>()?;
        if step == 0 {
            eprintln!("EXPECT logits {}", host_stats(&values));
        }
        sum += values.iter().map(|v| *v as f64).sum::<f64>();
    }
    #[cfg(feature = "candle-graph-stats")]
    {
        let vars = varmap.data().lock().unwrap();
        let head = vars["lm_head.weight"].as_tensor().clone();
        let up = vars["model.layers.0.mlp.up_proj.weight"].as_tensor().clone();
        drop(vars);
        let mut grads = candle::backprop::GradStore::default();
        // lm_head: every element 2 (mean 2, rms 2); up_proj: one NaN and one zero, the rest -1.
        grads.insert(&head, head.ones_like()?.affine(2.0, 0.0)?);
        let n = up.elem_count();
        let mut g = vec![-1f32; n];
        g[0] = f32::NAN;
        g[1] = 0.0;
        grads.insert(&up, candle::Tensor::from_vec(g, up.dims().to_vec(), &device)?);
        perlayer_model::cg_stats::grads(&varmap, &grads);
        eprintln!("EXPECT params {}", varmap.data().lock().unwrap().len());
    }
    println!("logits sum {sum:.6}");
    Ok(())
}
RS
# Without a feature: no warning from the patch, the same output as the unpatched crate gives.
(cd "$model" && cargo build --offline --example run 2>"$work/build1.err") \
  || fail "patched, no feature: $(cat "$work/build1.err")"
grep -q '^warning' "$work/build1.err" && fail "patched, no feature, warns: $(cat "$work/build1.err")"
(cd "$model" && cargo run --offline -q --example run >"$work/off.out" 2>"$work/off.err") || fail "run, no feature: $(cat "$work/off.err")"
(cd "$model" && cargo build --offline --features candle-graph-stats --example run 2>"$work/build2.err") \
  || fail "patched, candle-graph-stats: $(grep -A14 '^error' "$work/build2.err" | head -80)"
grep -A6 '^warning' "$work/build2.err" | grep -q 'perlayer' && fail "patched, candle-graph-stats, warns: $(cat "$work/build2.err")"

run() {  # run NAME [ENV=VALUE...]: the trace in $work/NAME.jsonl, stderr in $work/NAME.err
  local name="$1"; shift
  (cd "$model" && env "$@" cargo run --offline -q --features candle-graph-stats --example run -- \
    "$work/$name.jsonl" >"$work/$name.out" 2>"$work/$name.err") || fail "run $name: $(cat "$work/$name.err")"
  cmp -s "$work/off.out" "$work/$name.out" || fail "run $name: the logits differ: $(cat "$work/off.out" "$work/$name.out")"
}
run every CANDLE_GRAPH_STATS_EVERY=1
run even CANDLE_GRAPH_STATS_EVERY=2
run nonfinite CANDLE_GRAPH_STATS_ON_NON_FINITE=1
run off

python3 - "$work" <<'PY' || exit 1
import json, math, sys
work = sys.argv[1]
def fail(msg):
    print("FAIL: " + msg); sys.exit(1)
def lines(name):
    out = [json.loads(l) for l in open(f"{work}/{name}.jsonl")]
    if out[-1]["kind"] != "end": fail(f"{name}: no end record")
    return out
def stats(name):
    return [r for r in lines(name) if r["kind"] == "stats"]
def expect(name, what):
    for l in open(f"{work}/{name}.err"):
        if l.startswith("EXPECT " + what + " "):
            return json.loads(l.split(" ", 2)[2])
    fail(f"{name}: the example printed no EXPECT {what}")
def close(a, b, what):
    if abs(a - b) > 1e-4 * max(1.0, abs(b)):
        fail(f"{what}: trace says {a}, the host computed {b}")

every = lines("every")
end = every[-1]
st = [r for r in every if r["kind"] == "stats"]
if end.get("stats") != len(st) or end["errors"] != 0:
    fail(f"end says stats={end.get('stats')} errors={end['errors']}, the file has {len(st)} stats lines")
outputs = [r for r in st if r["of"] == "output"]
# 28 module instances (the root, embed_tokens, norm, lm_head, and per layer: the block, 2 norms,
# attention + 4 projections, MLP + 3 projections) on each of the 4 steps.
paths = {}
for r in outputs:
    paths.setdefault(r["path"], set()).add(r["step"])
want = {"", "model.embed_tokens", "model.norm", "lm_head"}
for l in (0, 1):
    p = f"model.layers.{l}"
    want |= {p, f"{p}.input_layernorm", f"{p}.post_attention_layernorm", f"{p}.self_attn",
             f"{p}.self_attn.q_proj", f"{p}.self_attn.k_proj", f"{p}.self_attn.v_proj",
             f"{p}.self_attn.o_proj", f"{p}.mlp", f"{p}.mlp.gate_proj", f"{p}.mlp.up_proj",
             f"{p}.mlp.down_proj"}
if set(paths) != want:
    fail(f"output stats paths: missing {sorted(want - set(paths))}, unexpected {sorted(set(paths) - want)}")
for p, steps in paths.items():
    if steps != {0, 1, 2, 3}: fail(f"{p!r}: sampled on steps {sorted(steps)}, expected 0..3")
# The logits: the root's record and lm_head's are the same tensor; both match the host.
host = expect("every", "logits")
for path in ("", "lm_head"):
    rec = next(r for r in outputs if r["path"] == path and r["step"] == 0)
    if rec["shape"] != [3, 32] or rec["elements"] != host["elements"] or rec["dtype"] != "f32":
        fail(f"{path!r}: shape {rec['shape']} dtype {rec['dtype']}")
    if rec["nan"] or rec["pos_inf"] or rec["neg_inf"] or rec["zeros"] != host["zeros"]:
        fail(f"{path!r}: counts {rec}")
    for k in ("min", "max", "mean", "rms", "abs_max"):
        close(rec[k], host[k], f"{path!r} {k}")
    if rec["reason"] != "sampled": fail(f"{path!r}: reason {rec['reason']}")
# Gradients: lm_head's all 2; up_proj's one NaN and one zero; the others zero (not in the store).
grads = {r["path"]: r for r in st if r["of"] == "grad"}
nparams = expect("every", "params")
if len(grads) != nparams: fail(f"{len(grads)} gradient records for {nparams} parameters")
g = grads["lm_head.weight"]
for k, v in (("min", 2), ("max", 2), ("mean", 2), ("rms", 2), ("abs_max", 2)):
    close(g[k], v, f"lm_head.weight grad {k}")
g = grads["model.layers.0.mlp.up_proj.weight"]
n = g["elements"]
if g["nan"] != 1 or g["zeros"] != 1: fail(f"up_proj grad counts {g}")
close(g["mean"], -(n - 2) / (n - 1), "up_proj grad mean")
close(g["rms"], math.sqrt((n - 2) / (n - 1)), "up_proj grad rms")
g = grads["model.norm.weight"]
if g["zeros"] != g["elements"] or g["abs_max"] != 0: fail(f"norm weight (no gradient) {g}")
# The schedule: every second step; non-finite only: just the gradient with the NaN.
even = {r["step"] for r in stats("even") if r["of"] == "output"}
if even != {0, 2}: fail(f"EVERY=2 sampled steps {sorted(even)}")
nf = stats("nonfinite")
if [(r["path"], r["reason"]) for r in nf] != [("model.layers.0.mlp.up_proj.weight", "non_finite")]:
    fail(f"ON_NON_FINITE recorded {[(r['path'], r['reason']) for r in nf]}")
if stats("off"): fail("no schedule set, yet stats were recorded")
print(f"ok: {len(outputs)} output records over {len(want)} paths, {len(grads)} gradients, host values matched")
PY

# The trace the real Rust crate wrote, read back by candle-graph: nothing refused, every output
# finite, the NaN gradient and the parameters without a gradient named by their findings.
"$cg" check "$model" --runtime-trace "$work/every.jsonl" -o "$work/every.ir.json" 2>"$work/check.err" \
  || fail "check --runtime-trace on the Rust-written trace exited $?: $(grep -v '^ *=' "$work/check.err" | head -20)"
grep -q 'runtime-non-finite-gradient' "$work/check.err" && grep -q 'model.layers.0.mlp.up_proj.weight' "$work/check.err" \
  || fail "no runtime-non-finite-gradient naming up_proj: $(grep -i gradient "$work/check.err" | head)"
grep -q 'runtime-dead-gradient' "$work/check.err" || fail "no runtime-dead-gradient for the parameters the store lacks"
q="$("$cg" query first-non-finite --path "$model" --runtime-trace "$work/every.jsonl")"
grep -q '"found": false' <<<"$q" || fail "query first-non-finite on finite outputs: $q"
echo "ok: candle-graph reads the Rust-written trace: outputs finite, the NaN gradient and the dead ones named"
