#!/usr/bin/env bash
# Sound findings through the real binary: correct numeric code (softplus, x² + ε, rms with an ε,
# guarded logs, division by ones) raises no proven error, so `check` passes on it; code that fails
# on every execution (log or recip of zeros) raises one proven error per function.
# Usage: soundness.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
fx="$root/tests/fixtures/soundness"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$cg" check "$fx/correct" -o "$work/correct.json" 2>"$work/correct.err"; rc=$?
[ "$rc" -eq 0 ] || fail "check of correct code exits $rc ($(grep -E '^(error|warning)' "$work/correct.err"))"
n=$(jq '[.findings[] | select(.confidence == "proven" and (.rule | test("numeric|zero-times|unstable")))] | length' "$work/correct.json")
[ "$n" -eq 0 ] || fail "correct code has $n proven numeric findings"
n=$(jq '[.findings[] | select(.rule | test("numeric|zero-times|unstable"))] | length' "$work/correct.json")
[ "$n" -eq 0 ] || fail "correct code has $n numeric findings ($(grep -E '^warning' "$work/correct.err"))"
# The functions were analyzed at all (an empty graph would pass the checks above).
n=$(jq '[.operations[] | select(.name == "log")] | length' "$work/correct.json")
[ "$n" -ge 4 ] || fail "expected the correct crate's log operations in the graph, found $n"

"$cg" check "$fx/broken" -o "$work/broken.json" 2>"$work/broken.err"; rc=$?
[ "$rc" -eq 1 ] || fail "check of always-failing code exits $rc, expected 1"
for fn in log_of_zeros recip_of_zeros log_of_scaled_zero; do
  jq -e --arg fn "$fn" '[.findings[] | select(.confidence == "proven" and .severity == "error")
      | .related[] | select(contains($fn))] | length > 0' "$work/broken.json" >/dev/null \
    || fail "no proven error for $fn ($(grep -E '^error' "$work/broken.err"))"
done
echo "soundness: all cases passed"
