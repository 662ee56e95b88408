#!/usr/bin/env bash
# `candle-graph memory` on state a loop over the positions carries (tests/fixtures/crates/
# loop_state; docs/memory.md, "rwkv"): a `for t_ in 0..t` over a dimension of the root's input
# runs at least once in the forward the figures describe (one call on a non-empty input), so a
# local its body assigns on every iteration is, after the loop, the body's value. Every figure
# against hand arithmetic.
# Usage: memory_loops.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/tests/fixtures/crates/loop_state"
fail() { echo "FAIL: $*"; exit 1; }
mem() { "$cg" memory "$crate" --root Model --config "$crate/config.json" --format json "$@" 2>/dev/null; }
field() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const v = process.argv[1].split(".").reduce((o, k) => o == null ? o : o[k], j);
  console.log(v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v))' "$1"; }
shapes() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.log(j.layers.map(l => l.place.replace(/.*\./, "") + " " + l.shapes.join(",")).sort().join("; "))'; }

# Config: vocab 100, hidden 32, 2 layers, heads of 8 (decay [4, 8]: h = 4, d = 8).
# Weights: embeddings 100 x 32 = 3,200; per layer key, value, wx, wh 4 x 32 x 32 = 4,096 and decay
# 32; head 32 x 100 = 3,200: 3,200 + 2 x 4,128 + 3,200 = 14,656 parameters, 58,624 bytes at F32.
# State per layer at batch b, F32: wkv [b, 4, 8, 8] (the loop's `s = at + decay * s`, at =
# k_t^T v_t) 1,024 bytes and h [b, 32] (the RNN's last `Some(next)`) 128 bytes; 2 layers:
# 2,304 bytes at batch 1, at any context.
for c in 1 16 1024; do
  j="$(mem --context "$c")" || fail "context $c: memory exited $?"
  [ "$(field weights_bytes.bytes <<<"$j") $(field weights_bytes.bound <<<"$j")" = "58624 exact" ] \
    || fail "weights: $(field weights_bytes <<<"$j"), by hand 58624 exact"
  [ "$(field state_bytes.bytes <<<"$j") $(field state_bytes.bound <<<"$j")" = "2304 exact" ] \
    || fail "state at context $c: $(field state_bytes <<<"$j") [$(shapes <<<"$j")], by hand 2304 exact"
  [ "$(field kv_cache_bytes.bytes <<<"$j")" = 0 ] || fail "no KV cache: $(field kv_cache_bytes <<<"$j")"
done
[ "$(shapes <<<"$j")" = "h [1, 32]; wkv [1, 4, 8, 8]" ] || fail "state shapes: $(shapes <<<"$j")"
j="$(mem --context 16 --batch 3)" || fail "batch 3: memory exited $?"
[ "$(field state_bytes.bytes <<<"$j") $(field state_bytes.bound <<<"$j")" = "6912 exact" ] \
  || fail "state at batch 3: $(field state_bytes <<<"$j"), by hand 6912 exact"
[ "$(shapes <<<"$j")" = "h [3, 32]; wkv [3, 4, 8, 8]" ] || fail "state shapes at batch 3: $(shapes <<<"$j")"
echo "ok: loop-carried state (rwkv's linear attention, an RNN's last hidden state) equals the hand arithmetic"
