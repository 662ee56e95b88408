#!/usr/bin/env bash
# The README's excerpts are real output. Each block between `<!-- excerpt NAME -->` and
# `<!-- /excerpt -->` is a fenced block holding `$ COMMAND` and what the command prints; this
# script runs each command (with the given binary standing for `candle-graph`, in the repository
# root) and rewrites the block, or with --check fails, showing the difference, when the README is
# stale (a test runs that).
# Usage: readme_excerpts.sh BIN [--check]
set -euo pipefail
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
mode="${2:-write}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
new="$(mktemp)"; trap 'rm -f "$new"' EXIT
in_block=0
while IFS= read -r line || [ -n "$line" ]; do
  if [ "$in_block" -eq 1 ]; then
    # Inside a block: the command line is kept, everything else is regenerated.
    if [[ "$line" == '$ candle-graph '* ]]; then
      cmd="${line#\$ candle-graph }"
    elif [[ "$line" == '<!-- /excerpt -->' ]]; then
      [ -n "$cmd" ] || { echo "readme_excerpts: a block has no \`\$ candle-graph\` line" >&2; exit 2; }
      printf '```\n$ candle-graph %s\n' "$cmd" >>"$new"
      # shellcheck disable=SC2086
      "$bin" $cmd >>"$new" 2>&1 || { echo "readme_excerpts: \`candle-graph $cmd\` failed" >&2; exit 2; }
      printf '```\n%s\n' "$line" >>"$new"
      in_block=0
    fi
    continue
  fi
  printf '%s\n' "$line" >>"$new"
  if [[ "$line" == '<!-- excerpt '*' -->' ]]; then in_block=1; cmd=""; fi
done <README.md
if [ "$mode" = "--check" ]; then
  diff -u README.md "$new" || { echo "README.md excerpts are stale: run scripts/readme_excerpts.sh BIN" >&2; exit 1; }
  echo "README excerpts: up to date"
else
  cp "$new" README.md
fi
