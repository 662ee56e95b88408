#!/usr/bin/env bash
# Golden outputs of the analysis, for refactors that must not change behaviour.
#
#   tools/golden.sh BIN OUT_DIR [--corpus]
#
# Writes, for every fixture crate under tests/fixtures and examples/tiny-llama: the IR (`check -o`),
# SARIF, the summary table, the viewer payload, and every query kind's answer (list kinds in full,
# singular kinds for the first id of their list). With --corpus, also candle-transformers as a whole
# and per component with each weight map's config (needs $CG_CANDLE_SRC, a candle checkout, and
# ../shared/data/weight-maps). Compare two runs with `diff -r`.
set -uo pipefail
# Dependency sources are looked up under CARGO_HOME (doctor lists them): a fixed, empty one here.
export CARGO_HOME="${TMPDIR:-/tmp}/cg-golden-no-cargo-home"
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
out="$2"
corpus="${3:-}"
mkdir -p "$out"
cd "$here"

# one crate: NAME DIR [analysis flags...]
golden_crate() {
  local name="$1" dir="$2"
  shift 2
  local d="$out/$name"
  mkdir -p "$d"
  "$bin" check "$dir" "$@" -o "$d/ir.json" 2>"$d/check.stderr"
  echo "exit $?" >>"$d/check.stderr"
  "$bin" report "$dir" "$@" --message-format sarif >"$d/sarif.json" 2>/dev/null
  "$bin" summary "$dir" "$@" >"$d/summary.txt" 2>&1
  echo "exit $?" >>"$d/summary.txt"
  "$bin" view "$dir" "$@" -o "$d/view.html" 2>/dev/null
  # the payload only: the page's script and style do not come from the analysis
  if [ -f "$d/view.html" ]; then
    grep -o '<script type="application/json"[^>]*>[^<]*' "$d/view.html" >"$d/payload.txt"
    # parts the page carries gzip'd (big payloads): decoded, so they are compared too
    local gz
    for gz in cg-payload-gz cg-payload-tree-gz; do
      grep -o "id=\"$gz\">[^<]*" "$d/view.html" | sed 's/.*>//' | base64 -d 2>/dev/null |
        gunzip 2>/dev/null >>"$d/payload.txt"
    done
    rm -f "$d/view.html"
  fi
  local kind
  for kind in summary doctor cargo components modules composition parameters functions entrypoints \
    tensors operations graph-train graph-infer findings summary-table; do
    "$bin" query "$kind" --path "$dir" "$@" --limit 100000 >"$d/q-$kind.json" 2>&1
  done
  local list one
  for pair in components:component modules:module parameters:parameter functions:function \
    tensors:tensor operations:operation findings:finding; do
    list="${pair%%:*}"
    one="${pair##*:}"
    local id
    id="$(jq -r '.items[0].id // empty' "$d/q-$list.json" 2>/dev/null)"
    [ -n "$id" ] || continue
    "$bin" query "$one" "$id" --path "$dir" "$@" >"$d/q-$one.json" 2>&1
  done
}

for cargo in $(find tests/fixtures -name Cargo.toml | sort); do
  dir="$(dirname "$cargo")"
  golden_crate "$(echo "${dir#tests/fixtures/}" | tr '/' '_')" "$dir"
done
golden_crate tiny-llama examples/tiny-llama --config examples/tiny-llama/config.json
golden_crate tiny-llama-noconfig examples/tiny-llama

if [ "$corpus" = "--corpus" ]; then
  ct="${CG_CANDLE_SRC:?set CG_CANDLE_SRC to a candle checkout}/candle-transformers"
  maps="$here/../shared/data/weight-maps"
  golden_crate ct "$ct"
  # A fixed directory: the config's path appears in findings, so it must not vary between runs.
  tmp="${TMPDIR:-/tmp}/cg-golden-configs"
  mkdir -p "$tmp"
  jq '.config' "$maps/qwen2__cogito-v1-preview-qwen-14B.json" >"$tmp/qwen2.json"
  jq '.config' "$maps/mixtral__dolphin-2.5-mixtral-8x7b.json" >"$tmp/mixtral.json"
  jq '.config' "$maps/gemma3__medgemma-27b-it-multimodal.json" >"$tmp/gemma3.json"
  golden_crate ct-qwen2 "$ct" --root models::qwen2::ModelForCausalLM --config "$tmp/qwen2.json"
  golden_crate ct-mixtral "$ct" --root models::mixtral::Model --config "$tmp/mixtral.json"
  golden_crate ct-gemma3 "$ct" --root models::gemma3::Model --config "$tmp/gemma3.json" \
    --prefix language_model
  golden_crate ct-llama "$ct" --root models::llama::Llama
  rm -rf "$tmp"
fi
