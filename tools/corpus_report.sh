#!/usr/bin/env bash
# How the analysis fares on real crates: one line per crate with its source files, components,
# parameters, leaves by certainty, `structure-unresolved` findings, proven errors, wall time and
# peak memory of `candle-graph check`.
#
#   tools/corpus_report.sh BIN CRATE_DIR [CRATE_DIR…]
#
# Each CRATE_DIR is a crate (its Cargo.toml); point it at your own checkouts, e.g. a candle
# checkout's candle-transformers. Needs jq and GNU time (/usr/bin/time).
set -uo pipefail
bin="$1"
shift
printf '%-28s %6s %6s %8s %8s %8s %8s %6s %6s %8s %8s\n' crate files comps params certain \
  cond unknown unres proven seconds peakMiB
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for dir in "$@"; do
  name="$(basename "$dir")"
  files=$(find "$dir/src" -name '*.rs' 2>/dev/null | wc -l)
  /usr/bin/time -f '%e %M' -o "$work/time" "$bin" check "$dir" -o "$work/ir.json" \
    2>"$work/err" >/dev/null
  rc=$?
  if [ ! -s "$work/ir.json" ]; then
    printf '%-28s failed (exit %s): %s\n' "$name" "$rc" "$(grep -v '^Command' "$work/err" | head -1)"
    continue
  fi
  read -r secs kib <"$work/time"
  jq -r --arg name "$name" --arg files "$files" --arg secs "$secs" --arg kib "$kib" '
    [ $name, $files, (.components | length), (.parameters | length),
      ([.parameters[] | select(.confidence == "proven")] | length),
      ([.parameters[] | select(.confidence == "conditional")] | length),
      ([.parameters[] | select(.confidence == "unknown" or .confidence == "heuristic")] | length),
      ([.findings[] | select(.rule == "structure-unresolved")] | length),
      ([.findings[] | select(.severity == "error" and .confidence == "proven")] | length),
      $secs, (($kib | tonumber) / 1024 | floor) ] | @tsv' "$work/ir.json" |
    awk -F'\t' '{ printf "%-28s %6s %6s %8s %8s %8s %8s %6s %6s %8s %8s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11 }'
  rm -f "$work/ir.json"
done
