#pragma once
// Model Context Protocol server over stdio: JSON-RPC 2.0, one message per line. One tool per query
// kind; the analysis is computed once by the caller and every call is answered from it, paginated
// exactly like the CLI.
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "query/request.hpp"

namespace cg::query {

struct ToolSpec {
  std::string kind;  // query kind; the tool is named "query_<kind>"
  std::string description;
  bool takes_selector = false;
  bool requires_selector = false;
  bool takes_to = false;
  bool paginated = true;
};

class McpServer {
 public:
  // Answers a query with the JSON text of a `candle-graph/query/1` envelope; throws
  // cg::InputError for a selection problem (reported to the client as a tool error).
  using Answer = std::function<std::string(const QueryRequest&)>;

  McpServer(std::vector<ToolSpec> tools, Answer answer, std::string version);

  // Handles one JSON-RPC message; returns the response line without newline, or an empty string
  // for notifications.
  std::string handle(std::string_view message);

  // Reads messages until EOF; lines longer than kMaxMessageBytes are rejected with an error
  // response and skipped.
  void serve(std::istream& in, std::ostream& out);

  static constexpr std::size_t kMaxMessageBytes = 4u << 20;
  // The most text one tool result holds (an agent's context is the scarce resource).
  static constexpr std::size_t kMaxResultBytes = 64u << 10;

 private:
  std::string tools_list_result() const;
  const ToolSpec* find_tool(std::string_view name) const;

  std::vector<ToolSpec> tools_;
  Answer answer_;
  std::string version_;
};

}  // namespace cg::query
