#!/usr/bin/env bash
# `query` and `mcp` as a user and an agent run them on the bundled example: envelope, pagination,
# selection, bad input listing the valid choices, and the JSON-RPC error for a malformed request.
# Usage: cli_query.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$(realpath "$1")"; root="$2"
crate="$root/examples/tiny-llama"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$cg" query summary --path "$crate" >"$work/s.json" 2>"$work/err" || fail "query summary exited $?"
grep -q '"schema": "candle-graph/query/1"' "$work/s.json" || fail "query envelope schema"
grep -q '"functions"' "$work/s.json" || fail "summary counts functions"

# An unknown kind is rejected before analysis, even with no crate here.
(cd "$work" && "$cg" query bogus >/dev/null 2>"$work/err0"); grep -q "valid kinds" "$work/err0" || fail "unknown kind checked before the crate"

# Pagination: --limit 1 returns one record and says the listing is truncated.
"$cg" query functions --path "$crate" --limit 1 >"$work/f.json" 2>"$work/err" || fail "query functions exited $?"
grep -q '"returned": 1' "$work/f.json" || fail "--limit 1 returned one record"
grep -q '"truncated": true' "$work/f.json" || fail "--limit 1 is truncated"
grep -q '"drill_down": "candle-graph query function ' "$work/f.json" || fail "drill_down command"

# Dashes/underscores and case in the kind are accepted.
"$cg" query FUNCTIONS --path "$crate" --limit 1 >/dev/null 2>&1 || fail "kind case not accepted"

# Selector: a substring that names the forward function finds it.
"$cg" query functions forward --path "$crate" >"$work/g.json" 2>/dev/null || fail "selector forward"
grep -q 'TinyLlama::forward' "$work/g.json" || fail "selector forward finds TinyLlama::forward"

# Bad input: exit 2 and the valid choices.
"$cg" query nonsense --path "$crate" >/dev/null 2>"$work/err"; rc=$?
[ $rc -eq 2 ] || fail "unknown kind exit $rc"
grep -q 'valid kinds: summary' "$work/err" || fail "unknown kind lists the valid kinds"
"$cg" query functions no-such-thing-xyz --path "$crate" >/dev/null 2>"$work/err"; rc=$?
[ $rc -eq 2 ] || fail "no match exit $rc"
"$cg" query functions --path "$crate" --limit 0 >/dev/null 2>"$work/err"; rc=$?
[ $rc -eq 2 ] || fail "--limit 0 exit $rc"
"$cg" query summary --path "$work/nowhere" >/dev/null 2>"$work/err"; rc=$?
[ $rc -eq 2 ] || fail "missing crate exit $rc"

# MCP: initialize, tools/list, tools/call, malformed request.
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"query_functions","arguments":{"limit":1}}}' \
  '{not json' \
  | "$cg" mcp --path "$crate" >"$work/mcp.out" 2>"$work/mcp.err" || fail "mcp exited $?"
[ "$(wc -l <"$work/mcp.out")" -eq 4 ] || fail "mcp answered $(wc -l <"$work/mcp.out") of 4 lines"
sed -n 2p "$work/mcp.out" | grep -q '"query_parameters"' || fail "tools/list has query_parameters"
sed -n 3p "$work/mcp.out" | grep -q 'candle-graph/query/1' || fail "tools/call answers an envelope"
sed -n 4p "$work/mcp.out" | grep -q '"code":-32700' || fail "malformed line -> parse error"
echo "ok"
