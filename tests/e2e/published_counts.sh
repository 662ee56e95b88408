#!/usr/bin/env bash
# The truth table: parameter totals of 37 candle-transformers models equal their published counts
# or differ by a hand-computed, stated amount (tools/published_counts.sh). Needs a candle checkout
# in CG_CANDLE_SRC; skipped (77) without one.
# Usage: published_counts.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
[ -n "${CG_CANDLE_SRC:-}" ] || { echo "CG_CANDLE_SRC not set: skipped"; exit 77; }
bash "$root/tools/published_counts.sh" "$cg" --check
