#!/usr/bin/env bash
# `summary` and the parameter inventory through the real binary: the table, the qkv-bias feature
# adding a bias leaf, and bad input (unknown --root, malformed config) as usage errors.
# Every table here is read with --width 0 (one line per row and per note, found whole by grep);
# the 120-column layout itself is tests/e2e/newcomer.sh's.
# Usage: summary_verify.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/examples/tiny-llama"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$cg" summary --width 0 "$crate" --config "$crate/config.json" >"$work/out" 2>"$work/err" \
  || fail "summary exited $? ($(cat "$work/err"))"
grep -q 'Total params: 3,950,848' "$work/out" || fail "total params ($(cat "$work/out"))"
grep -q 'model.layers.3 (Block)' "$work/out" || fail "families expand under the config"
# 3,950,848 × 4 bytes = 15,803,392 B: 15.80 MB, torchinfo's MB (10^6 bytes)
grep -q 'Params size (MB): 15.80 at F32' "$work/out" || fail "size at F32"

# A family too large to expand multiplies in every total and says on the same screen that it was
# not expanded; 4,096 layers (over the instance bound, not the loop bound) are never cut part-way.
sed 's/"num_hidden_layers": 4,/"num_hidden_layers": 1000000000,/' "$crate/config.json" >"$work/big.json"
"$cg" summary --width 0 "$crate" --config "$work/big.json" >"$work/big" 2>/dev/null || fail "summary of 1e9 layers exited $?"
grep -q 'Total params: 725,504,001,048,832$' "$work/big" || fail "1e9 layers total ($(grep Total "$work/big"))"
grep -q 'layers.{layer_idx} × 1,000,000,000 (Block) \[not expanded: over the expansion bound\]' "$work/big" \
  || fail "the template row says it was not expanded ($(cat "$work/big"))"
sed 's/"num_hidden_layers": 4,/"num_hidden_layers": 4096,/' "$crate/config.json" >"$work/4096.json"
"$cg" summary --width 0 "$crate" --config "$work/4096.json" >"$work/4096" 2>/dev/null || fail "summary of 4096 layers exited $?"
grep -q 'Total params: 2,972,713,216$' "$work/4096" || fail "4096 layers total ($(grep Total "$work/4096"))"
grep -q '× 4,096 (Block) \[not expanded: over the instance bound\]' "$work/4096" || fail "4096-layer family row"
sed 's/"num_hidden_layers": 4,/"num_hidden_layers": 1000000000000000,/' "$crate/config.json" >"$work/huge.json"
# A count past 2^64 is no model: an input error naming the key, its value and the file (#18).
"$cg" summary --width 0 "$crate" --config "$work/huge.json" >"$work/huge" 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "1e15 layers exits $rc, expected 2"
grep -q 'huge.json: .*' "$work/err" || fail "overflow names the file ($(cat "$work/err"))"
grep -q '`num_hidden_layers` = 1000000000000000' "$work/err" || fail "overflow names the key ($(cat "$work/err"))"
# A negative or fractional dimension is an input error naming the key, the file and a parameter.
sed 's/"hidden_size": 256,/"hidden_size": -5,/' "$crate/config.json" >"$work/neg.json"
"$cg" summary --width 0 "$crate" --config "$work/neg.json" >"$work/neg" 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "hidden_size -5 exits $rc, expected 2"
grep -q 'neg.json: ' "$work/err" || fail "negative dim names the file ($(cat "$work/err"))"
grep -q '`hidden_size` is -5: a negative value.*`model.embed_tokens.weight`' "$work/err" \
  || fail "negative dim names key and parameter ($(cat "$work/err"))"
grep -q '\[4096, -5\]' "$work/neg" && fail "a negative shape is printed"
sed 's/"hidden_size": 256,/"hidden_size": 2.5,/' "$crate/config.json" >"$work/frac.json"
"$cg" summary --width 0 "$crate" --config "$work/frac.json" >/dev/null 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "hidden_size 2.5 exits $rc, expected 2"
grep -q '`hidden_size` is 2.5: a number with a fraction' "$work/err" || fail "fractional dim ($(cat "$work/err"))"
# Fields a constructor reads that the config cannot bind are warnings on the summary's screen (#21).
cv="$root/tests/fixtures/crates/config_values"
"$cg" summary --width 0 "$cv" --config "$cv/config.json" >"$work/cv" 2>/dev/null || fail "summary of config_values exited $?"
grep -q 'warning: a constructor reads `cfg.vision.patch`' "$work/cv" || fail "unbound field warning ($(cat "$work/cv"))"
grep -q 'deserialize_with = "dim_from_string"' "$work/cv" || fail "deserialize_with warning ($(cat "$work/cv"))"
grep -q 'pass --config' "$work/cv" && fail "says pass --config when one was passed"
# parameters of symbolic shape make the total a lower bound
grep -q 'Total params: at least 280 (+ 3 parameters of symbolic shape)' "$work/cv" || fail "config_values total ($(grep Total "$work/cv"))"
"$cg" check "$cv" --config "$cv/config.json" -o "$work/cv-ir.json" 2>/dev/null || fail "check of config_values exited $?"
node "$root/tests/e2e/make_checkpoint.mjs" "$work/cv-ir.json" "$work/cv.safetensors" || fail "make_checkpoint (config_values)"
"$cg" verify "$cv" --config "$cv/config.json" --checkpoint "$work/cv.safetensors" >/dev/null 2>"$work/verr"
grep -q 'warning: a constructor reads `cfg.vision.patch`' "$work/verr" || fail "verify warns of unbound fields ($(cat "$work/verr"))"
nd="$root/tests/fixtures/crates/config_not_deserialize"
"$cg" summary --width 0 "$nd" --config "$nd/config.json" >"$work/nd" 2>/dev/null || fail "summary of config_not_deserialize exited $?"
grep -q 'is not bound to `Config`: it does not derive Deserialize' "$work/nd" || fail "non-Deserialize config ($(cat "$work/nd"))"
# A crate RmsNorm wrapping candle_nn's under the same prefix is one row, never nested in itself.
wn="$root/tests/fixtures/crates/wrapped_norm"
"$cg" summary --width 0 "$wn" --config "$wn/config.json" >"$work/wn" 2>/dev/null || fail "summary of wrapped_norm exited $?"
grep -q 'layers.0.norm' "$work/wn" && fail "inner row named by its full path ($(cat "$work/wn"))"
[ "$(grep -c '(RmsNorm)' "$work/wn")" -eq 4 ] || fail "one RmsNorm row per norm ($(cat "$work/wn"))"
grep -q 'Total params: 12,596$' "$work/wn" || fail "wrapped_norm total ($(grep Total "$work/wn"))"
# Without the config the gates family's count is symbolic: its fixed-size leaves are left out and
# the total says it is a lower bound, naming the family, instead of counting one gate.
"$cg" summary --width 0 "$wn" >"$work/wn0" 2>/dev/null || fail "summary of wrapped_norm without config exited $?"
grep -q 'Total params: at least 4 ' "$work/wn0" || fail "lower-bound total ($(grep Total "$work/wn0"))"
grep -q 'lower bound: .*gates.{i}' "$work/wn0" || fail "the lower bound names the family ($(cat "$work/wn0"))"
grep -q 'gates.{i} × cfg.num_hidden_layers (Linear)' "$work/wn0" || fail "the family row names its count"

# The qkv-bias feature swaps in candle_nn::linear for q_proj: one bias leaf per layer (4 x 256).
"$cg" summary --width 0 "$crate" --config "$crate/config.json" --features qkv-bias >"$work/bias" 2>/dev/null \
  || fail "summary --features qkv-bias exited $?"
grep -q 'Total params: 3,951,872' "$work/bias" || fail "qkv-bias adds 1,024 parameters"

"$cg" summary --width 0 "$crate" --root NoSuchType >/dev/null 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "unknown --root exits $rc, expected 2"
grep -q 'NoSuchType' "$work/err" || fail "unknown --root is named ($(cat "$work/err"))"

printf '{"hidden_size": 256,' >"$work/bad.json"
"$cg" summary --width 0 "$crate" --config "$work/bad.json" >/dev/null 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "malformed config exits $rc, expected 2"
grep -q 'bad.json' "$work/err" || fail "malformed config names the file ($(cat "$work/err"))"
# Baselines: record, check unchanged (0), a feature change fails (1) with a +/- diff.
"$cg" check "$crate" --config "$crate/config.json" -o /dev/null --update-baseline "$work/model.baseline" 2>/dev/null \
  || fail "--update-baseline exited $?"
grep -q '^# candle-graph/model-baseline/1' "$work/model.baseline" || fail "baseline header"
"$cg" check "$crate" --config "$crate/config.json" -o /dev/null --check "$work/model.baseline" 2>/dev/null \
  || fail "--check of an unchanged crate exited $?"
"$cg" check "$crate" --config "$crate/config.json" --features qkv-bias -o /dev/null \
  --check "$work/model.baseline" 2>"$work/err"; rc=$?
[ "$rc" -eq 1 ] || fail "--check of a changed crate exits $rc, expected 1"
grep -q '^+ parameter.*q_proj.bias' "$work/err" || fail "the diff shows the added bias ($(cat "$work/err"))"
# `-o /dev/null` writes through the device: it must still be one afterwards.
[ -c /dev/null ] || fail "/dev/null is no longer a character device after -o /dev/null"
# --checkpoint is never ignored: check fails on a checkpoint that will not load, and audit keeps the
# verification beside the report and shows it in the page's checkpoint view.
"$cg" check "$crate" --config "$crate/config.json" -o "$work/ir.json" 2>/dev/null || fail "check exited $?"
node "$root/tests/e2e/make_checkpoint.mjs" "$work/ir.json" "$work/ck.safetensors" || fail "make_checkpoint"
"$cg" check "$crate" --config "$crate/config.json" -o /dev/null --checkpoint "$work/ck.safetensors" \
  2>"$work/err"; rc=$?
[ "$rc" -eq 1 ] || fail "check with a checkpoint that will not load exits $rc, expected 1"
grep -q 'model.norm.weight' "$work/err" || fail "check names the missing key ($(cat "$work/err"))"
"$cg" audit "$work/audit" "$crate" --config "$crate/config.json" --checkpoint "$work/ck.safetensors" \
  >/dev/null 2>&1 || fail "audit --checkpoint exited $?"
grep -q 'it will fail' "$work/audit/checkpoint.txt" || fail "audit writes checkpoint.txt"
grep -q '"will_load": false' "$work/audit/checkpoint.json" || fail "audit writes checkpoint.json"
for want in '"status":"unclaimed"' '"status":"shape_mismatch"' '"status":"missing"'; do
  grep -q "$want" "$work/audit/model.html" || fail "model.html checkpoint view lacks $want"
done
echo "ok"
