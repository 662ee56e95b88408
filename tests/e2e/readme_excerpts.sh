#!/usr/bin/env bash
# The README's excerpts are the binary's real output, so they cannot go stale unnoticed.
# Usage: readme_excerpts.sh <candle-graph binary> <repo root>
set -euo pipefail
bash "$2/scripts/readme_excerpts.sh" "$1" --check
