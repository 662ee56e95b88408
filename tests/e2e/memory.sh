#!/usr/bin/env bash
# `candle-graph memory` on the bundled example (issue #38): every figure against hand arithmetic
# (docs/memory.md, "The bundled example"), the fit answers, JSON fields, and bad flags refused.
# Usage: memory.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/examples/tiny-llama"
fail() { echo "FAIL: $*"; exit 1; }
mem() { "$cg" memory "$crate" --config "$crate/config.json" --format json "$@" 2>/dev/null; }
field() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const v = process.argv[1].split(".").reduce((o, k) => o == null ? o : o[k], j);
  console.log(v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v))' "$1"; }

# tiny-llama: vocab 4096, hidden 256, 4 layers, 8 heads of 32, 4 kv heads, tied embeddings.
# Parameters 1,048,576 + 4 x 725,504 + 256 = 3,950,848; at F32 15,803,392 bytes.
# KV cache: k and v, [batch, 4 kv heads, context, 32] F32 per layer: 2 x 4 x B x 4 x N x 32 x 4.
j="$(mem --context 2048 --batch 2)" || fail "memory exited $?"
[ "$(field weights_bytes.bytes <<<"$j")" = 15803392 ] || fail "weights: $(field weights_bytes <<<"$j")"
[ "$(field weights_bytes.bound <<<"$j")" = exact ] || fail "weights bound: $j"
[ "$(field kv_cache_bytes.bytes <<<"$j")" = 16777216 ] || fail "KV cache at 2048 x 2: $(field kv_cache_bytes <<<"$j")"
[ "$(field kv_cache_bytes.bound <<<"$j")" = exact ] || fail "KV bound: $j"
[ "$(field state_bytes.bytes <<<"$j")" = 0 ] || fail "other state: $(field state_bytes <<<"$j")"
[ "$(field layers.0.instances <<<"$j")" = 4 ] || fail "one store per layer, 4 layers: $(field layers <<<"$j")"
[ "$(field layers.0.shapes.0 <<<"$j")" = "[2, 4, 2048, 32]" ] || fail "stored shape: $(field layers <<<"$j")"
# Activations (docs/memory.md, "Activations: hand liveness"): at context 2,048 the peak is in the
# attention, at `* scale`: the root's layer input and the block's normed input (2H, H = [2, 2048,
# 256] = 4,194,304 bytes), the repeated v (H) and two [2, 8, 2048, 2048] scores (S = 268,435,456
# each): 3H + 2S = 549,453,824. The causal mask (16 MiB, a `from_slice` of a Vec) is of a size
# the tool does not know: "at least", and the totals at least weights + state + that.
act=$((3 * 4194304 + 2 * 268435456))
[ "$(field activations_peak_bytes.bytes <<<"$j")" = "$act" ] || fail "activations peak: $(field activations_peak_bytes <<<"$j")"
[ "$(field activations_peak_bytes.bound <<<"$j")" = lower_bound ] || fail "activations bound: $(field activations_peak_bytes <<<"$j")"
field activations_peak_at <<<"$j" | grep -q '^model.layers.{i}.self_attn mul (src/model.rs:93)$' \
  || fail "peak place: $(field activations_peak_at <<<"$j")"
[ "$(field inference_total_bytes.bound <<<"$j")" = lower_bound ] || fail "inference bound: $(field inference_total_bytes <<<"$j")"
# Buffers: the rotary cos and sin tables the constructor computes once ([max_position_embeddings =
# 1024, head_dim / 2 = 16] at F32: 2 x 65,536 bytes), shared by the layers' clones.
[ "$(field buffers_bytes.bytes <<<"$j") $(field buffers_bytes.bound <<<"$j")" = "131072 exact" ] \
  || fail "buffers: $(field buffers_bytes <<<"$j")"
[ "$(field inference_total_bytes.bytes <<<"$j")" = $((15803392 + 16777216 + 131072 + act)) ] || fail "inference: $j"
# Training: 4 x weights, and at least the peak's tracked tensors kept for backward.
tb="$(field training_total_bytes.bytes <<<"$j")"
[ "$tb" -ge $((4 * 15803392 + act)) ] || fail "training: $(field training_total_bytes <<<"$j")"
[ "$(field training_total_bytes.bound <<<"$j")" = lower_bound ] || fail "training bound: $j"
# BF16 halves both; the default context is config.json's max_position_embeddings (1024).
j="$(mem --dtype BF16)" || fail "memory --dtype BF16 exited $?"
[ "$(field context <<<"$j")" = 1024 ] && [ "$(field context_source <<<"$j")" = max_position_embeddings ] \
  || fail "default context: $(field context <<<"$j") from $(field context_source <<<"$j")"
[ "$(field weights_bytes.bytes <<<"$j")" = 7901696 ] || fail "BF16 weights: $j"
[ "$(field kv_cache_bytes.bytes <<<"$j")" = $((2 * 4 * 1 * 4 * 1024 * 32 * 2)) ] || fail "BF16 KV at 1024: $j"
# --master-fp32 at BF16 adds 4 bytes a parameter (3,950,848 x 4 = 15,803,392) to training.
jm="$(mem --dtype BF16 --context 128 --master-fp32)" || fail "memory --master-fp32 exited $?"
jp="$(mem --dtype BF16 --context 128)" || fail "memory BF16 exited $?"
[ "$(field training_total_bytes.bytes <<<"$jm")" = $(( $(field training_total_bytes.bytes <<<"$jp") + 15803392 )) ] \
  || fail "master copy: $(field training_total_bytes <<<"$jm") vs $(field training_total_bytes <<<"$jp")"
# Fit on 64 MiB at batch 2: room 67,108,864 - 15,803,392 (weights) - 131,072 (the rotary
# tables) = 51,174,400 bytes; 8,192 bytes per position (all layers, k and v, batch 2) -> 6,246
# positions; 8,388,608 per sequence at 2048 -> 6.
j="$(mem --context 2048 --batch 2 --device-memory 64MiB)" || fail "memory --device-memory exited $?"
[ "$(field fit.max_context <<<"$j")" = 6246 ] || fail "largest context: $(field fit <<<"$j")"
[ "$(field fit.max_batch <<<"$j")" = 6 ] || fail "largest batch: $(field fit <<<"$j")"
# Weights, cache and at least 524 MiB of activations exceed 64 MiB: it does not fit.
[ "$(field fit.fits <<<"$j")" = no ] || fail "the activations alone exceed 64 MiB: $(field fit <<<"$j")"
j="$(mem --context 2048 --device-memory 10MiB)" || fail "memory 10MiB exited $?"
[ "$(field fit.fits <<<"$j")" = no ] || fail "15 MiB of weights on 10 MiB: $(field fit <<<"$j")"
# The text report labels binary units and says what is not known.
t="$("$cg" memory "$crate" --config "$crate/config.json" --context 2048 --batch 2 2>/dev/null)"
grep -q '^  KV cache              16.00 MiB (16,777,216 bytes)' <<<"$t" || fail "text KV line: $t"
grep -q 'Sizes in binary units' <<<"$t" || fail "units not labelled: $t"
grep -q '^  Activations (peak)    at least 524.00 MiB (549,453,824 bytes)  at model.layers.{i}.self_attn mul' <<<"$t" \
  || fail "text activations line (a lower bound, and where): $t"

# Bad flags: input errors (exit 2) naming the flag, before any analysis.
for bad in "--context -5" "--context 0" "--context lots" "--batch 1.5" "--device-memory lots" \
  "--device-memory -3GiB" "--device-memory 24XB" "--dtype F12"; do
  # shellcheck disable=SC2086
  err="$("$cg" memory "$crate" --config "$crate/config.json" $bad 2>&1 >/dev/null)"; rc=$?
  [ "$rc" = 2 ] || fail "$bad: exit $rc, expected 2: $err"
  flag="${bad%% *}"
  grep -q -- "$flag" <<<"$err" || fail "$bad: the error does not name $flag: $err"
done
# The same figures from the MCP tool an agent calls, and a bad size as a tool error.
out="$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query_memory","arguments":{"context":2048,"batch":2,"device_memory":"64MiB","config":"'"$crate"'/config.json"}}}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"query_memory","arguments":{"device_memory":"lots"}}}' \
  | "$cg" mcp --path "$crate" 2>/dev/null)"
node -e 'const lines = require("fs").readFileSync(0, "utf8").trim().split("\n").map(JSON.parse);
  const ok = lines.find((l) => l.id === 2), bad = lines.find((l) => l.id === 3);
  const item = JSON.parse(ok.result.content[0].text).items[0];
  if (ok.result.isError || item.kv_cache_bytes.bytes !== 16777216 || item.fit.max_context !== 6246)
    { console.error("query_memory: " + ok.result.content[0].text.slice(0, 400)); process.exit(1); }
  if (!bad.result.isError || !/device-memory|not a size/.test(bad.result.content[0].text))
    { console.error("a bad device_memory is not a tool error: " + JSON.stringify(bad)); process.exit(1); }' <<<"$out" \
  || fail "MCP query_memory"
echo "ok: memory on tiny-llama equals the hand arithmetic; bad flags refused"
