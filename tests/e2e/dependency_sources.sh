#!/usr/bin/env bash
# `query doctor` lists each dependency and where its source is on this machine: a workspace layer
# crate, candle-nn in a registry cache laid out as $CARGO_HOME has it (two releases in one lock),
# and a missing git dependency with where it was looked for. Bad layouts (a cycle of path
# dependencies, a vendored crate with a broken Cargo.toml, a git source without its revision, a
# broken Cargo.lock) each give a `dependency-source` finding naming the dependency and the path
# looked in, and the analysis goes on.
# Usage: dependency_sources.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
reg='registry+https://github.com/rust-lang/crates.io-index'
mkdir -p "$work/ws/app/src" "$work/ws/layers/src" "$work/home/registry/src/idx/candle-nn-0.9.1/src" \
  "$work/home/registry/src/idx/candle-nn-0.11.0/src"
printf '[workspace]\nmembers = ["app", "layers"]\n' >"$work/ws/Cargo.toml"
printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\nlayers = { path = "../layers" }\nfused = { git = "https://example.invalid/fused" }\n' >"$work/ws/app/Cargo.toml"
printf '[package]\nname = "layers"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\ncandle-nn = "0.9"\n' >"$work/ws/layers/Cargo.toml"
printf '[package]\nname = "candle-nn"\nversion = "0.9.1"\nedition = "2021"\n' >"$work/home/registry/src/idx/candle-nn-0.9.1/Cargo.toml"
printf '[package]\nname = "candle-nn"\nversion = "0.11.0"\nedition = "2021"\n' >"$work/home/registry/src/idx/candle-nn-0.11.0/Cargo.toml"
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
dependencies = ["candle-nn 0.9.1"]
[[package]]
name = "candle-nn"
version = "0.9.1"
source = "$reg"
[[package]]
name = "candle-nn"
version = "0.11.0"
source = "$reg"
[[package]]
name = "fused"
version = "0.3.0"
source = "git+https://example.invalid/fused#abcdef0123456789abcdef0123456789abcdef01"
dependencies = ["candle-nn 0.11.0"]
EOF2
CARGO_HOME="$work/home" "$cg" query doctor --path "$work/ws/app" >"$work/doctor.json" 2>"$work/err" \
  || fail "doctor exited $? ($(cat "$work/err"))"
deps() { jq -r --arg p "$1" '.items[0].dependencies[] | select(.package == $p) | '"$2" "$work/doctor.json"; }
[ "$(deps layers .origin)" = workspace ] || fail "layers: $(deps layers .)"
[ "$(deps layers .reaches_candle)" = true ] || fail "layers reaches candle-nn"
[ "$(deps candle-nn .origin | sort -u)" = registry ] || fail "candle-nn: $(deps candle-nn .)"
deps candle-nn .source_dir | grep -q 'registry/src/idx/candle-nn-0.9.1$' || fail "candle-nn dir"
[ "$(deps fused .origin)" = missing ] || fail "fused: $(deps fused .)"
deps fused '.searched[]' | grep -q 'git/checkouts/\*/abcdef0' || fail "fused: where it was looked for"
[ "$(deps candle-nn .version | sort -V | tr '\n' ' ')" = "0.9.1 0.11.0 " ] || fail "both candle-nn releases"

# The same notes are findings in the IR, counted by doctor, with paths that do not name this
# machine ($CARGO_HOME/…, workspace-relative).
[ "$(jq -r '.items[0].findings_by_rule["dependency-source"]' "$work/doctor.json")" -ge 2 ] \
  || fail "doctor counts dependency-source findings: $(jq -c '.items[0].findings_by_rule' "$work/doctor.json")"
notes() {
  CARGO_HOME="$work/home" "$cg" query findings dependency-source --path "$1" --limit 100 \
    >"$work/notes.json" 2>"$work/err" || fail "findings for $1 exited $? ($(cat "$work/err"))"
  jq -r '.items[].detail' "$work/notes.json"
}
n="$(notes "$work/ws/app")"
echo "$n" | grep -q 'fused 0.3.0 is not on disk; looked in .*\$CARGO_HOME/git/checkouts/\*/abcdef0' \
  || fail "missing git dependency note: $n"
echo "$n" | grep -q 'Cargo.lock holds 2 versions of candle-nn (0.11.0 at \$CARGO_HOME/registry/src/idx/candle-nn-0.11.0, 0.9.1 at' \
  || fail "two candle-nn versions note: $n"
echo "$n" | grep -qF "$work" && fail "a note names this machine's path: $n"
# layers' own lock entry names candle-nn 0.9.1: that is its exact, audited version.
CARGO_HOME="$work/home" "$cg" query cargo --path "$work/ws/layers" >"$work/cargo.json" 2>"$work/err" \
  || fail "cargo query exited $? ($(cat "$work/err"))"
jq -r '.items[0].candle_packages["candle-nn"]' "$work/cargo.json" | grep -qx '0.9.1' \
  || fail "layers' candle-nn: $(jq -c '.items[0].candle_packages' "$work/cargo.json")"

# A cycle of path dependencies, a vendored candle-nn whose Cargo.toml is broken, a git source
# without a revision: one note each, and the analysis goes on.
mkdir -p "$work/bad/a/src" "$work/bad/b/src" "$work/bad/a/.cargo" "$work/bad/a/vendor/candle-nn"
printf '[package]\nname = "a"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\nb = { path = "../b" }\ncandle-nn = "0.9"\nnorev = { git = "https://example.invalid/norev" }\n' >"$work/bad/a/Cargo.toml"
printf '[package]\nname = "b"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\na = { path = "../a" }\n' >"$work/bad/b/Cargo.toml"
printf 'pub fn f(x: &candle_core::Tensor) -> candle_core::Result<candle_core::Tensor> { x.exp() }\n' >"$work/bad/a/src/lib.rs"
touch "$work/bad/b/src/lib.rs"
printf '[source.crates-io]\nreplace-with = "vendored"\n[source.vendored]\ndirectory = "vendor"\n' >"$work/bad/a/.cargo/config.toml"
printf '[package\nname = ' >"$work/bad/a/vendor/candle-nn/Cargo.toml"
cat >"$work/bad/a/Cargo.lock" <<EOF3
version = 3
[[package]]
name = "a"
version = "0.1.0"
dependencies = ["b", "candle-nn", "norev"]
[[package]]
name = "b"
version = "0.1.0"
dependencies = ["a"]
[[package]]
name = "candle-nn"
version = "0.9.1"
source = "$reg"
[[package]]
name = "norev"
version = "0.1.0"
source = "git+https://example.invalid/norev"
EOF3
n="$(notes "$work/bad/a")"
echo "$n" | grep -q 'b 0.1.0 at ../b is in a cycle of path dependencies (a → b → a)' || fail "cycle note: $n"
echo "$n" | grep -q 'candle-nn 0.9.1 (vendor) at vendor/candle-nn: malformed Cargo.toml (line 1)' \
  || fail "broken vendored manifest note: $n"
echo "$n" | grep -q 'norev 0.1.0 is not on disk; looked in .*nothing: the git source in Cargo.lock names no revision' \
  || fail "git source without a revision: $n"
CARGO_HOME="$work/home" "$cg" query operations --path "$work/bad/a" >"$work/ops.json" 2>"$work/err" \
  || fail "the analysis of the rest goes on: $(cat "$work/err")"
jq -r '.items[].name' "$work/ops.json" | grep -qx exp || fail "exp op: $(cat "$work/ops.json")"

# A broken Cargo.lock: a warning naming its line; versions fall back to the manifest requirements.
printf 'version = 3\n[[package]\n' >"$work/bad/a/Cargo.lock"
n="$(notes "$work/bad/a")"
echo "$n" | grep -q 'Cargo.lock: line 2: .*Cargo.lock is not used' || fail "broken lock note: $n"
# A Candle fork taken from git with a version requirement and no Cargo.lock: Cargo enforces the
# requirement, so the release it names is analysed with that release's audited rules, said so;
# a wider requirement stays unresolved and every rule unknown.
mkdir -p "$work/fork/src"
printf '[package]\nname = "fork"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\ncandle-core = { git = "https://example.invalid/candle", version = "0.8.4" }\ncandle-nn = { git = "https://example.invalid/candle", version = "0.8.4" }\n' >"$work/fork/Cargo.toml"
cat >"$work/fork/src/lib.rs" <<'EOF4'
use candle_core::{Module, Result, Tensor};
use candle_nn::{linear, Linear, VarBuilder};
pub struct Net {
    fc: Linear,
}
impl Net {
    pub fn new(vb: VarBuilder) -> Result<Self> {
        Ok(Self { fc: linear(8, 4, vb.pp("fc"))? })
    }
}
impl Module for Net {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.fc.forward(&xs.exp()?)
    }
}
EOF4
out="$(CARGO_HOME="$work/home" "$cg" summary "$work/fork" 2>&1)" || fail "fork summary: $out"
echo "$out" | grep -q 'no Cargo.lock pins Candle: analysed as candle-core 0.8.4 and candle-nn 0.8.4' \
  || fail "requirement note: $out"
echo "$out" | grep -q '^Total params: 36$' || fail "fork params (8 x 4 + 4, audited constructors): $out"
echo "$out" | grep -q 'not audited releases' && fail "a caret requirement is not 'unresolved': $out"
sed -i 's/version = "0.8.4"/version = ">=0.8"/g' "$work/fork/Cargo.toml"
out="$(CARGO_HOME="$work/home" "$cg" summary "$work/fork" 2>&1)" || fail "fork summary: $out"
echo "$out" | grep -q 'an unresolved version, which are not audited releases' \
  || fail "a wider requirement stays unresolved: $out"
echo "dependency_sources: all cases passed"
