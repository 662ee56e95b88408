#!/usr/bin/env bash
# `query doctor` lists each dependency and where its source is on this machine: a workspace layer
# crate, candle-nn in a registry cache laid out as $CARGO_HOME has it, and a missing git
# dependency with where it was looked for.
# Usage: dependency_sources.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
reg='registry+https://github.com/rust-lang/crates.io-index'
mkdir -p "$work/ws/app/src" "$work/ws/layers/src" "$work/home/registry/src/idx/candle-nn-0.9.1/src"
printf '[workspace]\nmembers = ["app", "layers"]\n' >"$work/ws/Cargo.toml"
printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\nlayers = { path = "../layers" }\nfused = { git = "https://example.invalid/fused" }\n' >"$work/ws/app/Cargo.toml"
printf '[package]\nname = "layers"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\ncandle-nn = "0.9"\n' >"$work/ws/layers/Cargo.toml"
printf '[package]\nname = "candle-nn"\nversion = "0.9.1"\nedition = "2021"\n' >"$work/home/registry/src/idx/candle-nn-0.9.1/Cargo.toml"
touch "$work/ws/app/src/lib.rs" "$work/ws/layers/src/lib.rs" "$work/home/registry/src/idx/candle-nn-0.9.1/src/lib.rs"
cat >"$work/ws/Cargo.lock" <<EOF2
version = 3
[[package]]
name = "app"
version = "0.1.0"
dependencies = ["layers", "fused"]
[[package]]
name = "layers"
version = "0.1.0"
dependencies = ["candle-nn"]
[[package]]
name = "candle-nn"
version = "0.9.1"
source = "$reg"
[[package]]
name = "fused"
version = "0.3.0"
source = "git+https://example.invalid/fused#abcdef0123456789abcdef0123456789abcdef01"
dependencies = ["candle-nn"]
EOF2
CARGO_HOME="$work/home" "$cg" query doctor --path "$work/ws/app" >"$work/doctor.json" 2>"$work/err" \
  || fail "doctor exited $? ($(cat "$work/err"))"
deps() { jq -r --arg p "$1" '.items[0].dependencies[] | select(.package == $p) | '"$2" "$work/doctor.json"; }
[ "$(deps layers .origin)" = workspace ] || fail "layers: $(deps layers .)"
[ "$(deps layers .reaches_candle)" = true ] || fail "layers reaches candle-nn"
[ "$(deps candle-nn .origin)" = registry ] || fail "candle-nn: $(deps candle-nn .)"
deps candle-nn .source_dir | grep -q 'registry/src/idx/candle-nn-0.9.1$' || fail "candle-nn dir"
[ "$(deps fused .origin)" = missing ] || fail "fused: $(deps fused .)"
deps fused '.searched[]' | grep -q 'git/checkouts/\*/abcdef0' || fail "fused: where it was looked for"
echo "dependency_sources: all cases passed"
