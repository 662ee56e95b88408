#!/usr/bin/env bash
# A layer and a cache that exist only for one variant of a config enum
# (tests/fixtures/crates/config_enum_branch; rwkv_v7's V7b-only attention): `cfg.variant ==
# Variant::Extra` is decided from config.json through serde's spelling of the variant
# (`rename_all = "lowercase"`), and the `Option` field the constructor writes `None` and nothing
# else writes stays `None`, so the forward's `if let Some(extra) = &self.extra` never runs.
# Usage: config_enum_branch.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
crate="$root/tests/fixtures/crates/config_enum_branch"
fail() { echo "FAIL: $*"; exit 1; }
field() { node -e 'const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
  const v = process.argv[1].split(".").reduce((o, k) => o == null ? o : o[k], j);
  console.log(v === null ? "null" : typeof v === "object" ? JSON.stringify(v) : String(v))' "$1"; }
# hidden 16: proj 16 x 16 = 256 parameters; "extra" adds its own 256 and caches its output
# [1, t, 16] F32, concatenated along t: 10 positions x 16 x 4 B = 640 bytes.
for c in "plain 256 0" "extra 512 640"; do
  set -- $c
  s="$("$cg" summary "$crate" --root Block --config "$crate/$1.json" 2>&1)" || fail "summary $1: $s"
  grep -q "^Total params: $2\$" <<<"$s" || fail "$1: total params, by hand $2: $s"
  j="$("$cg" memory "$crate" --root Block --config "$crate/$1.json" --context 10 --format json \
    2>/dev/null)" || fail "memory $1 exited $?"
  [ "$(field kv_cache_bytes.bytes <<<"$j") $(field kv_cache_bytes.bound <<<"$j")" = "$3 exact" ] \
    || fail "$1: KV cache $(field kv_cache_bytes <<<"$j"), by hand $3 exact"
done
echo "ok: a config enum's variant decides the layer (256 / 512 parameters) and its cache (0 / 640 B)"
