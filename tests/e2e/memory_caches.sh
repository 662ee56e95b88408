#!/usr/bin/env bash
# `candle-graph memory` on candle-nn's KvCache and RotatingKvCache with their constructor's
# arguments read (tests/fixtures/crates/kv_caches; docs/memory.md, "candle-nn caches"): every
# figure against hand arithmetic.
# Usage: memory_caches.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/tests/fixtures/crates/kv_caches"
fail() { echo "FAIL: $*"; exit 1; }
mem() { "$cg" memory "$crate" --config "$crate/config.json" --format json "$@" 2>/dev/null; }
field() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const v = process.argv[1].split(".").reduce((o, k) => o == null ? o : o[k], j);
  console.log(v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v))' "$1"; }

# Both models: vocab 1,000, hidden 64, 2 layers of q/k/v/o 64x64 (4 heads of 16), untied lm_head:
# 64,000 + 2 x 4 x 4,096 + 64,000 = 160,768 parameters, 643,072 bytes at F32.
# Per layer the cache holds k and v [batch, 4, positions, 16] F32: 2 x 4 x 16 x 4 = 512 bytes a
# position at batch 1; 2 layers: 1,024 bytes a position.
#
# Model: KvCache::new(2, cfg.max_position_embeddings = 256) allocates 256 positions at the first
# append and grows by 256: context 256 -> 256 positions, 300 -> 512, 513 -> 768.
for c in "256 262144" "300 524288" "513 786432"; do
  set -- $c
  j="$(mem --root Model --context "$1")" || fail "Model at $1: memory exited $?"
  [ "$(field weights_bytes.bytes <<<"$j")" = 643072 ] || fail "weights: $(field weights_bytes <<<"$j")"
  [ "$(field kv_cache_bytes.bytes <<<"$j") $(field kv_cache_bytes.bound <<<"$j")" = "$2 exact" ] \
    || fail "KvCache at context $1: $(field kv_cache_bytes <<<"$j"), by hand $2 exact"
done
j="$(mem --root Model --context 300 --batch 2)" || fail "Model batch 2: exited $?"
[ "$(field kv_cache_bytes.bytes <<<"$j")" = 1048576 ] || fail "KvCache batch 2: $(field kv_cache_bytes <<<"$j")"
[ "$(field layers.0.shapes.0 <<<"$j")" = "[2, 4, 512, 16]" ] || fail "KvCache shape: $(field layers <<<"$j")"
# The cache is not proportional to the context: no largest context from a per-position rate; the
# largest batch is (linear in the batch). Room on 2 MiB: 2,097,152 - 643,072 = 1,454,080 bytes;
# 524,288 per sequence at 300 -> 2 sequences.
j="$(mem --root Model --context 300 --device-memory 2MiB)" || fail "Model fit: exited $?"
[ "$(field fit.max_context <<<"$j")" = null ] || fail "stepped cache: no linear largest context: $(field fit <<<"$j")"
[ "$(field fit.max_batch <<<"$j")" = 2 ] || fail "largest batch: $(field fit <<<"$j")"

# SlidingModel: RotatingKvCache::new(2, cfg.sliding_window = 100) allocates its 100-position
# window at the first append, at any context: 2 layers x 100 x 512 = 102,400 bytes.
for c in 50 300 4096; do
  j="$(mem --root SlidingModel --context "$c")" || fail "SlidingModel at $c: exited $?"
  [ "$(field kv_cache_bytes.bytes <<<"$j") $(field kv_cache_bytes.bound <<<"$j")" = "102400 exact" ] \
    || fail "RotatingKvCache at context $c: $(field kv_cache_bytes <<<"$j"), by hand 102400 exact"
done
[ "$(field layers.0.shapes.0 <<<"$j")" = "[1, 4, 100, 16]" ] || fail "window shape: $(field layers <<<"$j")"
# MixedModel: a crate enum holds a RotatingKvCache on even layers, a KvCache on odd ones (as
# gemma3 does). By hand at 300: 102,400 / 2 + 524,288 / 2 = 313,344 bytes, but the analysis does
# not follow which variant each layer holds: the KV cache is unknown, never 0 or a number.
j="$(mem --root MixedModel --context 300)" || fail "MixedModel: exited $?"
[ "$(field kv_cache_bytes.bytes <<<"$j") $(field kv_cache_bytes.bound <<<"$j")" = "null unknown" ] \
  || fail "enum-held caches must be unknown: $(field kv_cache_bytes <<<"$j")"
grep -q "KvCache|RotatingKvCache" <<<"$(field kv_cache_bytes.note <<<"$j")" \
  || fail "the note must name the caches the enum holds: $(field kv_cache_bytes <<<"$j")"
echo "ok: candle-nn KvCache (steps of max_seq_len) and RotatingKvCache (its window) equal the hand arithmetic"
