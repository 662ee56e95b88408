#!/usr/bin/env bash
# Dependency crates are loaded into the analysis (issue #17): a model built from a workspace layer
# crate, from a registry crate (renamed, reaching candle through another registry crate) and from
# a vendored fork shows the parameters their constructors register, with sources inside the
# dependency; `query doctor` says which dependencies were loaded and why others were not; a
# dependency that cannot be loaded is a `dependency-source` note and the analysis goes on.
# Usage: dependency_loading.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"
root="$2"
fx="$root/tests/fixtures/crates"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/home"
run() { # HOME_DIR KIND PATH [args] > json
  local home="$1" kind="$2" path="$3"; shift 3
  CARGO_HOME="$home" "$cg" query "$kind" --path "$path" --limit 200 "$@" 2>"$work/err" \
    || fail "query $kind $path exited $? ($(cat "$work/err"))"
}
analysis_of() { jq -r --arg p "$1" '.items[0].dependencies[] | select(.package == $p) | .analysis' "$work/doctor.json"; }

# A workspace layer crate: every key its constructors register under the model's prefixes.
run "$work/home" doctor "$fx/deps_workspace/model" >"$work/doctor.json"
[ "$(analysis_of their-layers)" = "loaded: 2 files, 10 items" ] || fail "their-layers: $(analysis_of their-layers)"
run "$work/home" parameters "$fx/deps_workspace/model" >"$work/params.json"
keys="$(jq -r '.items[].name' "$work/params.json" | tr '\n' ' ')"
for k in blocks.0.norm.weight blocks.1.mlp.up_proj.weight blocks.1.mlp.up_proj.bias head.weight head.bias; do
  echo " $keys" | grep -q " $k " || fail "workspace: no $k in $keys"
done
[ "$(jq '.items | length' "$work/params.json")" = 12 ] || fail "workspace: 12 keys, got $keys"
id="$(jq -r '.items[] | select(.name == "blocks.0.norm.weight") | .id' "$work/params.json")"
CARGO_HOME="$work/home" "$cg" query parameter "$id" --path "$fx/deps_workspace/model" >"$work/p.json" \
  || fail "parameter $id"
jq -r '.items[0].source' "$work/p.json" | grep -qx 'their-layers/src/blocks/mod.rs:12' \
  || fail "the key's source is in the layer crate: $(jq -c '.items[0].source' "$work/p.json")"
run "$work/home" components "$fx/deps_workspace/model" >"$work/comps.json"
[ "$(jq -r '[.items[].name] | join(" ")' "$work/comps.json")" = Model ] \
  || fail "only the model crate's components: $(jq -c '[.items[].name]' "$work/comps.json")"
# The dependency's functions are walked, not listed as the model's.
run "$work/home" functions "$fx/deps_workspace/model" >"$work/fns.json"
jq -r '.items[].name' "$work/fns.json" | grep -q '^::' && fail "dependency functions listed: $(cat "$work/fns.json")"

# Registry crates in $CARGO_HOME: renamed (`ql`), and the kernel crate it reaches (`qk`).
home="$fx/deps_registry/cargo_home"
run "$home" doctor "$fx/deps_registry/app" >"$work/doctor.json"
[ "$(analysis_of quant-layers)" = "loaded: 2 files, 3 items" ] || fail "quant-layers: $(analysis_of quant-layers)"
[ "$(analysis_of quant-kernels)" = "loaded: 1 files, 2 items" ] || fail "quant-kernels: $(analysis_of quant-kernels)"
analysis_of tokenizer-glue | grep -q '^not loaded: it does not reach candle' || fail "tokenizer-glue: $(analysis_of tokenizer-glue)"
run "$home" parameters "$fx/deps_registry/app" >"$work/params.json"
[ "$(jq -r '.items[].name' "$work/params.json" | sort | tr '\n' ' ')" = "k_proj.packed.weight q_proj.packed.weight " ] \
  || fail "registry keys: $(jq -c '[.items[].name]' "$work/params.json")"

# A vendored fork (`cargo vendor` layout with the source replacement).
run "$work/home" doctor "$fx/deps_vendor" >"$work/doctor.json"
[ "$(analysis_of lora-layers)" = "loaded: 1 files, 9 items" ] || fail "lora-layers: $(analysis_of lora-layers)"
run "$work/home" parameters "$fx/deps_vendor" >"$work/params.json"
jq -r '.items[].name' "$work/params.json" | grep -qx 'proj.base.weight' \
  || fail "vendored constructor's key: $(jq -c '[.items[].name]' "$work/params.json")"

# A layer crate with a syntax error and one without a library root: notes naming each and its
# path; the model's own parameters are still there.
mkdir -p "$work/ws/app/src" "$work/ws/broken/src" "$work/ws/noroot"
printf '[workspace]\nmembers = ["app", "broken", "noroot"]\n' >"$work/ws/Cargo.toml"
printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\ncandle-nn = "0.11.0"\nbroken = { path = "../broken" }\nnoroot = { path = "../noroot" }\n' >"$work/ws/app/Cargo.toml"
for p in broken noroot; do
  printf '[package]\nname = "%s"\nversion = "0.2.0"\nedition = "2021"\n[dependencies]\ncandle-nn = "0.11.0"\n' "$p" >"$work/ws/$p/Cargo.toml"
done
printf 'pub fn linear(vb: candle_nn::VarBuilder) -> candle_nn::Linear {\n  candle_nn::linear(2, 2, vb).unwrap()\n}\npub fn oops( { let = ; }\n' >"$work/ws/broken/src/lib.rs"
cat >"$work/ws/app/src/lib.rs" <<'EOF2'
use candle_nn::VarBuilder;
pub struct M { a: candle_nn::Linear, b: candle_nn::Linear }
impl M {
    pub fn new(vb: VarBuilder) -> candle_core::Result<Self> {
        noroot::nothing();
        Ok(Self { a: broken::linear(vb.pp("a")), b: candle_nn::linear(4, 4, vb.pp("b"))? })
    }
}
EOF2
run "$work/home" findings "$work/ws/app" >"$work/f.json"
n="$(jq -r '.items[] | select(.name == "dependency-source") | .detail' "$work/f.json")"
echo "$n" | grep -q 'broken 0.2.0 at broken is loaded into the analysis incompletely (.*syntax-error; first: broken/src/lib.rs:4' \
  || fail "syntax error note: $n"
echo "$n" | grep -q 'noroot 0.2.0 at noroot is not loaded into the analysis: it has no library root (src/lib.rs)' \
  || fail "no library root note: $n"
jq -r '.items[] | select(.name == "syntax-error") | .detail' "$work/f.json" | grep -q . \
  && fail "a dependency's syntax errors are not the crate's findings: $(cat "$work/f.json")"
run "$work/home" parameters "$work/ws/app" >"$work/params.json"
[ "$(jq -r '.items[].name' "$work/params.json" | sort | tr '\n' ' ')" = "a.bias a.weight b.bias b.weight " ] \
  || fail "keys with a broken dependency: $(jq -c '[.items[].name]' "$work/params.json")"
echo "dependency_loading: all cases passed"
