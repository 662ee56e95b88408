#!/usr/bin/env bash
# `candle-graph memory --quant / --gguf` (issue #38) against hand arithmetic (docs/memory.md,
# "Quantized models") on the bundled example; with CG_CANDLE_SRC, that candle-transformers'
# quantized_mistral asks for a type. Bad flags are input errors naming the flag or file.
# Usage: memory_quant.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/examples/tiny-llama"
fail() { echo "FAIL: $*"; exit 1; }
field() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const v = process.argv[1].split(".").reduce((o, k) => o == null ? o : o[k], j);
  console.log(v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v))' "$1"; }
mem() { "$cg" memory "$crate" --config "$crate/config.json" --context 2048 --format json "$@" 2>/dev/null; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

# tiny-llama at F16 through --quant (block of 1: every weight fits): its 3,948,544 elements of
# rank 2 (1,048,576 embedding + 4 x 724,992) at 2 bytes, its 2,304 rank-1 elements (4 x 2 x 256
# norms + 256) at F32: 7,897,088 + 9,216 = 7,906,304 bytes.
j="$(mem --quant f16)" || fail "--quant f16 exited $?"
[ "$(field weights_bytes.bytes <<<"$j")" = 7906304 ] || fail "--quant f16: $(field weights_bytes <<<"$j")"
[ "$(field weights_bytes.bound <<<"$j")" = exact ] || fail "--quant f16 bound: $(field weights_bytes <<<"$j")"
[ "$(field weights_format <<<"$j")" = "--quant F16" ] || fail "weights_format: $j"
# At Q4_0 its down_proj rows of 688 elements are not whole blocks of 32 (688 = 21.5 x 32):
# candle's QTensor refuses them, so the figure is a lower bound naming one.
j="$(mem --quant q4_0)" || fail "--quant q4_0 exited $?"
[ "$(field weights_bytes.bound <<<"$j")" = lower_bound ] || fail "q4_0 on 688-wide rows: $(field weights_bytes <<<"$j")"
grep -q 'down_proj' <<<"$(field weights_bytes.note <<<"$j")" || fail "q4_0 note names no refused weight: $j"

# --gguf: a file of two tensors (written here, zero data), checked against the model.
#   model.embed_tokens.weight [4096, 256] Q8_0: 4096 x 256 / 32 = 32,768 blocks x 34 = 1,114,112
#   model.norm.weight [256] F32: 1,024            in all 1,115,136 bytes
node -e '
  const parts = []; const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); };
  const u64 = (v) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); };
  const str = (s) => { u64(Buffer.byteLength(s)); parts.push(Buffer.from(s)); };
  parts.push(Buffer.from("GGUF")); u32(3); u64(2); u64(1);
  str("general.architecture"); u32(8); str("llama");
  str("model.embed_tokens.weight"); u32(2); u64(256); u64(4096); u32(8); u64(0);
  str("model.norm.weight"); u32(1); u64(256); u32(0); u64(1114112);
  let head = Buffer.concat(parts); const pad = (32 - head.length % 32) % 32;
  require("fs").writeFileSync(process.argv[1], Buffer.concat([head, Buffer.alloc(pad + 1114112 + 1024)]));
' "$tmp/two.gguf" || fail "writing the GGUF"
j="$(mem --gguf "$tmp/two.gguf")" || fail "--gguf exited $?"
[ "$(field weights_bytes.bytes <<<"$j")" = 1115136 ] || fail "--gguf weights: $(field weights_bytes <<<"$j")"
[ "$(field weights_bytes.bound <<<"$j")" = exact ] || fail "--gguf bound: $j"
[ "$(field weights_by_type.0.type <<<"$j")" = Q8_0 ] && [ "$(field weights_by_type.0.bytes <<<"$j")" = 1114112 ] \
  || fail "--gguf by type: $(field weights_by_type <<<"$j")"
[ "$(field weights_check.matched <<<"$j")" = 2 ] || fail "--gguf check: $(field weights_check <<<"$j")"
[ "$(field weights_check.missing <<<"$j")" -gt 0 ] || fail "tiny-llama's layers are not in the file: $(field weights_check <<<"$j")"
t="$("$cg" memory "$crate" --config "$crate/config.json" --context 2048 --gguf "$tmp/two.gguf" 2>/dev/null)"
grep -q 'Q8_0: 1 tensor, 1,048,576 elements' <<<"$t" || fail "text by type: $t"
grep -q 'missing from the file' <<<"$t" || fail "text check: $t"

# Bad flags and files: input errors (exit 2) naming the flag or the file.
printf '{"not": "gguf"}' >"$tmp/model.gguf"
mkdir "$tmp/dir.gguf"; mkfifo "$tmp/fifo.gguf" 2>/dev/null || : >"$tmp/fifo.gguf"
head -c 100 "$tmp/two.gguf" >"$tmp/cut.gguf"
for bad in "--quant q3_x|--quant q3_x" "--gguf $tmp/model.gguf|$tmp/model.gguf: offset 0: not a GGUF file" \
  "--gguf $tmp/cut.gguf|$tmp/cut.gguf: offset" "--gguf $tmp/absent.gguf|$tmp/absent.gguf" \
  "--quant q4_0 --gguf $tmp/two.gguf|--quant" "--gguf $tmp/dir.gguf|$tmp/dir.gguf: a directory" \
  "--gguf $tmp/fifo.gguf|$tmp/fifo.gguf: "; do
  args="${bad%%|*}"; want="${bad#*|}"
  # shellcheck disable=SC2086
  err="$(timeout 60 "$cg" memory "$crate" --config "$crate/config.json" $args 2>&1 >/dev/null)"; rc=$?
  [ "$rc" = 2 ] || fail "$args: exit $rc, expected 2: $err"
  grep -qF -- "$want" <<<"$err" || fail "$args: the error does not say '$want': $err"
done
echo "ok: --quant and --gguf on tiny-llama equal the hand arithmetic; bad flags refused"

# quantized_mistral (with CG_CANDLE_SRC): without --quant or --gguf its weights are not a float
# dtype's: unknown, and the note says what to give. Its figures at q4_0 and q8_0 are rows of
# memory_truth.sh.
[ -n "${CG_CANDLE_SRC:-}" ] || { echo "CG_CANDLE_SRC not set: quantized_mistral not checked"; exit 0; }
j="$("$cg" memory "$CG_CANDLE_SRC/candle-transformers" --root models::quantized_mistral::Model \
  --config "$root/tools/published/mistral-7b-v0.1.json" --context 4096 --format json 2>/dev/null)" \
  || fail "quantized_mistral exited $?"
[ "$(field weights_bytes.bound <<<"$j")" = unknown ] || fail "quantized weights without a type: $(field weights_bytes <<<"$j")"
grep -q -- '--gguf' <<<"$(field weights_bytes.note <<<"$j")" || fail "the note must ask for --gguf or --quant: $j"
# The query (and MCP) kind `memory` says the same.
j="$("$cg" query memory --path "$CG_CANDLE_SRC/candle-transformers" --root models::quantized_mistral::Model \
  --config "$root/tools/published/mistral-7b-v0.1.json" 2>/dev/null)" || fail "query memory exited $?"
grep -q '"bound": "unknown"' <<<"$(node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  console.log(JSON.stringify(j.items[0].weights_bytes, null, 1))' <<<"$j")" || fail "query memory weights: $j"
# summary says the same: no "Params size (MB): .. at BF16" line for it; its KV cache at F32:
# 2 x 32 layers x 8 kv heads x 128 x 4 bytes = 262,144 bytes per position.
t="$("$cg" summary "$CG_CANDLE_SRC/candle-transformers" --root models::quantized_mistral::Model \
  --config "$root/tools/published/mistral-7b-v0.1.json" 2>/dev/null)" || fail "summary exited $?"
grep -q 'Params size (MB)' <<<"$t" && fail "summary prints a float dtype's size for a quantized model: $t"
grep -q "Params size: not at a float dtype" <<<"$t" || fail "summary does not say why: $t"
grep -q 'KV cache: 262,144 bytes per position at batch 1, F32' <<<"$t" || fail "summary's KV cache at F32: $t"
echo "ok: quantized_mistral's weights are unknown until --quant or --gguf says their type"
# --gguf on quantized_mistral: three of its tensors, the embedding table cut to 64 rows.
#   model.embed_tokens.weight [64, 4096] Q4_0: 8,192 blocks x 18 = 147,456 bytes in the file; the
#     quantized Embedding dequantizes it at load: 262,144 x 4 = 1,048,576 bytes in memory
#   model.layers.0.self_attn.k_proj.weight [1024, 4096] Q4_0: 131,072 x 18 = 2,359,296
#   model.norm.weight [4096] F32: 16,384
# In memory 1,048,576 + 2,359,296 + 16,384 = 3,424,256; the file's tensors 2,523,136.
node -e '
  const parts = []; const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); };
  const u64 = (v) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); };
  const str = (s) => { u64(Buffer.byteLength(s)); parts.push(Buffer.from(s)); };
  parts.push(Buffer.from("GGUF")); u32(3); u64(3); u64(0);
  str("model.embed_tokens.weight"); u32(2); u64(4096); u64(64); u32(2); u64(0);
  str("model.layers.0.self_attn.k_proj.weight"); u32(2); u64(4096); u64(1024); u32(2); u64(147456);
  str("model.norm.weight"); u32(1); u64(4096); u32(0); u64(147456 + 2359296);
  let head = Buffer.concat(parts); const pad = (32 - head.length % 32) % 32;
  require("fs").writeFileSync(process.argv[1], Buffer.concat([head, Buffer.alloc(pad + 2523136)]));
' "$tmp/mistral.gguf" || fail "writing the mistral GGUF"
j="$("$cg" memory "$CG_CANDLE_SRC/candle-transformers" --root models::quantized_mistral::Model \
  --config "$root/tools/published/mistral-7b-v0.1.json" --context 4096 --format json \
  --gguf "$tmp/mistral.gguf" 2>/dev/null)" || fail "quantized_mistral --gguf exited $?"
[ "$(field weights_bytes.bytes <<<"$j") $(field weights_bytes.bound <<<"$j")" = "3424256 exact" ] \
  || fail "quantized_mistral --gguf: $(field weights_bytes <<<"$j"), by hand 3424256"
grep -q '2,523,136' <<<"$(field weights_bytes.note <<<"$j")" || fail "the file's own sum: $j"
[ "$(field weights_check.matched <<<"$j") $(field weights_check.shape_mismatches <<<"$j")" = "3 1" ] \
  || fail "check: $(field weights_check <<<"$j")"
echo "ok: quantized_mistral --gguf: the dequantized embedding at F32, the rest at the file's bytes"
