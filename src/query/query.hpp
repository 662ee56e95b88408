#pragma once
// Every query kind, answered from one computed analysis: `candle-graph query KIND [SELECTOR]` and
// the MCP tools both call `answer_query`, which returns a `candle-graph/query/1` envelope,
// paginated with --limit/--offset.
// Listings are compact and deterministic (natural order), each item with a `drill_down` command;
// singular kinds (`parameter`, `operation`, …) return the full IR record and refuse an ambiguous
// selector, listing the candidates.
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/pipeline.hpp"
#include "query/mcp.hpp"
#include "query/request.hpp"

namespace cg::query {

using pipeline::Analysis;

// Canonical kinds in the order they are listed by --help and tools/list.
const std::vector<ToolSpec>& query_kinds();
// The same kinds as MCP tools, each described for an agent: what it is for, an example call (its
// JSON arguments) and what the answer holds; no command-line flag is named.
std::vector<ToolSpec> mcp_tools();

// "operations", "Operations", "graph_infer": dashes and underscores are the same.
// Throws cg::InputError listing the valid kinds for an unknown one.
std::string canonical_kind(std::string_view kind);

// What some kinds need beyond the IR.
struct QueryContext {
  std::string config_path;        // sizes `summary-table`
  std::string crate_path;         // `memory`: the crate's files (a quantized root's imports)
  std::string checkpoint_report;  // verify report JSON, answers `checkpoint`
  // Answering an MCP tool call: drill-downs and advice are tool calls (a tool name and its
  // arguments), not command lines.
  bool mcp = false;
};

// The JSON envelope; throws cg::InputError for a missing, ambiguous or unmatched selector.
std::string answer_query(const Analysis& a, const QueryRequest& req, const QueryContext& ctx = {});
// People's rendering of the same answer (`--format tree`): one line per item.
std::string answer_query_tree(const Analysis& a, const QueryRequest& req,
                              const QueryContext& ctx = {});

}  // namespace cg::query
