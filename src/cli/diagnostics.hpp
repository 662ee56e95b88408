#pragma once
// Rendering findings for people (rustc style), for tools (cargo --message-format json lines) and
// for code scanning (SARIF 2.1.0). Input is a flat list of diagnostics; the IR adapter lives with
// the command that owns the IR.
#include <cstdint>
#include <string>
#include <vector>

namespace cg::cli {

enum class Severity { error, warning, information };

struct Diagnostic {
  std::string id;    // the finding's stable id
  std::string rule;  // e.g. "dtype-conflict"
  Severity severity = Severity::warning;
  std::string confidence;  // proven | conditional | heuristic | unknown
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

}  // namespace cg::cli
