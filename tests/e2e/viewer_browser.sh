#!/usr/bin/env bash
# Browser test of the HTML viewer in headless Debian chromium (viewer/tests/browser.mjs): expand,
# search, finding focus, view switches, XSS inertness, no network request. Screenshots are kept
# in <build dir>/viewer-screenshots as test artifacts.
# Usage: viewer_browser.sh <candle-graph binary> <repo root>
set -euo pipefail
root="${2:?usage: viewer_browser.sh <candle-graph binary> <repo root>}"
chromium="${CG_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "SKIPPED: $chromium not found (scripts/setup.sh installs the Debian chromium package)"
  exit 0
fi
if [ ! -d "$root/node_modules/playwright-core" ] || [ ! -d "$root/node_modules/@dagrejs/dagre" ]; then
  echo "FAILED: npm packages playwright-core and @dagrejs/dagre are missing; run scripts/setup.sh (npm ci)" >&2
  exit 1
fi
out="$PWD/viewer-screenshots"
exec node "$root/viewer/tests/browser.mjs" "$out"
