#!/usr/bin/env bash
# `cargo candle-graph …` must behave exactly like `candle-graph …`. Cargo runs an external
# subcommand as `cargo-candle-graph candle-graph <args>`; the reference broke on that repeated name.
# Usage: cargo_subcommand.sh <candle-graph binary> <repo root>
set -euo pipefail
cg="$1"
bindir="$(cd "$(dirname "$cg")" && pwd)"
command -v cargo >/dev/null || { echo "SKIPPED: cargo not installed"; exit 0; }
direct="$("$cg" --version)"
via_cargo="$(PATH="$bindir:$PATH" cargo candle-graph --version)"
[ "$direct" = "$via_cargo" ] || { echo "FAIL: '$direct' != '$via_cargo'"; exit 1; }
# Usage errors keep their exit code through cargo.
set +e
PATH="$bindir:$PATH" cargo candle-graph --no-such-flag >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAIL: unknown flag through cargo exited $rc, expected 2"; exit 1; }
echo "ok: cargo candle-graph --version -> $via_cargo"
