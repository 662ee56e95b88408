#!/usr/bin/env bash
# `make demo`: analyze the bundled example crate and write the report and HTML into out/.
# Argument: the build directory holding the candle-graph binary (default build/release).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build/release}"
cd "$here"
cg="$build/candle-graph"
crate=examples/tiny-llama
out=out
mkdir -p "$out"

echo "== candle-graph audit $out $crate"
"$cg" audit "$out" "$crate" --config "$crate/config.json"
echo
echo "== written:"
ls -1 "$out" | sed "s|^|  $out/|"
