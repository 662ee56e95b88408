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

namespace {

// Every tool result fits an agent's context: a listing returns fewer records (its envelope says
// how many are left), a long text is paged and says where it continues, and the pages put back
// together are the whole answer.
TEST(McpBounds, EveryResultIsBoundedAndSaysWhatIsLeft) {
  const std::string table = [] {
    std::string t;
    for (int i = 0; i < 20000; ++i)
      t += "row " + std::to_string(i) + " of the summary table\n";
    return t;
  }();
  std::vector<cg::query::ToolSpec> tools = {
      {"summary-table", "the table", false, false, false, false},
      {"parameters", "a listing", true, false, false, true},
  };
  std::vector<cg::query::QueryRequest> seen;
  McpServer s(
      tools,
      [&](const cg::query::QueryRequest& r) -> std::string {
        seen.push_back(r);
        if (r.kind == "summary-table") return table;
        // 1 KB a record, 500 records: the default page of 100 is 100 KB.
        const std::size_t n = std::min<std::size_t>(r.limit, 500 - r.offset);
        return "{\"returned\":" + std::to_string(n) + ",\"total\":500,\"items\":\"" +
               std::string(n * 1024, 'x') + "\"}";
      },
      "0.1.0");
  simdjson::dom::parser p;
  auto call = [&](const std::string& args) {
    return std::string(
        parse(p, s.handle(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)" + args +
                          "}"))["result"]["content"]
            .at(0)["text"]
            .get_string()
            .value());
  };
  std::string listing = call(R"({"name":"query_parameters","arguments":{}})");
  EXPECT_LE(listing.size(), McpServer::kMaxResultBytes);
  EXPECT_NE(listing.find("\"total\":500"), std::string::npos);
  EXPECT_EQ(seen.back().limit, 50u) << "halved until the page fits";

  std::string whole;
  std::size_t offset = 0;
  for (int pages = 0; pages < 100; ++pages) {
    std::string page = call(R"({"name":"query_summary-table","arguments":{"text_offset":)" +
                            std::to_string(offset) + "}}");
    EXPECT_LE(page.size(), McpServer::kMaxResultBytes);
    const std::size_t note = page.rfind("[candle-graph: bytes ");
    ASSERT_NE(note, std::string::npos) << page.substr(0, 200);
    whole += page.substr(0, note);
    const std::size_t next = page.find("\"text_offset\": ", note);
    if (next == std::string::npos) {
      EXPECT_NE(page.find(" 0 left]"), std::string::npos) << page.substr(note);
      break;
    }
    offset = std::stoull(page.substr(next + 15));
  }
  EXPECT_EQ(whole, table) << "the pages put together are the answer";
  // Past the end is a tool error, not an empty page.
  auto past =
      parse(p, s.handle(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":)"
                        R"({"name":"query_summary-table","arguments":{"text_offset":99999999}}})"));
  EXPECT_TRUE(past["result"]["isError"].get_bool().value());
}

// `root` and `config` reach the answer, so an agent narrows to one model without a restart.
TEST(McpBounds, ACallNamesItsRootAndConfig) {
  std::vector<cg::query::ToolSpec> tools = {{"summary", "s", false, false, false, false}};
  cg::query::QueryRequest got;
  McpServer s(
      tools,
      [&](const cg::query::QueryRequest& r) -> std::string {
        got = r;
        return "{}";
      },
      "0.1.0");
  s.handle(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"query_summary",)"
           R"("arguments":{"root":"models::llama::Llama","config":"llama.json"}}})");
  EXPECT_EQ(got.root, "models::llama::Llama");
  EXPECT_EQ(got.config, "llama.json");
  simdjson::dom::parser p;
  auto list = parse(p, s.handle(R"({"jsonrpc":"2.0","id":"l","method":"tools/list"})"));
  auto props = list["result"]["tools"].at(0)["inputSchema"]["properties"];
  EXPECT_TRUE(props["root"].is_object());
  EXPECT_TRUE(props["config"].is_object());
  EXPECT_TRUE(props["text_offset"].is_object());
}

}  // namespace
