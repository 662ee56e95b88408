#pragma once
// Rendering findings for people (rustc style), for tools (cargo --message-format json lines) and
// for code scanning (SARIF 2.1.0). `diagnostics_of` turns the IR's findings into the flat list the
// renderers read; `render_diagnostics` is the one emitter every command uses.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/model.hpp"

namespace cg::cli {

using ir::Severity;

struct Diagnostic {
  std::string id;    // the finding's stable id
  std::string rule;  // e.g. "dtype-conflict"
  Severity severity = Severity::warning;
  ir::Confidence confidence = ir::Confidence::unknown;
  std::string message;
  std::string file;        // crate-relative; empty when the finding has no location
  std::uint32_t line = 0;  // 1-based; 0 = unknown
  std::uint32_t column = 0;
  std::vector<std::string> related;
};

// Splits "src/model.rs:42" or "src/model.rs:42:9" into file/line/column (a bare file keeps 0s).
void parse_source_location(const std::string& source, Diagnostic& into);

struct DiagnosticCounts {
  std::size_t errors = 0, warnings = 0, notes = 0;
};
DiagnosticCounts count(const std::vector<Diagnostic>& diags);

// rustc-like text, ending with one summary line.
std::string render_human(const std::vector<Diagnostic>& diags, bool color);
// One JSON object per line in the shape of `cargo --message-format json` compiler messages,
// followed by a `{"reason":"analysis-finished",...}` line.
std::string render_json_lines(const std::vector<Diagnostic>& diags, const std::string& package,
                              const std::string& manifest_path);
// A SARIF 2.1.0 log with one run; rules are listed once each, results keep input order.
std::string render_sarif(const std::vector<Diagnostic>& diags, const std::string& tool_version);

// The IR's findings as diagnostics: errors first, then warnings, then notes; stable within a
// severity (the IR's id order).
std::vector<Diagnostic> diagnostics_of(const ir::ModelIr& ir);

// The findings in one of the formats: "human" (rustc-like, `color` for a terminal), "json"
// (cargo message lines naming `package` and `manifest_path`) or "sarif".
struct RenderContext {
  std::string package;
  std::string manifest_path;
  std::string tool_version;
  bool color = false;
};
std::string render_diagnostics(const ir::ModelIr& ir, std::string_view format,
                               const RenderContext& ctx);

}  // namespace cg::cli
