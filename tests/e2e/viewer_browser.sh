#!/usr/bin/env bash
# Browser test of the HTML viewer in headless Debian chromium (viewer/tests/browser.mjs) over
# synthetic reports and the demo crate's own report written by `candle-graph view`: expand,
# search, finding focus, view switches, XSS inertness, no network request, no table cell cut at
# 1280 px (also on an 8B-sized config of the demo crate). Screenshots are kept
# in <build dir>/viewer-screenshots as test artifacts.
# Usage: viewer_browser.sh <candle-graph binary> <repo root>
set -euo pipefail
root="${2:?usage: viewer_browser.sh <candle-graph binary> <repo root>}"
chromium="${CG_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "SKIPPED: $chromium not found (scripts/setup.sh installs the Debian chromium package)"
  exit 0
fi
if [ ! -d "$root/node_modules/playwright-core" ] || [ ! -d "$root/node_modules/@dagrejs/dagre" ]; then
  echo "FAILED: npm packages playwright-core and @dagrejs/dagre are missing; run scripts/setup.sh (npm ci)" >&2
  exit 1
fi
out="$PWD/viewer-screenshots"
mkdir -p "$out"
# The demo's report as the CLI writes it, verified against a checkpoint with one missing, one
# misshaped and one extra tensor; browser.mjs opens it next to the synthetic fixtures.
crate="$root/examples/tiny-llama"
"${1:?}" check "$crate" --config "$crate/config.json" -o "$out/demo-ir.json" 2>/dev/null
node "$root/tests/e2e/make_checkpoint.mjs" "$out/demo-ir.json" "$out/demo.safetensors"
"$1" view "$crate" --config "$crate/config.json" --checkpoint "$out/demo.safetensors" \
  -o "$out/demo-tiny-llama.html"
export CG_DEMO_HTML="$out/demo-tiny-llama.html"
# Large figures (issue 18): the same crate under an 8B-sized config (vocab 128256, hidden 4096,
# 32 layers), whose counts run to billions; no table cell may be cut at 1280 px.
printf '%s\n' '{"vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,' \
  '"num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,' \
  '"tie_word_embeddings": false}' > "$out/big-config.json"
"$1" view "$crate" --config "$out/big-config.json" -o "$out/big-tiny-llama.html"
export CG_BIG_HTML="$out/big-tiny-llama.html"
# Module scope timings (issue 16): the demo with a runtime/4 trace of module scopes; the
# Architecture tree shows a Time column with a heat bar, nothing cut at 1280 px.
"$1" view "$crate" --config "$crate/config.json" \
  --runtime-trace "$root/tests/runtime/fixtures/tiny_llama_modules.jsonl" -o "$out/timed-tiny-llama.html"
export CG_TIMED_HTML="$out/timed-tiny-llama.html"
# Issue 35: module scopes and operation timings of the same instances (as make demo's trace has):
# q_proj of layers 0 and 1 timed by scope and by its matmul; every view shows the scope's time.
"$1" view "$crate" --config "$crate/config.json" \
  --runtime-trace "$root/tests/runtime/fixtures/tiny_llama_scoped_ops.jsonl" -o "$out/scoped-tiny-llama.html"
export CG_SCOPED_HTML="$out/scoped-tiny-llama.html"
# make demo's report itself, where the build has the profile-demo program beside candle-graph: its
# stand-in run times operations and module scopes (scripts/demo.sh, without the instrument step).
demo_run="$(dirname "$1")/examples/profile-demo/profile-demo"
if [ -x "$demo_run" ]; then
  mkdir -p "$out/demo-run"
  "$1" check "$crate" --config "$crate/config.json" -o "$out/demo-run/ir.json" 2>/dev/null
  "$demo_run" "$out/demo-run/ir.json" "$crate/config.json" "$out/demo-run/profile-demo.jsonl" >/dev/null
  "$1" audit "$out/demo-run" "$crate" --config "$crate/config.json" \
    --runtime-trace "$out/demo-run/profile-demo.jsonl" >/dev/null 2>&1 || true
  [ -f "$out/demo-run/model.html" ] && export CG_DEMO_RUN_HTML="$out/demo-run/model.html"
  # Issue 39: numeric health. The stand-in run with statistics on every step and a NaN injected
  # into model.layers.2.mlp's output at step 1: the Health column names it the first non-finite.
  "$demo_run" "$out/demo-run/ir.json" "$crate/config.json" "$out/demo-run/health.jsonl" 3 \
    --stats-every 1 --inject-nan model.layers.2.mlp@1 >/dev/null
  "$1" view "$crate" --config "$crate/config.json" --runtime-trace "$out/demo-run/health.jsonl" \
    -o "$out/health-tiny-llama.html"
  export CG_HEALTH_HTML="$out/health-tiny-llama.html"
fi
# A real-shaped unrolled model of our own (issue 18): tests/fixtures/crates/gpt_24, a GPT-2-medium
# shaped decoder whose 24 blocks come from its config's serde default; `query module` of one block
# is what the inspector must show for that instance.
gpt="$root/tests/fixtures/crates/gpt_24"
"$1" view "$gpt" --config "$gpt/config.json" -o "$out/gpt-24.html"
"$1" query module transformer.h.17 --path "$gpt" --config "$gpt/config.json" > "$out/gpt-24-h17.json"
export CG_GPT24_HTML="$out/gpt-24.html" CG_GPT24_QUERY="$out/gpt-24-h17.json"
# Issue 37: the model each report is about, and how many findings (not dependency-source notes)
# its Findings badge counts. With CG_CANDLE_SRC, also candle-transformers' llama.
findings() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.log(j.items.filter((f) => !(f.name === "dependency-source" && /^information:/.test(f.detail))).length)'; }
export CG_DEMO_ROOT="model::TinyLlama"
CG_DEMO_FINDINGS="$("$1" query findings --path "$crate" --config "$crate/config.json" \
  --checkpoint "$out/demo.safetensors" --limit 100000 | findings)"
export CG_DEMO_FINDINGS
if [ -n "${CG_CANDLE_SRC:-}" ]; then
  ct="$CG_CANDLE_SRC/candle-transformers"
  "$1" view "$ct" --root models::llama::Llama -o "$out/llama.html"
  export CG_LLAMA_HTML="$out/llama.html" CG_LLAMA_ROOT="models::llama::Llama"
  CG_LLAMA_FINDINGS="$("$1" query findings --path "$ct" --root models::llama::Llama --limit 100000 | findings)"
  export CG_LLAMA_FINDINGS
fi
exec node "$root/viewer/tests/browser.mjs" "$out"
