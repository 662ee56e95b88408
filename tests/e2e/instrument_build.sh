#!/usr/bin/env bash
# Per-layer time for a Candle-style model, proven by building it: the fixture model
# (tests/instrument/perlayer/model, on our own stand-in candle-core/candle-nn) is instrumented by
# the built binary, patched, and compiled and run with real `cargo --offline` both without and
# with `--features candle-graph-profile` (the real profiler crate, bindings/rust). The run with
# the feature writes a trace whose `profile` rows cover every module instance: the model's own
# types (private `fn forward`, a `pub(crate)` method the parent calls, a private `impl Module`)
# and each candle-nn layer (`q_proj`, `gate_proj`, …) timed as its parent's child; the logits
# are the same either way. With CG_CANDLE_SRC, candle-transformers' llama is instrumented too
# (not compiled). Exit 77 (skipped) without cargo.
# Usage: instrument_build.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
if ! command -v cargo >/dev/null 2>&1; then
  echo "skipped: cargo not found (the build check needs cargo and a C++ compiler)"; exit 77
fi
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export CARGO_TARGET_DIR="$work/target" CARGO_TERM_COLOR=never
cp -R "$root/tests/instrument/perlayer" "$work/perlayer"
model="$work/perlayer/model"

"$cg" instrument "$model" --profile-dep "path=$root/bindings/rust/candle-graph-profile" \
  -o "$work/model.diff" 2>"$work/instrument.err" || fail "instrument exited $?: $(cat "$work/instrument.err")"
err="$(cat "$work/instrument.err")"
# The four module types, whatever their forward's visibility or name.
for t in Attention Mlp Block Model; do
  grep -q "^instrumented .*\b$t\b" <<<"$err" || fail "$t not instrumented: $err"
done
# The wrapper built in a free function (as with_tracing::Linear is): the analysis sees the
# candle-nn layer inside it, and the attention's call of it is timed as its child `o_proj`.
grep -q 'child_scope(&self.cg_path, "o_proj"); let cg_out = self.o.forward(&y); cg_out }' "$work/model.diff" \
  || fail "the wrapper's call is not timed as o_proj: $(grep -n 'self.o.forward' "$work/model.diff")"
grep -q '12 child scopes' <<<"$err" || fail "expected 12 child call sites: $err"

(cd "$model" && cargo build --offline -q 2>"$work/build0.err") || fail "the fixture does not build: $(cat "$work/build0.err")"
(cd "$model" && patch -p1 -s <"$work/model.diff") || fail "patch -p1 refused the diff"
grep -q "candle-graph-profile = { path = \"$root/bindings/rust/candle-graph-profile\", optional = true }" \
  "$model/Cargo.toml" || fail "--profile-dep not written: $(cat "$model/Cargo.toml")"
mkdir -p "$model/examples"
cat >"$model/examples/run.rs" <<'RS'
use perlayer_model::{Config, Model};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "candle-graph-profile")]
    if let Some(trace) = std::env::args().nth(1) {
        candle_graph_profile::install_global(
            trace,
            candle_graph_profile::ProfileConfig::infer("Model::forward"),
        )?;
    }
    let device = candle::Device::Cpu;
    let model = Model::new(&Config::tiny(), candle_nn::VarBuilder::deterministic(&device))?;
    let ids = candle::Tensor::from_vec(vec![1.0, 5.0, 7.0], 3, &device)?;
    let mut sum = 0.0f64;
    for _ in 0..3 {
        let logits = model.forward(&ids)?;
        assert_eq!(logits.dims(), &[3, 32]);
        sum += logits.to_vec1::<f32>()?.iter().map(|v| *v as f64).sum::<f64>();
    }
    println!("logits sum {sum:.6}");
    Ok(())
}
RS
# Without the feature: builds with no warning from the patch, runs as before.
(cd "$model" && cargo build --offline --example run 2>"$work/build1.err") \
  || fail "patched, feature off: $(cat "$work/build1.err")"
grep -q '^warning' "$work/build1.err" && fail "patched, feature off, warns: $(cat "$work/build1.err")"
(cd "$model" && cargo run --offline -q --example run >"$work/off.out" 2>&1) || fail "run, feature off: $(cat "$work/off.out")"
# With it: the real profiler crate, a trace.
(cd "$model" && cargo build --offline --features candle-graph-profile --example run 2>"$work/build2.err") \
  || fail "patched, feature on: $(tail -40 "$work/build2.err")"
grep -A6 '^warning' "$work/build2.err" | grep -q 'perlayer' && fail "patched, feature on, warns: $(cat "$work/build2.err")"
(cd "$model" && cargo run --offline -q --features candle-graph-profile --example run -- "$work/trace.jsonl" \
  >"$work/on.out" 2>&1) || fail "run, feature on: $(cat "$work/on.out")"
cmp -s "$work/off.out" "$work/on.out" || fail "the logits differ: $(cat "$work/off.out") vs $(cat "$work/on.out")"
[ -s "$work/trace.jsonl" ] || fail "no trace written"

# Every module instance has its row: 28 paths, each called 3 times (once per forward).
"$cg" profile "$model" --runtime-trace "$work/trace.jsonl" --format table --limit 0 \
  >"$work/profile.txt" 2>"$work/profile.err" || fail "profile exited $?: $(cat "$work/profile.err")"
expected=("Model (root)" model.embed_tokens model.norm lm_head)
for l in 0 1; do
  p="model.layers.$l"
  expected+=("$p" "$p.input_layernorm" "$p.post_attention_layernorm" "$p.self_attn"
    "$p.self_attn.q_proj" "$p.self_attn.k_proj" "$p.self_attn.v_proj" "$p.self_attn.o_proj"
    "$p.mlp" "$p.mlp.gate_proj" "$p.mlp.up_proj" "$p.mlp.down_proj")
done
rows="$(sed -n '/^Module /,/^$/p' "$work/profile.txt" | tail -n +2)"
[ "$(grep -c . <<<"$rows")" = "${#expected[@]}" ] \
  || fail "expected ${#expected[@]} module rows, got: $(cat "$work/profile.txt")"
for p in "${expected[@]}"; do
  grep -qE "^$(sed 's/[.()]/\\&/g' <<<"$p")  .* 3  " <<<"$rows" \
    || fail "no row for $p called 3 times: $(cat "$work/profile.txt")"
done
# An indexed element of a Vec of library layers (`self.heads[i].forward`): its scope's path is
# built per call, and the generated Rust must build and time each element under its own index.
vx="$work/perlayer/vec_heads"
mkdir -p "$vx/src" "$vx/examples"
cat >"$vx/Cargo.toml" <<'TOML'
[package]
name = "vec-heads"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
candle = { package = "candle-core", path = "../candle-core" }
candle-nn = { path = "../candle-nn" }
TOML
cat >"$vx/src/lib.rs" <<'RS'
use candle::{Module, Result, Tensor};
use candle_nn::{linear, Linear, VarBuilder};

pub struct Heads {
    heads: Vec<Linear>,
}

impl Heads {
    pub fn new(n: usize, vb: VarBuilder) -> Result<Self> {
        let mut heads = Vec::new();
        for i in 0..n {
            heads.push(linear(4, 4, vb.pp("heads").pp(i))?);
        }
        Ok(Self { heads })
    }
    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let mut xs = xs.clone();
        for i in 0..self.heads.len() {
            xs = self.heads[i].forward(&xs)?;
        }
        Ok(xs)
    }
}
RS
cat >"$vx/examples/run.rs" <<'RS'
fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "candle-graph-profile")]
    candle_graph_profile::install_global(
        std::env::args().nth(1).unwrap(),
        candle_graph_profile::ProfileConfig::infer("Heads::forward"),
    )?;
    let device = candle::Device::Cpu;
    let m = vec_heads::Heads::new(3, candle_nn::VarBuilder::deterministic(&device))?;
    let xs = candle::Tensor::from_vec(vec![1f32, 2., 3., 4.], (1, 4), &device)?;
    println!("{:?}", m.forward(&xs)?.dims());
    Ok(())
}
RS
"$cg" instrument "$vx" --profile-dep "path=$root/bindings/rust/candle-graph-profile" -o "$work/vx.diff" \
  2>"$work/vx.err" || fail "vec heads: instrument exited $?: $(cat "$work/vx.err")"
(cd "$vx" && patch -p1 -s <"$work/vx.diff") || fail "vec heads: patch -p1 refused the diff"
(cd "$vx" && cargo run --offline -q --features candle-graph-profile --example run -- "$work/vx.jsonl" \
  >"$work/vx.out" 2>&1) || fail "vec heads: build or run with the feature: $(tail -30 "$work/vx.out")"
for i in 0 1 2; do
  [ "$(grep -c "\"path\":\"heads.$i\"" "$work/vx.jsonl")" = 1 ] \
    || fail "vec heads: heads.$i is not timed once: $(grep -o '"path":"[^"]*"' "$work/vx.jsonl" | sort | uniq -c)"
done

# A real Candle checkout (CG_CANDLE_SRC, never committed): llama's private forwards are scoped and
# its layers timed as children. Not compiled here: candle's own dependencies need the network.
if [ -n "${CG_CANDLE_SRC:-}" ] && [ -d "$CG_CANDLE_SRC/candle-transformers" ]; then
  "$cg" instrument "$CG_CANDLE_SRC/candle-transformers" --root models::llama::Llama \
    --profile-dep "path=$root/bindings/rust/candle-graph-profile" -o "$work/llama.diff" 2>"$work/llama.err" \
    || fail "llama: instrument exited $?: $(cat "$work/llama.err")"
  for t in Block CausalSelfAttention Mlp Llama; do
    grep -q "^instrumented .*models::llama::$t\b" "$work/llama.err" || fail "llama: $t not instrumented: $(cat "$work/llama.err")"
  done
  for seg in q_proj k_proj v_proj o_proj gate_proj up_proj down_proj model.embed_tokens lm_head; do
    grep -q "child_scope(&self.cg_path, \"$seg\")" "$work/llama.diff" || fail "llama: no child scope $seg"
  done
  echo "llama (CG_CANDLE_SRC): instrumented and its layers timed as children"
fi
echo "ok"
