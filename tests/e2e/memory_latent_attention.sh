#!/usr/bin/env bash
# A latent-attention block in DeepSeek-V2's style (tests/fixtures/crates/tensor_trait_split):
# its shapes go through a trait the crate adds to Tensor (`split`, pieces pushed into a Vec and
# indexed), a `repeat` by another tensor's dimension, fields of a config stored whole, and a KV
# cache of the decompressed k and v. `memory` and `summary` against hand arithmetic.
# Usage: memory_latent_attention.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/tests/fixtures/crates/tensor_trait_split"
fail() { echo "FAIL: $*"; exit 1; }
field() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const v = process.argv[1].split(".").reduce((o, k) => o == null ? o : o[k], j);
  console.log(v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v))' "$1"; }

# config.json: hidden 64, 4 heads, latent 16, rope 8, nope 12, v 10.
# kv_a [64 -> 16 + 8] = 1,536 and kv_b [16 -> 4 x (12 + 10)] = 1,408 weights: 2,944 x 4 B = 11,776.
# The cache keeps k = cat(k_nope [b, 4, t, 12], k_pe repeated to [b, 4, t, 8]) = [b, 4, t, 20]
# and v [b, 4, t, 10]: 4 x 30 values a position, x 4 B = 480 B; at context 100: 48,000 bytes.
j="$("$cg" memory "$crate" --root Attention --config "$crate/config.json" --context 100 \
  --format json 2>/dev/null)" || fail "memory exited $?"
[ "$(field weights_bytes.bytes <<<"$j") $(field weights_bytes.bound <<<"$j")" = "11776 exact" ] \
  || fail "weights: $(field weights_bytes <<<"$j"), by hand 11776 exact"
[ "$(field kv_cache_bytes.bytes <<<"$j") $(field kv_cache_bytes.bound <<<"$j")" = "48000 exact" ] \
  || fail "KV cache: $(field kv_cache_bytes <<<"$j"), by hand 48000 exact"
[ "$(field layers.0.shapes <<<"$j")" = '["[1, 4, 100, 20]","[1, 4, 100, 10]"]' ] \
  || fail "cached k and v shapes: $(field layers <<<"$j")"
# Twice the context, twice the cache (it concatenates: every position is kept).
j="$("$cg" memory "$crate" --root Attention --config "$crate/config.json" --context 200 \
  --format json 2>/dev/null)" || fail "memory exited $?"
[ "$(field kv_cache_bytes.bytes <<<"$j")" = 96000 ] || fail "KV cache at 200: $(field kv_cache_bytes <<<"$j")"

# summary: kv_b's input is the split's first piece [b, t, 16]: its output is [b, t, 88], and its
# Mult-Adds b*t*1,408; kv_a's b*t*1,536.
s="$("$cg" summary "$crate" --root Attention --config "$crate/config.json" 2>/dev/null)" \
  || fail "summary exited $?"
grep -Eq '└─kv_b \(Linear\) +\[b, t, 88\] +1,408 +b\*t\*1,408' <<<"$s" || fail "kv_b row: $s"
grep -Eq '└─kv_a \(Linear\) +\[b, t, 24\] +1,536 +b\*t\*1,536' <<<"$s" || fail "kv_a row: $s"
# Heads, bert's `transpose_for_scores`: `p.dims().to_vec()`, `pop`, two `push`es, then
# `reshape(shape.as_slice())`. At [2, 10, 64]: proj 2 x 10 x 64 x 32 = 40,960, then [2, 4, 10, 8]
# times its transpose 2 x 4 x 10 x 10 x 8 = 6,400: 47,360, output [2, 4, 10, 10].
s="$("$cg" summary "$crate" --root Heads --config "$crate/config.json" --input-shape xs=2x10x64   2>/dev/null)" || fail "summary Heads exited $?"
grep -Eq '^Heads \(Heads\) +\[2, 4, 10, 10\] +2,048 +47,360$' <<<"$s" || fail "Heads row: $s"
grep -q '^Mult-adds per forward pass: 47,360$' <<<"$s" || fail "Heads total: $s"
echo "ok: latent attention: weights 11,776 B, KV cache 48,000 B at 100 positions, split pieces sized"
