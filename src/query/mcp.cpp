#include "query/mcp.hpp"

#include <simdjson.h>

#include <algorithm>
#include <istream>
#include <optional>
#include <ostream>

#include "util/error.hpp"
#include "util/json_writer.hpp"

namespace cg::query {

namespace {

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;

// The id is echoed verbatim (string, number or null), so keep its raw JSON.
std::string error_response(std::string_view raw_id, int code, std::string_view message) {
  JsonWriter w(0);
  w.begin_object().field("jsonrpc", "2.0").key("id");
  if (raw_id.empty())
    w.null();
  else
    w.raw(raw_id);
  w.key("error").begin_object().field("code", code).field("message", message).end_object();
  w.end_object();
  return w.take();
}

std::string result_response(std::string_view raw_id, std::string_view result_json) {
  JsonWriter w(0);
  w.begin_object().field("jsonrpc", "2.0").key("id").raw(raw_id).key("result").raw(result_json);
  w.end_object();
  return w.take();
}

const char* kSupportedVersions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

// JSON-RPC ids are any JSON string or number and are echoed back exactly as sent. simdjson
// refuses integers beyond 64 bits (and re-spells numbers), so the id's raw token is found in the
// message text itself; a number is swapped for `0` before the message is parsed.
struct RawMember {
  std::size_t begin = 0, end = 0;  // the value's span in the message
};

std::size_t skip_ws(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
    ++i;
  return i;
}

// End of the string token starting at s[i] == '"', or npos.
std::size_t string_end(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\')
      ++i;
    else if (s[i] == '"')
      return i + 1;
  }
  return std::string_view::npos;
}

// End of the value starting at s[i]: a string, a nested object/array, or a scalar token.
std::size_t value_end(std::string_view s, std::size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') return string_end(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      if (s[i] == '"') {
        i = string_end(s, i);
        if (i == std::string_view::npos) return i;
        continue;
      }
      if (s[i] == '{' || s[i] == '[') ++depth;
      if (s[i] == '}' || s[i] == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return std::string_view::npos;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\t' &&
         s[i] != '\n' && s[i] != '\r')
    ++i;
  return i;
}

// The first top-level member named `key` of the object `s`, when `s` looks like one.
std::optional<RawMember> raw_member(std::string_view s, std::string_view key) {
  std::size_t i = skip_ws(s, 0);
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  i = skip_ws(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    const std::size_t key_end = string_end(s, i);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string_view k = s.substr(i + 1, key_end - i - 2);
    i = skip_ws(s, key_end);
    if (i >= s.size() || s[i] != ':') return std::nullopt;
    i = skip_ws(s, i + 1);
    const std::size_t v_end = value_end(s, i);
    if (v_end == std::string_view::npos) return std::nullopt;
    if (k == key) return RawMember{i, v_end};
    i = skip_ws(s, v_end);
    if (i >= s.size() || s[i] != ',') return std::nullopt;
    i = skip_ws(s, i + 1);
  }
  return std::nullopt;
}

// A JSON number token (RFC 8259 grammar), of any magnitude.
bool is_json_number(std::string_view t) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9')
      ++i;
    return i > start;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0')
    ++i;
  else if (!digits())
    return false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == t.size();
}

// A tool call's `arguments` into `req`; returns what is wrong with them ("" when nothing).
std::string read_arguments(simdjson::dom::object params, QueryRequest& req) {
  simdjson::dom::object args;
  if (params["arguments"].get_object().get(args) != simdjson::SUCCESS) return {};
  for (auto field : args) {
    std::string_view key = field.key;
    if (key == "select" || key == "to" || key == "root" || key == "config" || key == "dtype" ||
        key == "device_memory") {
      std::string_view v;
      if (field.value.get_string().get(v) != simdjson::SUCCESS)
        return std::string(key) + " must be a string";
      (key == "select"   ? req.selector
       : key == "to"     ? req.to
       : key == "root"   ? req.root
       : key == "dtype"  ? req.dtype
       : key == "config" ? req.config
                         : req.device_memory) = std::string(v);
    } else if (key == "context" || key == "batch") {
      std::uint64_t v = 0;
      if (field.value.get_uint64().get(v) != simdjson::SUCCESS || v == 0)
        return std::string(key) + " must be a positive integer";
      (key == "context" ? req.context : req.batch) = v;
    } else if (key == "weights" || key == "all_columns") {
      bool v = false;
      if (field.value.get_bool().get(v) != simdjson::SUCCESS)
        return std::string(key) + " must be true or false";
      (key == "weights" ? req.weights : req.all_columns) = v;
    } else if (key == "limit" || key == "offset" || key == "text_offset") {
      std::uint64_t v = 0;
      if (field.value.get_uint64().get(v) != simdjson::SUCCESS)
        return std::string(key) + " must be a non-negative integer";
      if (key == "limit" && v == 0) return "limit must be at least 1";
      (key == "limit"    ? req.limit
       : key == "offset" ? req.offset
                         : req.text_offset) = static_cast<std::size_t>(v);
    } else {
      return "unknown argument: " + std::string(key);
    }
  }
  return {};
}

// One page of a text answer longer than a tool result may be: from `offset`, at most
// kMaxResultBytes less room for the note, cut after the last newline that keeps at least half the
// page (else at a UTF-8 boundary), then a line saying where the rest continues. Empty when
// `offset` is past the end.
std::optional<std::string> text_page(const std::string& text, std::size_t offset) {
  if (offset > text.size()) return std::nullopt;
  constexpr std::size_t kNote = 256;
  const std::size_t room = McpServer::kMaxResultBytes - kNote;
  std::size_t end = std::min(text.size(), offset + room);
  if (end < text.size()) {
    const std::size_t nl = text.rfind('\n', end - 1);
    if (nl != std::string::npos && nl + 1 > offset + room / 2)
      end = nl + 1;
    else
      while (end > offset && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
        --end;
  }
  std::string page = text.substr(offset, end - offset);
  if (end < text.size() || offset > 0) {
    if (!page.empty() && page.back() != '\n') page += "\n";
    page += "[candle-graph: bytes " + std::to_string(offset) + "-" + std::to_string(end) + " of " +
            std::to_string(text.size()) + "; " + std::to_string(text.size() - end) + " left" +
            (end < text.size() ? ": call again with \"text_offset\": " + std::to_string(end) + "]"
                               : "]");
  }
  return page;
}

}  // namespace

McpServer::McpServer(std::vector<ToolSpec> tools, Answer answer, std::string version)
    : tools_(std::move(tools)), answer_(std::move(answer)), version_(std::move(version)) {}

const ToolSpec* McpServer::find_tool(std::string_view name) const {
  for (const auto& t : tools_)
    if ("query_" + t.kind == name) return &t;
  return nullptr;
}

std::string McpServer::tools_list_result() const {
  JsonWriter w(0);
  w.begin_object().key("tools").begin_array();
  for (const auto& t : tools_) {
    w.begin_object();
    w.field("name", "query_" + t.kind);
    w.field("description", t.description);
    w.key("inputSchema").begin_object().field("type", "object");
    w.key("properties").begin_object();
    if (t.takes_selector) {
      w.key("select").begin_object().field("type", "string");
      w.field("description",
              "exact stable id (preferred), exact qualified name or key, or a case-insensitive "
              "substring");
      w.end_object();
    }
    if (t.takes_to) {
      w.key("to").begin_object().field("type", "string");
      w.field("description", "the operation or tensor to reach (a stable id or a unique name)");
      w.end_object();
    }
    if (t.kind == "summary-table") {
      w.key("weights").begin_object().field("type", "boolean");
      w.field("description", "add a row per weight under each layer, with its shape");
      w.field("default", false).end_object();
      w.key("all_columns").begin_object().field("type", "boolean");
      w.field("description", "add Mult-Adds and Trainable even where every row is unknown");
      w.field("default", false).end_object();
    }
    if (t.kind == "memory") {
      w.key("context").begin_object().field("type", "integer").field("minimum", 1);
      w.field("description",
              "positions the KV cache holds (default: config.json's max_position_embeddings)");
      w.end_object();
      w.key("batch").begin_object().field("type", "integer").field("minimum", 1);
      w.field("default", 1).end_object();
      w.key("dtype").begin_object().field("type", "string");
      w.field("description", "F32, F16, BF16 … (default: config.json's torch_dtype, else F32)");
      w.end_object();
      w.key("device_memory").begin_object().field("type", "string");
      w.field("description", "a device size to fit, e.g. \"24GiB\", \"80GB\"");
      w.end_object();
    }
    if (t.paginated) {
      w.key("limit").begin_object().field("type", "integer").field("minimum", 1);
      w.field("default", 100).end_object();
      w.key("offset").begin_object().field("type", "integer").field("minimum", 0);
      w.field("default", 0).end_object();
    }
    w.key("root").begin_object().field("type", "string");
    w.field("description",
            "the model to answer about, by its Rust path (\"models::llama::Llama\") or a "
            "function taking a VarBuilder; each root's analysis is kept for later calls; default: "
            "the model the server was started on, else the whole crate");
    w.end_object();
    w.key("config").begin_object().field("type", "string");
    w.field("description",
            "path of a config.json to bind for concrete shapes and counts; default: the one the "
            "server was started with, if any");
    w.end_object();
    w.key("text_offset").begin_object().field("type", "integer").field("minimum", 0);
    w.field("description",
            "where to continue an answer longer than one result (64 KiB); the answer's last line "
            "gives it");
    w.field("default", 0).end_object();
    w.end_object();
    w.key("required").begin_array();
    if (t.requires_selector) w.value("select");
    if (t.takes_to) w.value("to");
    w.end_array();
    w.field("additionalProperties", false);
    w.end_object();
    w.end_object();
  }
  w.end_array().end_object();
  return w.take();
}

std::string McpServer::handle(std::string_view message) {
  // The id is echoed from its raw token (any magnitude, exact spelling); a number is parsed as 0.
  std::string text(message);
  std::string raw_token;  // the id as sent
  if (auto m = raw_member(message, "id")) {
    raw_token = std::string(message.substr(m->begin, m->end - m->begin));
    if (is_json_number(raw_token)) text.replace(m->begin, m->end - m->begin, "0");
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(text).get(doc) != simdjson::SUCCESS)
    return error_response({}, kParseError, "parse error: the message is not valid JSON");
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS)
    return error_response({}, kInvalidRequest, "invalid request: expected a JSON-RPC object");
  std::string raw_id;
  simdjson::dom::element id_el;
  bool has_id = obj["id"].get(id_el) == simdjson::SUCCESS;
  if (has_id) {
    if (!id_el.is_string() && !id_el.is_number() && !id_el.is_null())
      return error_response({}, kInvalidRequest, "invalid request: id must be a string or number");
    raw_id = raw_token.empty() ? simdjson::minify(id_el) : raw_token;
  }
  std::string_view method;
  if (obj["method"].get_string().get(method) != simdjson::SUCCESS)
    return error_response(raw_id, kInvalidRequest, "invalid request: missing string `method`");
  std::string_view jsonrpc;
  if (obj["jsonrpc"].get_string().get(jsonrpc) != simdjson::SUCCESS || jsonrpc != "2.0")
    return error_response(raw_id, kInvalidRequest, "invalid request: `jsonrpc` must be \"2.0\"");
  if (!has_id) return {};  // a notification (e.g. notifications/initialized): no response
  simdjson::dom::object params;
  bool has_params = obj["params"].get_object().get(params) == simdjson::SUCCESS;

  if (method == "initialize") {
    std::string version = kSupportedVersions[0];
    std::string_view asked;
    if (has_params && params["protocolVersion"].get_string().get(asked) == simdjson::SUCCESS) {
      for (const char* v : kSupportedVersions)
        if (asked == v) version = v;
    }
    JsonWriter w(0);
    w.begin_object().field("protocolVersion", version);
    w.key("capabilities").begin_object().key("tools").begin_object().field("listChanged", false);
    w.end_object().end_object();
    w.key("serverInfo").begin_object().field("name", "candle-graph").field("version", version_);
    w.end_object();
    w.field("instructions",
            "Query the static model IR of a Candle crate. Find a model with query_components "
            "{\"select\": \"llama\"}, then pass its Rust path as \"root\" to any tool "
            "(query_summary-table {\"root\": \"models::llama::Llama\"}); list with the plural "
            "tools, then follow each item's drill_down (a tool name and its arguments).");
    w.end_object();
    return result_response(raw_id, w.str());
  }
  if (method == "ping") return result_response(raw_id, "{}");
  if (method == "tools/list") return result_response(raw_id, tools_list_result());
  if (method != "tools/call")
    return error_response(raw_id, kMethodNotFound, "method not found: " + std::string(method));

  std::string_view name;
  if (!has_params || params["name"].get_string().get(name) != simdjson::SUCCESS)
    return error_response(raw_id, kInvalidParams, "tools/call needs params.name");
  const ToolSpec* tool = find_tool(name);
  if (tool == nullptr)
    return error_response(raw_id, kInvalidParams, "unknown tool: " + std::string(name));
  QueryRequest req;
  req.kind = tool->kind;
  if (std::string problem = read_arguments(params, req); !problem.empty())
    return error_response(raw_id, kInvalidParams, problem);
  if (tool->requires_selector && req.selector.empty())
    return error_response(raw_id, kInvalidParams, std::string(name) + " needs `select`");
  JsonWriter w(0);
  w.begin_object().key("content").begin_array().begin_object().field("type", "text");
  bool is_error = false;
  try {
    std::string answer = answer_(req);
    // Every result is bounded: a listing returns fewer records (its envelope's offset, returned
    // and total say what is left), any other answer is paged by text_offset.
    while (answer.size() > kMaxResultBytes && tool->paginated && req.limit > 1) {
      req.limit /= 2;
      answer = answer_(req);
    }
    if (answer.size() > kMaxResultBytes || req.text_offset > 0) {
      auto page = text_page(answer, req.text_offset);
      if (!page)
        throw InputError(
            "text_offset " + std::to_string(req.text_offset),
            "past the end of the answer (" + std::to_string(answer.size()) + " bytes)");
      answer = std::move(*page);
    }
    w.field("text", answer);
  } catch (const InputError& e) {
    w.field("text", e.what());
    is_error = true;
  }
  w.end_object().end_array().field("isError", is_error).end_object();
  return result_response(raw_id, w.str());
}

void McpServer::serve(std::istream& in, std::ostream& out) {
  std::string line;
  bool oversized = false;
  for (;;) {
    int c = in.get();
    if (c == std::char_traits<char>::eof() || c == '\n') {
      if (oversized) {
        out << error_response({}, kInvalidRequest, "message larger than 4 MiB") << "\n";
      } else if (line.find_first_not_of(" \t\r") != std::string::npos) {
        std::string reply = handle(line);
        if (!reply.empty()) out << reply << "\n";
      }
      out.flush();
      line.clear();
      oversized = false;
      if (c == std::char_traits<char>::eof()) return;
      continue;
    }
    if (line.size() >= kMaxMessageBytes)
      oversized = true;
    else
      line.push_back(static_cast<char>(c));
  }
}

}  // namespace cg::query
