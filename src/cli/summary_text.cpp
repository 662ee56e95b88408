#include "cli/summary_text.hpp"

#include "cli/diagnostics.hpp"

namespace cg::cli {

std::string render_summary(const pipeline::Analysis& a) {
  const ir::ModelIr& ir = a.ir;
  std::string out;
  out += "crate:        " + a.package_id + "\n";
  out += "analysis id:  " + ir.analysis_id + "\n";
  if (ir.cargo) {
    out += "target:       " + ir.cargo->selected_target.value_or("?") + "\n";
    std::string feats;
    for (const auto& f : ir.cargo->active_features)
      feats += (feats.empty() ? "" : ", ") + f;
    out += "features:     " + (feats.empty() ? std::string("(none)") : feats) + "\n";
    std::string candle;
    for (const auto& [k, v] : ir.cargo->candle_packages)
      candle += (candle.empty() ? "" : ", ") + k + " " + v;
    out +=
        "candle:       " + (candle.empty() ? std::string("(no candle dependency)") : candle) + "\n";
  }
  out += "sources:      " + std::to_string(a.files) + " files, " + std::to_string(a.items) +
         " items, " + std::to_string(a.files_with_syntax_errors) + " with syntax errors\n";
  out += "functions:    " + std::to_string(ir.coverage.functions) + " (" +
         std::to_string(ir.coverage.entrypoints) + " entrypoints)\n";
  for (const auto& comp : ir.components) {
    std::size_t proven = 0, cond = 0, unknown = 0, concrete = 0;
    std::uint64_t elements = 0;
    for (const auto& p : ir.parameters) {
      if (p.component != comp.id) continue;
      if (p.confidence == ir::Confidence::proven)
        ++proven;
      else if (p.confidence == ir::Confidence::conditional)
        ++cond;
      else
        ++unknown;
      if (p.shape) {
        ++concrete;
        std::uint64_t n = 1;
        for (auto d : *p.shape)
          n *= d;
        elements += n;
      }
    }
    std::size_t leaves = proven + cond + unknown;
    out += "component:    " + comp.qualified_name + ": " + std::to_string(leaves) +
           " parameters (" + std::to_string(proven) + " certain, " + std::to_string(cond) +
           " conditional, " + std::to_string(unknown) + " unknown)";
    if (leaves > 0 && concrete == leaves)
      out += ", " + std::to_string(elements) + " elements";
    else if (leaves > 0)
      out += ", shapes symbolic (bind --config)";
    out += "\n";
  }
  auto c = count(diagnostics_of(ir));
  out += "findings:     " + std::to_string(c.errors) + " errors, " + std::to_string(c.warnings) +
         " warnings, " + std::to_string(c.notes) + " notes\n";
  std::string eps;
  for (const auto& f : ir.functions)
    if (f.is_entrypoint) eps += "  " + f.qualified_name + "  @" + f.source + "\n";
  if (!eps.empty()) out += "entrypoints:\n" + eps;
  for (const auto& t : a.traces) {
    out += "trace:        " + t.path + ": " + std::to_string(t.operations) + " operations, " +
           std::to_string(t.edge_timings) + " edge timings";
    if (t.stats > 0) out += ", " + std::to_string(t.stats) + " stats records";
    if (t.skipped_lines > 0) out += ", " + std::to_string(t.skipped_lines) + " bad lines skipped";
    if (t.truncated) out += ", TRUNCATED (no end record)";
    for (const auto& rejected : a.rejected_traces)
      if (rejected == t.path) out += ", NOT MERGED (identity mismatch: see the findings)";
    out += "\n";
  }
  return out;
}

}  // namespace cg::cli
