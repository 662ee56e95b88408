// The MCP server reads whatever an agent sends: any bytes must yield a JSON-RPC answer, never a
// crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "query/mcp.hpp"
#include "util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static cg::query::McpServer server(
      {{"summary", "s", false, false, false, false}, {"path", "p", true, true, true, true}},
      [](const cg::query::QueryRequest& r) -> std::string {
        if (r.selector.size() % 2 == 1) throw cg::InputError("", "odd");
        return "{}";
      },
      "fuzz");
  std::string msg(reinterpret_cast<const char*>(data), size);
  (void)server.handle(msg);
  return 0;
}
