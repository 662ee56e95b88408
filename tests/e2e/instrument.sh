#!/usr/bin/env bash
# `candle-graph instrument` as a user drives it: the diff applies to fresh copies of the example
# and the fixture crate with both `git apply` and `patch -p1`, the patched copy analyzes to the
# same modules and parameters, the output is deterministic, and bad input fails with a clear
# message, exit 2 and nothing on stdout (never a partial diff).
# Usage: instrument.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

fresh_copy() {  # fresh_copy SRC DEST: manifest, lockfile and sources, outside any git repository
  mkdir -p "$2" && cp "$1/Cargo.toml" "$2/" && cp -R "$1/src" "$2/src"
  if [ -f "$1/Cargo.lock" ]; then cp "$1/Cargo.lock" "$2/"; fi
}
inventory() {  # module and parameter ids, keys and prefixes of a crate's analysis
  "$cg" query modules --path "$1" --limit 10000 --format tree 2>/dev/null
  "$cg" query parameters --path "$1" --limit 10000 --format tree 2>/dev/null
}

for crate in "$root/examples/tiny-llama" "$root/tests/fixtures/crates/instrument_cases"; do
  name=$(basename "$crate")
  "$cg" instrument "$crate" -o "$work/$name.diff" 2>"$work/$name.err" \
    || fail "$name: instrument exited $? ($(cat "$work/$name.err"))"
  grep -q '^instrumented ' "$work/$name.err" || fail "$name: no summary on stderr"
  [ -s "$work/$name.diff" ] || fail "$name: empty diff"
  head -2 "$work/$name.diff" | grep -q '^--- a/Cargo.toml$' || fail "$name: Cargo.toml first"
  "$cg" instrument "$crate" >"$work/$name.again" 2>/dev/null || fail "$name: second run"
  cmp -s "$work/$name.diff" "$work/$name.again" || fail "$name: not deterministic"

  fresh_copy "$crate" "$work/git-$name"
  (cd "$work/git-$name" && git apply --check "$work/$name.diff" && git apply "$work/$name.diff") \
    || fail "$name: git apply refused the diff"
  fresh_copy "$crate" "$work/patch-$name"
  (cd "$work/patch-$name" && patch -p1 -s --dry-run <"$work/$name.diff" \
    && patch -p1 -s <"$work/$name.diff") || fail "$name: patch -p1 refused the diff"
  diff -r "$work/git-$name" "$work/patch-$name" >/dev/null || fail "$name: git apply and patch differ"
  grep -q 'candle-graph-profile = \["dep:candle-graph-profile"\]' "$work/git-$name/Cargo.toml" \
    || fail "$name: feature not added"
  [ "$(grep -c '^\[features\]' "$work/git-$name/Cargo.toml")" = 1 ] || fail "$name: [features] twice"
  # Without --profile-dep the dependency is this checkout's binding: a path that resolves.
  grep -qF "candle-graph-profile = { path = \"$root/bindings/rust/candle-graph-profile\", optional = true }" \
    "$work/git-$name/Cargo.toml" || fail "$name: default dependency source: $(grep candle-graph-profile "$work/git-$name/Cargo.toml")"

  "$cg" check "$work/git-$name" -o "$work/$name.ir.json" 2>"$work/$name.check.err"
  grep -q 'syntax-error' "$work/$name.check.err" && fail "$name: patched copy does not parse"
  inventory "$crate" >"$work/$name.before"
  inventory "$work/git-$name" >"$work/$name.after"
  [ -s "$work/$name.before" ] || fail "$name: no inventory"
  cmp -s "$work/$name.before" "$work/$name.after" \
    || fail "$name: modules/parameters changed: $(diff "$work/$name.before" "$work/$name.after" | head)"

  # Instrumented already: nothing to do, exit 0, nothing printed.
  "$cg" instrument "$work/git-$name" >"$work/$name.third" 2>"$work/$name.third.err" \
    || fail "$name: re-run on the patched copy exited $?"
  [ -s "$work/$name.third" ] && fail "$name: re-run printed a diff"
  grep -q 'nothing to do' "$work/$name.third.err" || fail "$name: re-run should say nothing to do"
done

# The patched fixture compiles with and without the feature, against stand-ins for candle and the
# profiler crate (no network), and each module's scope, and each child layer's, carries the path
# the analysis gives it.
if command -v cargo >/dev/null 2>&1; then
  stubs="$root/tests/fixtures/crates/instrument_stubs"
  c0="$work/cargo-unpatched" c="$work/cargo-patched"
  fresh_copy "$root/tests/fixtures/crates/instrument_cases" "$c0"
  fresh_copy "$root/tests/fixtures/crates/instrument_cases" "$c"
  point_at_stubs() {
    sed -i -e "s|^candle = { package = \"candle-core\", version = \"0.11.0\" }|candle = { package = \"candle-core\", path = \"$stubs/candle-core\" }|" \
      -e "s|^candle-nn = \"0.11.0\"|candle-nn = { path = \"$stubs/candle-nn\" }|" \
      -e "s|^candle-graph-profile = { .*, optional = true }|candle-graph-profile = { path = \"$stubs/candle-graph-profile\", optional = true }|" \
      "$1/Cargo.toml"
  }
  point_at_stubs "$c0"
  export CARGO_TARGET_DIR="$work/cargo-target"
  (cd "$c0" && cargo check --offline -q 2>"$work/cargo.err") \
    || fail "the unpatched fixture does not build against the stubs: $(cat "$work/cargo.err")"
  (cd "$c" && patch -p1 -s <"$work/instrument_cases.diff") || fail "patch on the cargo copy"
  point_at_stubs "$c"
  grep -q "candle-graph-profile = { path = " "$c/Cargo.toml" || fail "stub path not set: $(cat "$c/Cargo.toml")"
  (cd "$c" && cargo check --offline -q 2>"$work/cargo.err") \
    || fail "patched fixture, feature off, does not build: $(cat "$work/cargo.err")"
  mkdir -p "$c/tests"
  cat >"$c/tests/paths.rs" <<'RS'
use candle::Tensor;
use candle_nn::VarBuilder;

#[test]
fn scopes_carry_module_paths() {
    let model = instrument_cases::Model::new(VarBuilder::default()).unwrap();
    model.forward(&Tensor).unwrap();
    // Module scopes, and the candle-nn layers (and skipped module types) each module calls,
    // as children in call order: `self.b.forward(&self.a.forward(xs)?)` opens `a`, then `b`.
    assert_eq!(
        candle_graph_profile::opened(),
        [
            "", "model.shorthand", "model.shorthand.a", "model.shorthand.b",
            "model.multi", "model.multi.proj", "model.moved", "model.moved.inner",
            "model.moved.outer", "model.shadowed", "model.shadowed.deeper.proj", "model.pair",
            "model.generic", "model.built"
        ]
    );
}
RS
  (cd "$c" && cargo test --offline -q --features candle-graph-profile >"$work/cargo.out" 2>&1) \
    || fail "patched fixture, feature on: build or path test failed: $(tail -30 "$work/cargo.out")"
  # The analysis gives those modules the same prefixes.
  for p in model.shorthand model.shorthand.a model.multi.proj model.moved model.moved.outer \
    model.shadowed model.shadowed.deeper.proj model.pair model.built; do
    "$cg" query modules --path "$root/tests/fixtures/crates/instrument_cases" --limit 1000 --format tree \
      2>/dev/null | grep -q "^  $p  " || fail "the analysis has no module with prefix $p"
  done
  unset CARGO_TARGET_DIR
else
  echo "note: cargo not found; the compile check of the patched fixture was skipped"
fi

# Skips are named with file:line and why.
grep -q '^skipped src/blocks.rs:[0-9]*: struct `blocks::Pair`: tuple struct' \
  "$work/instrument_cases.err" || fail "tuple struct skip not reported: $(cat "$work/instrument_cases.err")"
grep -q 'generic forward' "$work/instrument_cases.err" || fail "generic forward skip not reported"

# --root: one component.
"$cg" instrument "$root/examples/tiny-llama" --root Mlp >"$work/mlp.diff" 2>"$work/mlp.err" \
  || fail "--root Mlp exited $?"
grep -q 'model::Mlp' "$work/mlp.err" || fail "--root Mlp summary"
[ "$(grep -c 'module_scope' "$work/mlp.diff")" = 1 ] || fail "--root Mlp: one forward scope"

# Bad input: exit 2, a message naming the place, nothing on stdout.
mkdir -p "$work/bad/src"
printf '[package]\nname = "bad"\nversion = "0.1.0"\n' >"$work/bad/Cargo.toml"
printf 'use candle_nn::VarBuilder;\npub struct M { a: u8 }\nimpl M {\n  pub fn new(vb: VarBuilder) -> Self {\n    Self { a: 1\n' >"$work/bad/src/lib.rs"
"$cg" instrument "$work/bad" >"$work/bad.out" 2>"$work/bad.err"; rc=$?
[ $rc -eq 2 ] || fail "unparsable crate exited $rc"
[ -s "$work/bad.out" ] && fail "unparsable crate printed a diff"
grep -q 'src/lib.rs:[0-9]*:[0-9]*' "$work/bad.err" || fail "parse error not located: $(cat "$work/bad.err")"
mkdir -p "$work/plain/src"
printf '[package]\nname = "plain"\nversion = "0.1.0"\n' >"$work/plain/Cargo.toml"
printf 'pub fn add(a: u32, b: u32) -> u32 { a + b }\n' >"$work/plain/src/lib.rs"
"$cg" instrument "$work/plain" >"$work/plain.out" 2>"$work/plain.err"; rc=$?
[ $rc -eq 2 ] || fail "crate without modules exited $rc"
[ -s "$work/plain.out" ] && fail "crate without modules printed something"
grep -q 'no module to instrument' "$work/plain.err" || fail "no-module message: $(cat "$work/plain.err")"
mkdir -p "$work/tuple/src"
printf '[package]\nname = "tuple"\nversion = "0.1.0"\n' >"$work/tuple/Cargo.toml"
printf 'use candle_nn::{linear, Linear, VarBuilder};\nuse candle::{Result, Tensor, Module};\npub struct P(Linear);\nimpl P {\n    pub fn new(vb: VarBuilder) -> Result<Self> { Ok(Self(linear(2, 2, vb.pp("l"))?)) }\n    pub fn forward(&self, xs: &Tensor) -> Result<Tensor> { self.0.forward(xs) }\n}\n' >"$work/tuple/src/lib.rs"
"$cg" instrument "$work/tuple" >"$work/tuple.out" 2>"$work/tuple.err"; rc=$?
[ $rc -eq 2 ] || fail "a crate whose every module is skipped exited $rc"
[ -s "$work/tuple.out" ] && fail "a crate whose every module is skipped printed a diff"
grep -q 'skipped src/lib.rs:3: struct `P`: tuple struct' "$work/tuple.err" || fail "tuple skip: $(cat "$work/tuple.err")"
grep -q 'nothing to instrument' "$work/tuple.err" || fail "all-skipped message: $(cat "$work/tuple.err")"
"$cg" instrument "$root/examples/tiny-llama" --root NoSuchType >/dev/null 2>"$work/root.err"; rc=$?
[ $rc -eq 2 ] || fail "unknown --root exited $rc"
"$cg" instrument "$work/nowhere" >/dev/null 2>&1; [ $? -eq 2 ] || fail "missing crate should exit 2"
# A dependency source that is none of path=, git=, version=: exit 2, nothing printed.
"$cg" instrument "$root/examples/tiny-llama" --profile-dep nowhere >"$work/dep.out" 2>"$work/dep.err"; rc=$?
[ $rc -eq 2 ] || fail "--profile-dep nowhere exited $rc"
[ -s "$work/dep.out" ] && fail "--profile-dep nowhere printed a diff"
grep -q 'path=DIR, git=URL or version=REQ' "$work/dep.err" || fail "--profile-dep message: $(cat "$work/dep.err")"
"$cg" instrument "$root/examples/tiny-llama" --profile-dep 'git=https://example.com/cg.git' \
  >"$work/git-dep.diff" 2>/dev/null || fail "--profile-dep git= exited $?"
grep -qF '+candle-graph-profile = { git = "https://example.com/cg.git", optional = true }' \
  "$work/git-dep.diff" || fail "--profile-dep git= not written"
# The output may not be the crate's own manifest.
"$cg" instrument "$root/examples/tiny-llama" -o "$root/examples/tiny-llama/Cargo.toml" >/dev/null 2>&1
[ $? -eq 2 ] || fail "-o onto Cargo.toml should be refused"
echo "ok"
