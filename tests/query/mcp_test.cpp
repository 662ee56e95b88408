#include "query/mcp.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <sstream>

#include "util/error.hpp"

namespace {

using cg::query::McpServer;

McpServer server() {
  std::vector<cg::query::ToolSpec> tools = {
      {"summary", "one-screen summary", false, false, false, false},
      {"parameter", "one parameter", true, true, false, false},
  };
  return McpServer(
      tools,
      [](const cg::query::QueryRequest& r) -> std::string {
        if (r.selector == "ambiguous") throw cg::InputError("", "2 parameters match `ambiguous`");
        return "{\"kind\":\"" + r.kind + "\",\"selector\":\"" + r.selector + "\"}";
      },
      "0.1.0");
}

simdjson::dom::element parse(simdjson::dom::parser& p, const std::string& s) {
  return p.parse(s).value();
}

TEST(Mcp, InitializeListCall) {
  auto s = server();
  simdjson::dom::parser p;
  auto init = parse(p, s.handle(R"({"jsonrpc":"2.0","id":1,"method":"initialize",)"
                                R"("params":{"protocolVersion":"2024-11-05"}})"));
  EXPECT_EQ(init["result"]["protocolVersion"].get_string().value(), "2024-11-05");
  EXPECT_EQ(s.handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"), "");
  auto list = parse(p, s.handle(R"({"jsonrpc":"2.0","id":"a","method":"tools/list"})"));
  EXPECT_EQ(list["id"].get_string().value(), "a");
  auto tools = list["result"]["tools"].get_array().value();
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools.at(1)["inputSchema"]["required"].at(0).get_string().value(), "select");
  auto call = parse(p, s.handle(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":)"
                                R"({"name":"query_parameter","arguments":{"select":"w"}}})"));
  EXPECT_FALSE(call["result"]["isError"].get_bool().value());
  EXPECT_EQ(call["result"]["content"].at(0)["text"].get_string().value(),
            R"({"kind":"parameter","selector":"w"})");
}

TEST(Mcp, SelectionProblemsAreToolErrorsNotProtocolErrors) {
  auto s = server();
  simdjson::dom::parser p;
  auto r = parse(p, s.handle(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":)"
                             R"({"name":"query_parameter","arguments":{"select":"ambiguous"}}})"));
  EXPECT_TRUE(r["result"]["isError"].get_bool().value());
}

TEST(Mcp, MalformedRequestsGetJsonRpcErrors) {
  auto s = server();
  simdjson::dom::parser p;
  auto code = [&](const std::string& msg) {
    return parse(p, s.handle(msg))["error"]["code"].get_int64().value();
  };
  EXPECT_EQ(code("{not json"), -32700);
  EXPECT_EQ(code("[1,2]"), -32600);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1})"), -32600);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":"nope"})"), -32601);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}})"),
            -32602);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)"
                 R"({"name":"query_parameter","arguments":{}}})"),
            -32602);
  EXPECT_EQ(code(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)"
                 R"({"name":"query_summary","arguments":{"limit":0}}})"),
            -32602);
}

TEST(Mcp, ServeAnswersEachLineAndSurvivesGarbage) {
  auto s = server();
  std::istringstream in(
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\ngarbage\n"
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
  std::ostringstream out;
  s.serve(in, out);
  std::istringstream lines(out.str());
  std::string line;
  int n = 0;
  while (std::getline(lines, line))
    ++n;
  EXPECT_EQ(n, 3) << out.str();
}

}  // namespace

namespace {

TEST(McpBounds, AnOversizedMessageIsAnErrorAndTheNextOneIsServed) {
  auto s = server();
  std::string big(McpServer::kMaxMessageBytes + 10, 'x');
  std::istringstream in(big + "\n" + R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})" + "\n");
  std::ostringstream out;
  s.serve(in, out);
  std::string text = out.str();
  auto nl = text.find('\n');
  ASSERT_NE(nl, std::string::npos) << text;
  std::string first = text.substr(0, nl), second = text.substr(nl + 1);
  EXPECT_NE(first.find("\"error\""), std::string::npos) << first;
  EXPECT_LT(first.size(), 1000u) << "the reply does not echo the oversized message";
  EXPECT_NE(second.find("\"id\":7"), std::string::npos) << second;
  EXPECT_NE(second.find("query_summary"), std::string::npos) << second;
}

}  // namespace

// JSON-RPC ids are any JSON number or string; the client matches answers by the exact id it sent.
TEST(Mcp, IdsOfAnyMagnitudeAndSpellingAreEchoedExactly) {
  cg::query::McpServer s(
      {}, [](const cg::query::QueryRequest&) { return std::string("{}"); }, "0.1.0");
  for (std::string id :
       {"18446744073709551616", "-99999999999999999999999", "1.50", "1e400", "\"a\\u0041\"", "0"}) {
    std::string reply = s.handle(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"ping"})");
    EXPECT_EQ(reply, R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{}})") << id;
  }
  // Not a number token: still a parse error, answered with a null id.
  EXPECT_NE(s.handle(R"({"jsonrpc":"2.0","id":01,"method":"ping"})").find("-32700"),
            std::string::npos);
}
