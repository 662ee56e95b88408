#include "cli/diagnostics.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

#include "util/json_writer.hpp"
#include "util/text.hpp"

namespace cg::cli {

namespace {

// rustc's level words; SARIF 2.1.0 uses the same three (error, warning, note).
std::string_view level_name(Severity s) {
  switch (s) {
    case Severity::error:
      return "error";
    case Severity::warning:
      return "warning";
    case Severity::information:
      return "note";
  }
  return "note";
}

bool parse_uint(std::string_view s, std::uint32_t& out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string location_text(const Diagnostic& d) {
  std::string loc = d.file;
  if (d.line > 0) loc += ":" + std::to_string(d.line);
  if (d.column > 0) loc += ":" + std::to_string(d.column);
  return loc;
}

std::string plural(std::size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

}  // namespace

void parse_source_location(const std::string& source, Diagnostic& into) {
  into.file = source;
  into.line = into.column = 0;
  // Peel up to two trailing numeric ":N" parts; Windows-style drive letters never occur because
  // IR paths are crate-relative.
  std::string_view rest(source);
  std::uint32_t nums[2] = {0, 0};
  int found = 0;
  while (found < 2) {
    auto colon = rest.rfind(':');
    if (colon == std::string_view::npos) break;
    std::uint32_t n = 0;
    if (!parse_uint(rest.substr(colon + 1), n)) break;
    nums[found++] = n;
    rest = rest.substr(0, colon);
  }
  into.file = std::string(rest);
  if (found == 1) into.line = nums[0];
  if (found == 2) {
    into.line = nums[1];
    into.column = nums[0];
  }
}

DiagnosticCounts count(const std::vector<Diagnostic>& diags) {
  DiagnosticCounts c;
  for (const auto& d : diags) {
    if (d.severity == Severity::error)
      ++c.errors;
    else if (d.severity == Severity::warning)
      ++c.warnings;
    else
      ++c.notes;
  }
  return c;
}

std::string render_human(const std::vector<Diagnostic>& diags, bool color) {
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  const char* blue = color ? "\x1b[1;34m" : "";
  auto level_color = [&](Severity s) -> const char* {
    if (!color) return "";
    switch (s) {
      case Severity::error:
        return "\x1b[1;31m";
      case Severity::warning:
        return "\x1b[1;33m";
      case Severity::information:
        return "\x1b[1;36m";
    }
    return "";
  };
  std::string out;
  for (const auto& d : diags) {
    out += level_color(d.severity);
    out += level_name(d.severity);
    out += reset;
    out += bold;
    out += ": " + terminal_safe(d.message);  // a key quoted from source may hold ESC or NUL
    out += reset;
    out += "\n";
    if (!d.file.empty()) {
      out += std::string(blue) + "  --> " + reset + terminal_safe(location_text(d)) + "\n";
    }
    out += std::string(blue) + "  = " + reset + "code: " + d.rule;
    out += " (" + std::string(ir::to_string(d.confidence)) + ")";
    out += "\n";
    out += std::string(blue) + "  = " + reset + "id: " + d.id + "\n\n";
  }
  auto c = count(diags);
  out += "candle-graph: " + plural(c.errors, "error") + ", " + plural(c.warnings, "warning") +
         ", " + plural(c.notes, "note") + "\n";
  return out;
}

std::string render_json_lines(const std::vector<Diagnostic>& diags, const std::string& package,
                              const std::string& manifest_path) {
  std::string out;
  for (const auto& d : diags) {
    JsonWriter w(0);
    w.begin_object();
    w.field("reason", "compiler-message");
    w.field("package_id", package);
    w.field("manifest_path", manifest_path);
    w.key("message").begin_object();
    w.field("message", d.message);
    w.key("code").begin_object().field("code", d.rule).key("explanation").null().end_object();
    w.field("level", level_name(d.severity));
    w.field("confidence", ir::to_string(d.confidence));
    w.field("id", d.id);
    w.key("spans").begin_array();
    if (!d.file.empty()) {
      std::uint32_t line = d.line == 0 ? 1 : d.line;
      std::uint32_t col = d.column == 0 ? 1 : d.column;
      w.begin_object();
      w.field("file_name", d.file);
      w.field("line_start", line).field("line_end", line);
      w.field("column_start", col).field("column_end", col);
      w.field("is_primary", true);
      w.key("label").null();
      w.end_object();
    }
    w.end_array();
    w.key("children").begin_array().end_array();
    std::vector<Diagnostic> one{d};
    std::string rendered = render_human(one, false);
    rendered = rendered.substr(0, rendered.find("\ncandle-graph: ") + 1);
    w.field("rendered", rendered);
    w.end_object();
    w.end_object();
    out += w.take();
    out += "\n";
  }
  auto c = count(diags);
  JsonWriter w(0);
  w.begin_object()
      .field("reason", "analysis-finished")
      .field("errors", static_cast<std::uint64_t>(c.errors))
      .field("warnings", static_cast<std::uint64_t>(c.warnings))
      .field("notes", static_cast<std::uint64_t>(c.notes))
      .end_object();
  out += w.take();
  out += "\n";
  return out;
}

std::string render_sarif(const std::vector<Diagnostic>& diags, const std::string& tool_version) {
  std::map<std::string, Severity> rules;
  for (const auto& d : diags)
    rules.emplace(d.rule, d.severity);
  JsonWriter w(2);
  w.begin_object();
  w.field("$schema", "https://json.schemastore.org/sarif-2.1.0.json");
  w.field("version", "2.1.0");
  w.key("runs").begin_array().begin_object();
  w.key("tool").begin_object().key("driver").begin_object();
  w.field("name", "candle-graph");
  w.field("version", tool_version);
  w.key("rules").begin_array();
  for (const auto& [rule, severity] : rules) {
    w.begin_object();
    w.field("id", rule);
    w.key("shortDescription").begin_object().field("text", rule).end_object();
    w.key("defaultConfiguration").begin_object().field("level", level_name(severity)).end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object().end_object();
  w.key("originalUriBaseIds").begin_object();
  w.key("%SRCROOT%").begin_object().field("uri", "").end_object();
  w.end_object();
  w.key("results").begin_array();
  for (const auto& d : diags) {
    w.begin_object();
    w.field("ruleId", d.rule);
    w.field("level", level_name(d.severity));
    w.key("message").begin_object().field("text", d.message).end_object();
    w.key("locations").begin_array();
    if (!d.file.empty()) {
      w.begin_object().key("physicalLocation").begin_object();
      w.key("artifactLocation").begin_object();
      w.field("uri", d.file).field("uriBaseId", "%SRCROOT%");
      w.end_object();
      if (d.line > 0) {
        w.key("region").begin_object().field("startLine", d.line);
        if (d.column > 0) w.field("startColumn", d.column);
        w.end_object();
      }
      w.end_object().end_object();
    }
    w.end_array();
    w.key("partialFingerprints").begin_object().field("candleGraphId/v1", d.id).end_object();
    w.key("properties")
        .begin_object()
        .field("confidence", ir::to_string(d.confidence))
        .end_object();
    w.end_object();
  }
  w.end_array();
  w.end_object().end_array();
  w.end_object();
  return w.take() + "\n";
}

std::vector<Diagnostic> diagnostics_of(const ir::ModelIr& ir) {
  std::vector<Diagnostic> out;
  for (const auto& f : ir.findings) {
    Diagnostic d{.id = f.id,
                 .rule = f.rule,
                 .severity = f.severity,
                 .confidence = f.confidence,
                 .message = f.message,
                 .file = {},
                 .line = 0,
                 .column = 0,
                 .related = f.related};
    if (f.source) parse_source_location(*f.source, d);
    out.push_back(std::move(d));
  }
  std::stable_sort(out.begin(), out.end(), [](const Diagnostic& x, const Diagnostic& y) {
    return static_cast<int>(x.severity) < static_cast<int>(y.severity);
  });
  return out;
}

std::string render_diagnostics(const ir::ModelIr& ir, std::string_view format,
                               const RenderContext& ctx) {
  auto diags = diagnostics_of(ir);
  if (format == "json") return render_json_lines(diags, ctx.package, ctx.manifest_path);
  if (format == "sarif") return render_sarif(diags, ctx.tool_version);
  return render_human(diags, ctx.color);
}

}  // namespace cg::cli
