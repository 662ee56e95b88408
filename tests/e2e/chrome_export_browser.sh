#!/usr/bin/env bash
# `export --chrome` output loaded in headless chromium: every X event nests within its track, for
# a trace with module scopes around operations, one whose operations overlap without nesting, and
# both together as two ranks (two process tracks, the second's session starting 2 µs later).
# Usage: chrome_export_browser.sh <candle-graph binary> <repo root>
set -euo pipefail
bin="${1:?usage: chrome_export_browser.sh <candle-graph binary> <repo root>}"
root="${2:?}"
chromium="${CG_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "SKIPPED: $chromium not found (scripts/setup.sh installs the Debian chromium package)"
  exit 0
fi
[ -d "$root/node_modules/playwright-core" ] || {
  echo "FAILED: npm package playwright-core is missing; run scripts/setup.sh (npm ci)" >&2
  exit 1
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fixtures="$root/tests/runtime/fixtures"
meta="$(head -n 1 "$fixtures/v4_modules.jsonl")"
op() {  # op <id> <start> <duration>
  echo '{"kind":"operation","event_id":"'"$1"'","op":"matmul","static_id":"s","inputs":[],"step":0,"duration_ns":'"$3"',"start_ns":'"$2"',"thread":0}'
}
{
  echo "$meta"
  op infer-op-0-1 1000 2000
  op infer-op-0-2 2000 2000 # begins inside op 1, ends after it
  op infer-op-0-3 2500 100
  op infer-op-0-4 4500 100
  echo '{"kind":"end","operations":4,"edge_timings":0,"dropped":0,"errors":0,"open_operations":0,"threads":1,"duration_ns":5000}'
} >"$work/overlap.jsonl"
sed '1s/"start_unix_ns":1,"pid":7/"start_unix_ns":2001,"pid":8/' "$work/overlap.jsonl" >"$work/rank1.jsonl"
"$bin" export --chrome "$work/modules.json" --runtime-trace "$fixtures/v4_modules.jsonl" 2>/dev/null
"$bin" export --chrome "$work/overlap.json" --runtime-trace "$work/overlap.jsonl" 2>/dev/null
"$bin" export --chrome "$work/ranks.json" --runtime-trace "$fixtures/v4_modules.jsonl" \
  --runtime-trace "$work/rank1.jsonl" 2>/dev/null
# Two process tracks, the real pids (7 and 8), named by file.
grep -q '"name":"process_name","ph":"M","pid":8,"args":{"name":"candle-graph tiny::forward: rank1.jsonl' "$work/ranks.json" || {
  echo "FAILED: ranks.json has no process track for rank1.jsonl with pid 8" >&2
  exit 1
}
(cd "$root" && node tests/e2e/chrome_export_nesting.mjs "$work/modules.json" "$work/overlap.json" "$work/ranks.json")
