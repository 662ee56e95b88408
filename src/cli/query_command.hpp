#pragma once
// `candle-graph query KIND [SELECTOR]` and the MCP tools answer from the same function: a
// `candle-graph/query/1` envelope over one computed analysis, paginated with --limit/--offset.
#include <string>
#include <string_view>
#include <vector>

#include "cli/pipeline.hpp"
#include "query/mcp.hpp"
#include "query/request.hpp"

namespace cg::cli {

// Canonical kinds in the order they are listed by --help and tools/list.
const std::vector<query::ToolSpec>& query_kinds();

// "operations", "Operations" and "ops-list" style spellings: dashes and underscores are the same.
// Throws cg::InputError listing the valid kinds for an unknown one.
std::string canonical_kind(std::string_view kind);

// The JSON envelope; throws cg::InputError for a selector that matches nothing.
std::string answer_query(const Analysis& a, const query::QueryRequest& req);

}  // namespace cg::cli
