#!/usr/bin/env bash
# `candle-graph memory`'s buffers: the tensors a constructor computes and keeps in its fields
# (rotary cos/sin tables, a causal mask, position ids), against hand arithmetic
# (tests/fixtures/crates/buffers; docs/memory.md, "Buffers").
# Usage: memory_buffers.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/tests/fixtures/crates/buffers"
fail() { echo "FAIL: $*"; exit 1; }
mem() { "$cg" memory "$crate" --config "$crate/config.json" --context 128 --format json "$@" 2>/dev/null; }
field() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const v = process.argv[1].split(".").reduce((o, k) => o == null ? o : o[k], j);
  console.log(v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v))' "$1"; }

# Config: hidden 64, 4 heads of 16 (8 rotary frequencies), 2 layers, max_position_embeddings 256.
# Model: one RotaryEmbedding (sin and cos [256, 8] at vb.dtype()) in an Arc shared by both layers:
# once, 2 x 2,048 x 4 B = 16,384 at F32; the root's causal mask tril2(256, F32) [256, 256] =
# 262,144; its position ids arange(0u32, 256) [256] U32 = 1,024. Total 279,552, exact.
j="$(mem --root Model)" || fail "Model: memory exited $?"
[ "$(field buffers_bytes.bytes <<<"$j") $(field buffers_bytes.bound <<<"$j")" = "279552 exact" ] \
  || fail "Model buffers: $(field buffers_bytes <<<"$j"), by hand 279552 exact"
[ "$(field buffers.length <<<"$j")" = 4 ] || fail "Model: 4 buffers expected: $(field buffers <<<"$j")"
node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const b = Object.fromEntries(j.buffers.map(x => [x.owner.split("::").pop(), x]));
  const want = {"RotaryEmbedding.sin": ["[256, 8]", "F32", 1, 8192], "RotaryEmbedding.cos": ["[256, 8]", "F32", 1, 8192],
    "Model.mask": ["[256, 256]", "F32", 1, 262144], "Model.position_ids": ["[256]", "U32", 1, 1024]};
  for (const [k, [shape, dtype, n, bytes]] of Object.entries(want)) {
    const x = b[k];
    if (!x || x.shape !== shape || x.dtype !== dtype || x.instances !== n || x.bytes.bytes !== bytes)
      { console.error(k, JSON.stringify(x)); process.exit(1); }
  }' <<<"$j" || fail "Model: a buffer differs from the hand arithmetic: $(field buffers <<<"$j")"
# The inference total holds them: weights + KV cache + state + buffers + activations.
node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const s = j.weights_bytes.bytes + j.kv_cache_bytes.bytes + j.state_bytes.bytes + j.buffers_bytes.bytes
    + j.activations_peak_bytes.bytes;
  process.exit(j.inference_total_bytes.bytes === s ? 0 : 1)' <<<"$j" \
  || fail "inference total without the buffers: $(field inference_total_bytes <<<"$j")"
"$cg" memory "$crate" --root Model --config "$crate/config.json" --context 128 | grep -q "Buffers (constructor) 273.00 KiB (279,552 bytes)" \
  || fail "text: no 'Buffers (constructor)' line of 279,552 bytes"
# At --dtype BF16 the rotary table follows vb.dtype() (2 x 2,048 x 2 B = 8,192); the mask stays
# F32 and the ids U32: 271,360.
j="$(mem --root Model --dtype BF16)" || fail "Model BF16: exited $?"
[ "$(field buffers_bytes.bytes <<<"$j")" = 271360 ] || fail "Model buffers at BF16: $(field buffers_bytes <<<"$j"), by hand 271360"

# PerLayerModel: each layer's attention builds its own table: 2 x 16,384 = 32,768.
j="$(mem --root PerLayerModel)" || fail "PerLayerModel: exited $?"
[ "$(field buffers_bytes.bytes <<<"$j") $(field buffers_bytes.bound <<<"$j")" = "32768 exact" ] \
  || fail "PerLayerModel buffers: $(field buffers_bytes <<<"$j"), by hand 32768 exact"
[ "$(field buffers.0.instances <<<"$j") $(field buffers.0.instance <<<"$j")" = "2 layers.{i}" ] \
  || fail "PerLayerModel: one table per layer instance: $(field buffers.0 <<<"$j")"

# CacheModel: the forward takes `cache: &mut Cache`, which its caller builds with Cache::new
# (as llama.rs): cos and sin [256, 8] at the dtype the caller passes (the model's, F32): 16,384.
j="$(mem --root CacheModel)" || fail "CacheModel: exited $?"
[ "$(field buffers_bytes.bytes <<<"$j") $(field buffers_bytes.bound <<<"$j")" = "16384 exact" ] \
  || fail "CacheModel buffers: $(field buffers_bytes <<<"$j"), by hand 16384 exact"
grep -q "forward argument" <<<"$(field buffers.0.reached <<<"$j")" || fail "CacheModel: how it is reached: $(field buffers.0 <<<"$j")"

# FilteredModel: a table whose length a `filter` decides is not followed: the figure is at least
# the mask (tril2(256, U8) = 65,536 bytes), a lower bound naming the table — never a number that
# looks final.
j="$(mem --root FilteredModel)" || fail "FilteredModel: exited $?"
[ "$(field buffers_bytes.bytes <<<"$j") $(field buffers_bytes.bound <<<"$j")" = "65536 lower_bound" ] \
  || fail "FilteredModel buffers: $(field buffers_bytes <<<"$j"), by hand at least 65536"
grep -q "FilteredModel.even_positions" <<<"$(field buffers_bytes.note <<<"$j")" \
  || fail "the note must name the buffer of unknown size: $(field buffers_bytes <<<"$j")"
[ "$(field inference_total_bytes.bound <<<"$j")" != exact ] || fail "FilteredModel: the total cannot be exact"
# BranchModel: `if sliding` (a constructor argument) builds a tril2(64) or a tril2(256) F32 mask.
# With --arg the branch is decided: 64 x 64 x 4 = 16,384 or 256 x 256 x 4 = 262,144, exact;
# without, only one arm runs but which is not known: at least the smaller, naming the branch.
for c in "sliding=true 16384" "sliding=false 262144"; do
  set -- $c
  j="$(mem --root BranchModel --arg "$1")" || fail "BranchModel --arg $1: exited $?"
  [ "$(field buffers_bytes.bytes <<<"$j") $(field buffers_bytes.bound <<<"$j")" = "$2 exact" ] \
    || fail "BranchModel --arg $1: $(field buffers_bytes <<<"$j"), by hand $2 exact"
done
j="$(mem --root BranchModel)" || fail "BranchModel: exited $?"
[ "$(field buffers_bytes.bytes <<<"$j") $(field buffers_bytes.bound <<<"$j")" = "16384 lower_bound" ] \
  || fail "BranchModel undecided: $(field buffers_bytes <<<"$j"), by hand at least 16384 (one arm, not both)"
grep -q "between 16,384 and 262,144" <<<"$(field buffers_bytes.note <<<"$j")" \
  || fail "the note must give the arms' range: $(field buffers_bytes <<<"$j")"
echo "ok: constructor buffers (shared once, per layer, built by the caller, of unknown size, in branches) equal the hand arithmetic"
