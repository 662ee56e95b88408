#!/usr/bin/env bash
# Issue 37, what a newcomer and an agent notice: `summary` fits 120 columns with weight rows and
# all-unknown columns on request; MCP tools describe themselves for an agent (what for, an example
# call, what the answer holds, no command-line flag) and their drill-downs are tool calls. With
# CG_CANDLE_SRC (a candle checkout): the same on candle-transformers' llama, a model found by its
# Rust path from the CLI and from MCP, `query_components "llama"` naming models::llama::Llama
# (built inside llava), and `query_parameters "self_attn.q_proj"` saying whose each key is.
# Usage: newcomer.sh <candle-graph binary> <repo root>
set -uo pipefail
cg="$(realpath "$1")"; root="$2"
crate="$root/examples/tiny-llama"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Display columns of the widest line (characters, not bytes: the tree glyphs are 3 bytes each).
widest() { node -e 'console.log(Math.max(0, ...require("fs").readFileSync(process.argv[1], "utf8").split("\n").map((l) => [...l].length)))' "$1"; }
export LC_ALL=C.UTF-8

# --- summary: 120 columns, weights and unknown columns on request ---------------------------------
"$cg" summary "$crate" >"$work/s.txt" 2>/dev/null || fail "summary exited $?"
[ "$(widest "$work/s.txt")" -le 120 ] || fail "summary is $(widest "$work/s.txt") columns wide"
grep -q '└─weight' "$work/s.txt" && fail "summary shows weight rows by default"
grep -q 'Not shown: .* weight rows (--weights shows them)' "$work/s.txt" || fail "summary says weights are hidden"
"$cg" summary "$crate" --weights >"$work/sw.txt" 2>/dev/null || fail "summary --weights exited $?"
grep -q '└─weight' "$work/sw.txt" || fail "summary --weights shows weight rows"
[ "$(widest "$work/sw.txt")" -le 120 ] || fail "summary --weights is $(widest "$work/sw.txt") columns wide"
"$cg" summary --help | grep -q -- '--weights' || fail "summary --help lists --weights"
"$cg" summary --help | grep -q -- '--all-columns' || fail "summary --help lists --all-columns"

# --- MCP: descriptions for an agent, drill-downs as tool calls ------------------------------------
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query_parameters","arguments":{"select":"q_proj","limit":2}}}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"query_summary-table","arguments":{}}}' \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"query_doctor","arguments":{}}}' \
  | "$cg" mcp --path "$crate" >"$work/mcp.out" 2>"$work/mcp.err" || fail "mcp exited $?"
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const fail = (m) => { console.log("FAIL: " + m); process.exit(1); };
  for (const t of lines[0].result.tools) {
    const d = t.description;
    if (!/Example: \{/.test(d)) fail(t.name + " gives no example call: " + d);
    if (!/Answer: /.test(d)) fail(t.name + " does not say what the answer holds: " + d);
    if (/(^|\s)--[a-z]/.test(d)) fail(t.name + " speaks of a command-line flag: " + d);
    for (const [k, p] of Object.entries(t.inputSchema.properties))
      if (/(^|\s)--[a-z]/.test(p.description || "")) fail(t.name + "." + k + " speaks of a flag: " + p.description);
  }
  const params = JSON.parse(lines[1].result.content[0].text);
  for (const it of params.items) {
    if (typeof it.drill_down !== "object" || it.drill_down.tool !== "query_parameter" ||
        it.drill_down.arguments.select !== it.id) fail("drill_down is no MCP call: " + JSON.stringify(it.drill_down));
    if (!it.component) fail("a parameter does not say its component: " + JSON.stringify(it));
  }
  const table = JSON.parse(lines[2].result.content[0].text).items[0].text;
  if (/--weights|--config/.test(table)) fail("the MCP summary table speaks of flags:\n" + table);
  if (!/"weights": true/.test(table)) fail("the MCP summary table does not say how to get weight rows");
  const doctor = JSON.stringify(JSON.parse(lines[3].result.content[0].text));
  if (/ --[a-z]|candle-graph query/.test(doctor)) fail("MCP doctor advice is a command line: " + doctor);
' "$work/mcp.out" || exit 1

# --- on candle-transformers ------------------------------------------------------------------------
if [ -z "${CG_CANDLE_SRC:-}" ]; then
  echo "ok (candle-transformers checks SKIPPED: CG_CANDLE_SRC not set)"
  exit 0
fi
ct="$CG_CANDLE_SRC/candle-transformers"
"$cg" summary "$ct" --root models::llama::Llama >"$work/l.txt" 2>/dev/null || fail "summary --root models::llama::Llama exited $?"
[ "$(widest "$work/l.txt")" -le 120 ] || fail "llama summary is $(widest "$work/l.txt") columns wide"
grep -q '└─weight' "$work/l.txt" && fail "llama summary shows weight rows by default"
grep -q '^Module (type).*Trainable' "$work/l.txt" && fail "llama summary shows a Trainable column of ?"
grep -q '└─model.layers.{i} × cfg.num_hidden_layers (Block)' "$work/l.txt" || fail "llama summary rows"
"$cg" summary "$ct" --root models::llama::Llama --weights --all-columns >"$work/lw.txt" 2>/dev/null || fail "summary --weights exited $?"
[ "$(widest "$work/lw.txt")" -le 120 ] || fail "llama summary --weights is $(widest "$work/lw.txt") columns wide"
grep -q '^Module (type).*Trainable' "$work/lw.txt" || fail "--all-columns shows Trainable"
# q_proj's shape is wider than its column: it continues on the lines under it, whole.
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n");
  const i = lines.findIndex((l) => l.includes("[(cfg.hidden_size")), col = lines[i].indexOf("[(");
  const parts = [lines[i].slice(col).split(/  +/)[0]];
  for (let j = i + 1; j < lines.length && lines[j].slice(0, col).trim() === ""; j++) parts.push(lines[j].slice(col).trim());
  const shape = parts.join(" ");
  if (shape !== "[(cfg.hidden_size / cfg.num_attention_heads) * cfg.num_attention_heads, cfg.hidden_size]") {
    console.log("FAIL: --weights does not wrap q_proj shape whole: " + shape); process.exit(1);
  }' "$work/lw.txt" || exit 1
"$cg" query component models::llama::Llama --path "$ct" --root models::llama::Llama >/dev/null 2>&1 \
  || fail "the CLI does not find a root by its Rust path"
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query_components","arguments":{"select":"llama"}}}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query_parameters","arguments":{"select":"self_attn.q_proj","limit":200}}}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"query_component","arguments":{"select":"models::llama::Llama","root":"models::llama::Llama"}}}' \
  | "$cg" mcp --path "$ct" >"$work/ct.out" 2>"$work/ct.err" || fail "mcp on candle-transformers exited $?"
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
  const fail = (m) => { console.log("FAIL: " + m); process.exit(1); };
  const comps = JSON.parse(lines[0].result.content[0].text);
  const nested = (comps.built_inside_other_components || []).map((x) => x.name);
  if (!nested.includes("models::llama::Llama")) fail("query_components llama does not name models::llama::Llama: " + JSON.stringify(comps).slice(0, 2000));
  const llama = comps.built_inside_other_components.find((x) => x.name === "models::llama::Llama");
  if (llama.drill_down.arguments.root !== "models::llama::Llama") fail("its drill_down does not analyse it as the root");
  const params = JSON.parse(lines[1].result.content[0].text);
  const owners = new Set(params.items.map((x) => x.component));
  if (owners.size < 2 || owners.has(undefined)) fail("query_parameters does not say whose each key is: " + [...owners]);
  if (lines[2].result.isError) fail("query_component by Rust path with that root: " + lines[2].result.content[0].text);
' "$work/ct.out" || exit 1
echo "ok"
