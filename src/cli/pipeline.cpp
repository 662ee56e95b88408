#include "cli/pipeline.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "analysis/config_values.hpp"
#include "analysis/dataflow.hpp"
#include "analysis/inventory.hpp"
#include "analysis/layer_catalog.hpp"
#include "analysis/op_catalog.hpp"
#include "ir/stable_id.hpp"
#include "runtime/merge_ir.hpp"
#include "rust/crate.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace cg::cli {

namespace fs = std::filesystem;

namespace {

ir::Visibility visibility_of(rust::Visibility v) {
  switch (v) {
    case rust::Visibility::Public:
      return ir::Visibility::public_;
    case rust::Visibility::Crate:
      return ir::Visibility::crate;
    case rust::Visibility::Restricted:
      return ir::Visibility::restricted;
    case rust::Visibility::Private:
      return ir::Visibility::private_;
  }
  return ir::Visibility::unknown;
}

// A tensor signature: `Tensor`, `&Tensor`, `Result<Tensor>`, `&Var` as whole tokens.
bool mentions_tensor(const std::string& type_text) {
  return contains_word(type_text, "Tensor") || contains_word(type_text, "Var");
}

std::string last_segment(const std::string& path) {
  auto sep = path.rfind("::");
  std::string leaf = sep == std::string::npos ? path : path.substr(sep + 2);
  return leaf.substr(0, leaf.find('<'));
}

}  // namespace

Analysis analyze(const CrateOptions& opts, const EvidenceOptions& evidence) {
  std::error_code ec;
  if (!fs::exists(opts.path, ec))
    throw InputError(opts.path,
                     "no such file or directory; expected a crate directory or its Cargo.toml");
  cargo::Selection sel;
  sel.features = opts.features;
  sel.all_features = opts.all_features;
  sel.no_default_features = opts.no_default_features;
  sel.target_triple = opts.target;
  sel.cargo_target = opts.cargo_target;
  rust::LoadedCrate loaded = rust::load_crate(opts.path, sel);
  const rust::Crate& crate = loaded.crate;

  Analysis a;
  ir::ModelIr& ir = a.ir;
  ir.analysis_id = loaded.analysis_id;
  a.files = crate.files().size();
  a.items = crate.items().size();

  std::string candle_nn_version, candle_core_version;
  if (loaded.cargo) {
    const cargo::CargoContext& c = *loaded.cargo;
    a.package_id = c.package + " " + c.version;
    a.manifest_path = fs::relative(c.manifest_path, c.package_dir).string();
    ir::CargoSummary s;
    s.build_id = c.build_id;
    s.workspace_root = fs::relative(c.workspace_root, c.package_dir).string();
    s.manifest_path = a.manifest_path;
    s.package_name = c.package;
    s.package_version = c.version;
    s.selected_target = c.selected.kind + ":" + c.selected.name;
    s.active_features = c.features;
    s.active_cfg = c.cfgs;
    for (const auto& v : c.candle_versions) {
      s.candle_packages[v.package] = v.version + (v.exact ? "" : " (manifest requirement)");
      if (v.package == "candle-nn" && v.exact) candle_nn_version = v.version;
      if (v.package == "candle-core" && v.exact) candle_core_version = v.version;
    }
    ir.cargo = std::move(s);
    if (!c.cfgs_from_rustc) {
      ir.findings.push_back(ir::make_finding(
          "cargo-context", ir::Severity::information, ir::Confidence::proven,
          "rustc was not available; cfg evaluated with the documented host default "
          "(x86_64 Linux GNU)",
          a.manifest_path));
    }
  } else {
    a.package_id = fs::path(opts.path).filename().string();
    ir.findings.push_back(ir::make_finding(
        "cargo-context", ir::Severity::warning, ir::Confidence::proven,
        "no Cargo.toml found; sources loaded from src/ without features or dependency renames",
        ""));
  }

  // Catalog claims hold for audited Candle releases only (DESIGN.md: honest uncertainty).
  if (!analysis::LayerCatalog::for_version(candle_nn_version).audited()) {
    std::string shown = candle_nn_version.empty() ? "an unresolved version" : candle_nn_version;
    ir.findings.push_back(ir::make_finding(
        "candle-semantics-version", ir::Severity::warning, ir::Confidence::proven,
        "candle-nn resolves to " + shown +
            ", which is not an audited release (audited: 0.11.0); operation and constructor "
            "rules are unknown",
        a.manifest_path));
  }

  for (const auto& d : crate.diagnostics()) {
    std::string src = d.file.empty() ? "" : d.file + (d.line ? ":" + std::to_string(d.line) : "");
    ir.findings.push_back(ir::make_finding(d.rule, ir::Severity::warning, ir::Confidence::unknown,
                                           "incomplete source analysis: " + d.message, src));
  }
  for (const auto& f : crate.files())
    if (!f->ok()) ++a.files_with_syntax_errors;

  for (std::size_t i = 0; i < crate.items().size(); ++i) {
    const rust::Item& item = crate.items()[i];
    if (item.kind != rust::ItemKind::Function && item.kind != rust::ItemKind::Method) continue;
    if (item.cfg.state == rust::Tri::False) continue;
    ir::Function fn;
    fn.id = ir::function_id(item.qualified, item.cfg.predicates);
    fn.name = item.name;
    fn.qualified_name = item.qualified;
    std::string trait;
    if (item.impl >= 0) {
      const rust::Impl& impl = crate.impls()[static_cast<std::size_t>(item.impl)];
      fn.owner_type = impl.module.empty() ? impl.self_base : impl.module + "::" + impl.self_base;
      trait = last_segment(impl.trait);
    }
    fn.visibility = visibility_of(item.visibility);
    bool tensor_sig = mentions_tensor(item.return_type);
    for (const auto& p : item.params) {
      fn.parameters.push_back({p.name, p.type_text});
      tensor_sig = tensor_sig || mentions_tensor(p.type_text);
    }
    if (!item.return_type.empty() && item.return_type != "()") fn.return_type = item.return_type;
    fn.cfg_predicates = item.cfg.predicates;
    if (item.cfg.state == rust::Tri::True) fn.cfg_active = true;
    fn.source = crate.source(i);
    bool module_trait = (trait == "Module" || trait == "ModuleWithArgs") && item.name == "forward";
    bool module_t = (trait == "ModuleT" || trait == "ModuleTWithArgs") && item.name == "forward_t";
    fn.is_entrypoint =
        module_trait || module_t || (item.visibility == rust::Visibility::Public && tensor_sig);
    ir.functions.push_back(std::move(fn));
  }

  std::optional<analysis::ConfigValues> config;
  if (!opts.config.empty()) config = analysis::read_config_values(opts.config);

  analysis::InventoryOptions inv;
  inv.candle_nn_version = candle_nn_version;
  inv.config = config ? &*config : nullptr;
  inv.root = opts.root;
  analysis::build_inventory(crate, inv, ir);

  analysis::DataflowOptions df;
  df.candle_version = candle_core_version;
  df.config = inv.config;
  analysis::build_dataflow(crate, df, ir);

  if (!evidence.runtime_traces.empty()) {
    runtime::ReadOptions ro;
    ro.lenient = evidence.lenient;
    std::vector<fs::path> paths(evidence.runtime_traces.begin(), evidence.runtime_traces.end());
    auto traces = runtime::read_traces(paths, ro);
    runtime::merge_runtime(ir, traces);
    for (auto& t : traces)
      a.traces.push_back(std::move(t.info));
  }
  ir::normalize(ir);
  return a;
}

std::vector<Diagnostic> diagnostics_of(const ir::ModelIr& ir) {
  std::vector<Diagnostic> out;
  for (const auto& f : ir.findings) {
    Diagnostic d;
    d.id = f.id;
    d.rule = f.rule;
    d.severity = f.severity == ir::Severity::error     ? Severity::error
                 : f.severity == ir::Severity::warning ? Severity::warning
                                                       : Severity::information;
    d.confidence = std::string(ir::to_string(f.confidence));
    d.message = f.message;
    if (f.source) parse_source_location(*f.source, d);
    d.related = f.related;
    out.push_back(std::move(d));
  }
  // Errors first, then warnings, then notes; stable within a severity (the IR's id order).
  std::stable_sort(out.begin(), out.end(), [](const Diagnostic& x, const Diagnostic& y) {
    return static_cast<int>(x.severity) < static_cast<int>(y.severity);
  });
  return out;
}

std::string render_summary(const Analysis& a) {
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
    if (t.skipped_lines > 0) out += ", " + std::to_string(t.skipped_lines) + " bad lines skipped";
    if (t.truncated) out += ", TRUNCATED (no end record)";
    out += "\n";
  }
  return out;
}

}  // namespace cg::cli
