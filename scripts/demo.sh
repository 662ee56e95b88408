#!/usr/bin/env bash
# `make demo`: analyze the bundled example crate, instrument a copy of it for per-module profiling
# (`candle-graph instrument`, applied under out/instrumented/) and show its analysis is unchanged,
# time a stand-in inference run under the IR's operation ids with the profiler library
# (examples/profile-demo), and write the report and the HTML, with the measured timings merged in,
# into out/.
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

# The instrument step stands on its own (it needs only the candle-graph binary), so the profiler
# steps below may change without touching it.
instrument_demo() {
  local copy="$out/instrumented/tiny-llama" diff="$out/instrument.diff"
  echo "== candle-graph instrument $crate -> $diff, applied to a copy in $copy"
  rm -rf "$out/instrumented" && mkdir -p "$copy"
  cp "$crate/Cargo.toml" "$copy/"
  for f in Cargo.lock config.json; do
    if [[ -f "$crate/$f" ]]; then cp "$crate/$f" "$copy/"; fi
  done
  cp -R "$crate/src" "$copy/src"
  "$cg" instrument "$crate" -o "$diff"
  (cd "$copy" && patch -p1 -s <"$here/$diff")
  echo "  every addition sits behind #[cfg(feature = \"candle-graph-profile\")]: with that feature each"
  echo "  module's forward opens a profiler scope named by its path (docs/instrument.md)"
  local kind before after
  for kind in modules parameters; do
    before=$("$cg" query "$kind" --path "$crate" --limit 100000 --format tree 2>/dev/null)
    after=$("$cg" query "$kind" --path "$copy" --limit 100000 --format tree 2>/dev/null)
    if [[ "$before" != "$after" ]]; then
      echo "error: the instrumented copy's $kind differ from the original's" >&2
      diff <(echo "$before") <(echo "$after") >&2 || true
      return 1
    fi
    echo "  analysis of the copy: $(head -1 <<<"$after" | sed 's/:.* of /: /') (same as the original)"
  done
}

echo "== candle-graph check $crate (operation ids for the profiler)"
"$cg" check "$crate" --config "$crate/config.json" --output "$out/ir.json"
echo
instrument_demo
echo
echo "== profile-demo: stand-in workload (C++ matmuls/softmaxes, not a Candle run) -> $trace"
echo "   with each module's output statistics every 5 steps (numeric health; docs/instrument.md)"
"$demo" "$out/ir.json" "$crate/config.json" "$trace" 20 --stats-every 5
evidence=()
[[ -s "$trace" ]] && evidence=(--runtime-trace "$trace")
echo
echo "== candle-graph audit $out $crate ${evidence[*]}"
"$cg" audit "$out" "$crate" --config "$crate/config.json" "${evidence[@]}"
echo
echo "== written:"
ls -1 "$out" | sed "s|^|  $out/|"
