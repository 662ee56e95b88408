#!/usr/bin/env bash
# The Rust crate over the C ABI builds from a clean checkout with cargo alone (its build.rs
# compiles src/profile/*.cpp) and its tests pass. Run as `bash rust_crate.sh <candle-graph> <repo>`
# with the build directory as the working directory; cargo's output goes under it.
set -euo pipefail
repo="${2:?usage: rust_crate.sh <candle-graph binary> <repo root>}"
if ! command -v cargo >/dev/null 2>&1; then
  echo "SKIPPED: cargo is not installed (make setup installs it); the Rust crate was not tested"
  exit 0
fi
export CARGO_TARGET_DIR="$PWD/cargo-target"
cd "$repo/bindings/rust/candle-graph-profile"
cargo test --offline --quiet 2>&1
echo "rust_crate: cargo test passed"
