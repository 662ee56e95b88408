#!/usr/bin/env bash
# One registry of rule ids (docs/diagnostics.md, "Rule registry"): every rule a finding can carry
# is listed there, so a user reading a code in their CI log can look it up. Checked two ways: the
# rules `check --all` raises on every fixture crate of the suite, and every runtime rule id the
# sources name.
# Usage: rule_registry.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$1"; root="$2"
fail() { echo "FAIL: $*"; exit 1; }
doc="$root/docs/diagnostics.md"
registry="$(sed -n '/^## Rule registry/,/^## /p' "$doc" | grep '^| `' | grep -oE '`[a-z]+(-[a-z]+)+`' | tr -d '`' | sort -u)"
[ "$(echo "$registry" | wc -l)" -ge 30 ] || fail "registry too short: $registry"
seen="$(mktemp)"; trap 'rm -f "$seen"' EXIT
for c in "$root"/tests/fixtures/crates/*/ "$root"/tests/fixtures/dataflow/*/ "$root"/examples/tiny-llama/; do
  [ -f "$c/Cargo.toml" ] || continue
  timeout 120 "$cg" check "$c" --all --message-format json -o /dev/null 2>&1 >/dev/null \
    | jq -r 'select(.reason == "compiler-message") | .message.code.code // empty' 2>/dev/null >>"$seen"
done
[ -s "$seen" ] || fail "no finding on any fixture: the harness is broken"
grep -rhoE '"runtime-[a-z-]+"' "$root/src" | tr -d '"' >>"$seen"
missing=""
for r in $(sort -u "$seen"); do
  echo "$registry" | grep -qx "$r" || missing+=" $r"
done
[ -z "$missing" ] || fail "rule ids raised but not in docs/diagnostics.md's registry:$missing"
echo "rule_registry: $(sort -u "$seen" | wc -l) rule ids seen, all registered"
