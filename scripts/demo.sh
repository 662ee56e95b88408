#!/usr/bin/env bash
# `make demo`: analyze the bundled example crate, time a stand-in inference run under the IR's
# operation ids with the profiler library (examples/profile-demo), and write the report and the
# HTML, with the measured timings merged in, into out/.
# Argument: the build directory holding the candle-graph binary (default build/release).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build/release}"
cd "$here"
cg="$build/candle-graph"
demo="$build/examples/profile-demo/profile-demo"
crate=examples/tiny-llama
out=out
mkdir -p "$out"
trace="$out/profile-demo.jsonl"
rm -f "$trace"

echo "== candle-graph check $crate (operation ids for the profiler)"
"$cg" check "$crate" --config "$crate/config.json" --output "$out/ir.json"
echo
echo "== profile-demo: stand-in workload (C++ matmuls/softmaxes, not a Candle run) -> $trace"
"$demo" "$out/ir.json" "$crate/config.json" "$trace"
evidence=()
[[ -s "$trace" ]] && evidence=(--runtime-trace "$trace")
echo
echo "== candle-graph audit $out $crate ${evidence[*]}"
"$cg" audit "$out" "$crate" --config "$crate/config.json" "${evidence[@]}"
echo
echo "== written:"
ls -1 "$out" | sed "s|^|  $out/|"
