#include "pipeline/pipeline.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "analysis/buffers.hpp"
#include "analysis/config_binding.hpp"
#include "analysis/config_values.hpp"
#include "analysis/dataflow.hpp"
#include "analysis/inventory.hpp"
#include "analysis/layer_catalog.hpp"
#include "analysis/op_catalog.hpp"
#include "ir/stable_id.hpp"
#include "pipeline/config_check.hpp"
#include "pipeline/dependencies.hpp"
#include "pipeline/scope.hpp"
#include "runtime/merge_ir.hpp"
#include "runtime/tracing_chrome.hpp"
#include "rust/crate.hpp"
#include "rust/span_sites.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace cg::pipeline {

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

}  // namespace

std::vector<ir::Function> functions_of(const rust::Crate& crate) {
  std::vector<ir::Function> out;
  for (std::size_t i = 0; i < crate.items().size(); ++i) {
    const rust::Item& item = crate.items()[i];
    if (item.kind != rust::ItemKind::Function && item.kind != rust::ItemKind::Method) continue;
    if (item.cfg.state == rust::Tri::False) continue;
    // A loaded dependency's functions are walked when the crate's code calls them; they are not
    // the crate's functions or entrypoints.
    if (!crate.is_local(i)) continue;
    ir::Function fn;
    fn.id = ir::function_id(item.qualified, item.cfg.predicates);
    fn.name = item.name;
    fn.qualified_name = item.qualified;
    std::string trait;
    if (item.impl >= 0) {
      const rust::Impl& impl = crate.impls()[static_cast<std::size_t>(item.impl)];
      fn.owner_type = impl.module.empty() ? impl.self_base : impl.module + "::" + impl.self_base;
      std::string_view leaf = last_path_segment(impl.trait);
      trait = std::string(leaf.substr(0, leaf.find('<')));
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
    out.push_back(std::move(fn));
  }

  return out;
}

namespace {

// Exact Candle versions the Cargo context resolved ("" when unresolved).
struct CandleVersions {
  std::string nn, core;
};

// The model's fields under one nested object of the config (`text_config` of a multimodal
// config.json): say which, so the user can bind it. Only the fields of the analyzed (scoped)
// components count: their warnings are the findings still in the IR.
// The top-level fields the analyzed (scoped) components read that the file lacks and serde cannot
// default.
std::set<std::string, std::less<>> missing_fields(const analysis::ConfigValues& config,
                                                  const ir::ModelIr& ir) {
  std::set<std::string, std::less<>> sources, missing;
  for (const auto& f : ir.findings)
    if (f.rule == "config-binding" && f.source) sources.insert(*f.source);
  for (const auto& [key, source] : config.missing)
    if (sources.count(source) != 0) missing.insert(key);
  return missing;
}

// A file the model's serde would refuse (a field it requires is absent: another model's
// config.json, or the text model's fields under `text_config`) is an input error, not a model of
// some other size, unless the user asked for a partial binding.
void refuse_foreign_config(const analysis::ConfigValues& config, const ir::ModelIr& ir,
                           bool partial) {
  const auto missing = missing_fields(config, ir);
  if (missing.empty() || partial) return;
  std::string names;
  std::size_t n = 0;
  for (const auto& m : missing)
    if (n++ < 8) names += (names.empty() ? "`" : ", `") + m + "`";
  if (missing.size() > 8) names += " and " + std::to_string(missing.size() - 8) + " more";
  std::string hint = "is it this model's config.json? --partial-config binds the fields it has";
  if (auto home = analysis::nested_home(config, missing))
    hint = std::to_string(home->found) + " of them are in its `" + home->key +
           "` object: bind it with --config-key " + home->key;
  throw InputError(config.origin, "lacks " + std::to_string(missing.size()) +
                                      " field(s) the model's config type requires (serde has no "
                                      "default for them, so the model would refuse this file): " +
                                      names + "; " + hint);
}

void suggest_config_key(const analysis::ConfigValues& config, ir::ModelIr& ir) {
  const auto missing = missing_fields(config, ir);
  auto home = analysis::nested_home(config, missing);
  if (!home) return;
  ir.findings.push_back(ir::make_finding(
      "config-binding", ir::Severity::warning, ir::Confidence::proven,
      config.origin + " lacks " + std::to_string(home->missing) + " fields a constructor reads; " +
          std::to_string(home->found) + " of them are in its `" + home->key +
          "` object: bind it with --config-key " + home->key,
      ""));
}

// A component whose constructor takes a VarBuilder yet registers no parameter the inventory can
// follow: its total of 0 is a lower bound, not a fact (vgg builds its layers inside `vec![..]`).
void flag_empty_components(ir::ModelIr& ir) {
  for (const auto& c : ir.components) {
    if (!c.parameters.empty()) continue;
    ir.findings.push_back(ir::make_finding(
        "structure-unresolved", ir::Severity::warning, ir::Confidence::conditional,
        "`" + c.qualified_name +
            "`'s constructor takes a VarBuilder but no parameter it loads was found: it loads "
            "none, or loads them through code the inventory does not follow (a macro such as "
            "`vec![..]`, a closure or a trait object); its total of 0 is a lower bound",
        c.source, {c.id}));
  }
}

// The release a manifest requirement names when it is a caret (`0.8.4`, `^0.8.4`) or exact
// (`=0.8.4`) requirement of a full `major.minor.patch`; "" for anything wider.
std::string caret_release(std::string req) {
  while (!req.empty() && req.front() == ' ')
    req.erase(0, 1);
  while (!req.empty() && req.back() == ' ')
    req.pop_back();
  if (!req.empty() && (req.front() == '^' || req.front() == '=')) req.erase(0, 1);
  int dots = 0;
  for (char ch : req) {
    if (ch == '.') {
      ++dots;
    } else if (ch < '0' || ch > '9') {
      return "";
    }
  }
  if (dots != 2 || req.front() == '.' || req.back() == '.' || req.find("..") != std::string::npos)
    return "";
  return req;
}

// The Cargo context as the IR records it, with the findings about how it was obtained.
CandleVersions record_cargo_context(const rust::LoadedCrate& loaded, const Options& opts,
                                    const std::vector<std::string>& load_notes, Analysis& a) {
  CandleVersions versions;
  ir::ModelIr& ir = a.ir;
  if (!loaded.cargo) {
    a.package_id = fs::path(opts.path).filename().string();
    ir.findings.push_back(ir::make_finding(
        "cargo-context", ir::Severity::warning, ir::Confidence::proven,
        "no Cargo.toml found; sources loaded from src/ without features or dependency renames",
        ""));
    return versions;
  }
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
  std::vector<std::string> from_requirement;
  for (const auto& v : c.candle_versions) {
    s.candle_packages[v.package] = v.version + (v.exact ? "" : " (manifest requirement)");
    // No lock file (a git fork taken without one): a caret requirement `0.8.4` (`^0.8.4`, or `=`)
    // is one Cargo enforces, so its release's audited rules hold for the release it names; wider
    // requirements (`>=`, `~`, `*`, ranges) stay unresolved.
    std::string version = v.version;
    if (!v.exact) version = caret_release(v.version);
    if (!v.exact && !version.empty() && (v.package == "candle-nn" || v.package == "candle-core"))
      from_requirement.push_back(v.package + " " + version);
    if (v.package == "candle-nn") versions.nn = version;
    if (v.package == "candle-core") versions.core = version;
  }
  if (!from_requirement.empty()) {
    std::string names;
    for (const auto& f : from_requirement)
      names += (names.empty() ? "" : " and ") + f;
    ir.findings.push_back(ir::make_finding(
        "candle-semantics-version", ir::Severity::information, ir::Confidence::proven,
        "no Cargo.lock pins Candle: analysed as " + names +
            ", the release each manifest requirement names (Cargo enforces the requirement; a "
            "later release it admits is not checked)",
        a.manifest_path));
  }
  ir.cargo = std::move(s);
  // Where dependency sources are missing or unusable: notes, and the analysis goes on.
  if (!c.lock_problem.empty())
    ir.findings.push_back(ir::make_finding(
        "dependency-source", ir::Severity::warning, ir::Confidence::proven,
        c.lock_problem + "; Cargo.lock is not used (Candle versions fall back to requirements)",
        a.manifest_path));
  for (const auto& note : cargo::dependency_notes(a.dependencies))
    ir.findings.push_back(ir::make_finding("dependency-source", ir::Severity::information,
                                           ir::Confidence::proven, note, a.manifest_path));
  for (const auto& note : load_notes)
    ir.findings.push_back(ir::make_finding("dependency-source", ir::Severity::information,
                                           ir::Confidence::proven, note, a.manifest_path));
  if (!c.cfgs_from_rustc) {
    ir.findings.push_back(
        ir::make_finding("cargo-context", ir::Severity::information, ir::Confidence::proven,
                         "rustc was not available; cfg evaluated with the documented host default "
                         "(x86_64 Linux GNU)",
                         a.manifest_path));
  }
  return versions;
}

// What the loader could not do (unreadable modules, syntax errors) and an unaudited Candle.
void record_source_findings(const rust::Crate& crate, const CandleVersions& versions,
                            const analysis::LayerCatalog* from_source, Analysis& a) {
  ir::ModelIr& ir = a.ir;
  // Catalog claims hold for audited Candle releases only (DESIGN.md: honest uncertainty).
  // Constructors are audited at every candle-nn tag 0.8.0-0.11.0 (layer_catalog.cpp), tensor-op
  // rules at every candle-core release 0.8.0-0.11.0 (op_catalog.cpp); constructors read from
  // candle-nn's own source hold for that source.
  bool constructors = from_source != nullptr
                          ? from_source->audited()
                          : analysis::LayerCatalog::for_version(versions.nn).audited();
  bool operations = analysis::OpCatalog::for_version(versions.core).audited();
  const std::string ops_range = analysis::OpCatalog::audited_range();
  auto shown = [](const std::string& v) { return v.empty() ? "an unresolved version" : v; };
  if (!constructors && !operations) {
    ir.findings.push_back(ir::make_finding(
        "candle-semantics-version", ir::Severity::warning, ir::Confidence::proven,
        "candle-nn resolves to " + shown(versions.nn) + " and candle-core to " +
            shown(versions.core) + ", which are not audited releases (audited: constructors " +
            "0.8.0-0.11.0, operations " + ops_range +
            "); operation and constructor rules are unknown",
        a.manifest_path));
  } else if (!constructors) {
    ir.findings.push_back(ir::make_finding(
        "candle-semantics-version", ir::Severity::warning, ir::Confidence::proven,
        "candle-nn resolves to " + shown(versions.nn) +
            ", whose constructors are not audited (audited: 0.8.0-0.11.0); parameter leaves are "
            "unknown",
        a.manifest_path));
  } else if (!operations) {
    ir.findings.push_back(ir::make_finding(
        "candle-semantics-version", ir::Severity::warning, ir::Confidence::proven,
        "candle-core resolves to " + shown(versions.core) +
            ", whose tensor-op rules are not audited (audited: " + ops_range +
            "); dtype, gradient, shape and numeric rules of operations are unknown (parameter "
            "leaves are exact: candle-nn " +
            versions.nn + "'s constructors are audited)",
        a.manifest_path));
  }
  for (const auto& d : crate.diagnostics()) {
    std::string src = d.file.empty() ? "" : d.file + (d.line ? ":" + std::to_string(d.line) : "");
    ir.findings.push_back(ir::make_finding(d.rule, ir::Severity::warning, ir::Confidence::unknown,
                                           "incomplete source analysis: " + d.message, src));
  }
  for (std::size_t f = 0; f < crate.files().size(); ++f)
    if (crate.unit_of_file(f) == 0 && !crate.files()[f]->ok()) ++a.files_with_syntax_errors;
}

// The first byte that is not blank: `{` (runtime JSONL or document, or a Chrome trace object) or
// `[` (a Chrome trace); anything else is neither, said with the file's name.
void require_trace_shape(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return;  // the reader says what is wrong with it
  std::ifstream in(path, std::ios::binary);
  char ch = 0;
  while (in.get(ch) && (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')) {
  }
  if (!in || ch == '{' || ch == '[') return;
  throw InputError(path.string(),
                   "neither a candle-graph runtime trace (runtime/1-4 JSONL or document) nor a "
                   "tracing-chrome trace (a JSON array of events): it starts with `" +
                       std::string(1, ch) + "`");
}

// Reads, validates and merges the runtime traces; a trace of another build is kept out. A
// tracing-chrome trace (detected by content) is imported as module scopes.
void merge_traces(const Options& opts, const rust::Crate& crate, Analysis& a) {
  if (opts.runtime_traces.empty()) return;
  runtime::ReadOptions ro;
  ro.lenient = opts.lenient;
  std::vector<runtime::LoadedTrace> traces;
  std::optional<runtime::SpanCatalog> catalog;
  std::vector<runtime::ImportFinding> import_findings;
  for (const auto& p : opts.runtime_traces) {
    fs::path path(p);
    require_trace_shape(path);
    if (runtime::is_chrome_trace(path)) {
      if (!catalog) catalog = span_catalog(crate, a.ir);
      runtime::LoadedTrace t;
      auto imported = runtime::import_tracing_chrome(path, *catalog, t.aggregate, ro);
      t.info = std::move(imported.info);
      for (auto& f : imported.findings)
        import_findings.push_back(std::move(f));
      traces.push_back(std::move(t));
    } else {
      auto one = runtime::read_traces({path}, ro);
      traces.push_back(std::move(one.front()));
    }
  }
  for (const auto& verdict : runtime::merge_runtime(a.ir, traces, {opts.module_prefix, opts.root},
                                                    {opts.activation_growth, 3})
                                 .traces)
    if (!verdict.merged) a.rejected_traces.push_back(verdict.path);
  for (const auto& f : import_findings) {
    a.ir.findings.push_back(
        ir::make_finding(f.rule, f.warning ? ir::Severity::warning : ir::Severity::information,
                         ir::Confidence::proven, f.message, ""));
  }
  for (auto& t : traces)
    a.traces.push_back(std::move(t.info));
}

// A loaded dependency's public layer types have VarBuilder constructors too, but they are not the
// crate's components: a component whose type lives in a dependency (`::their_layers::Mlp`) is
// dropped with its modules, parameters, edges and findings. (The inventory's candidate loop can
// skip `!crate.is_local(type_item)` instead, which also saves walking them; then this finds
// nothing to drop.)
void drop_dependency_components(ir::ModelIr& ir) {
  std::set<std::string> gone;
  for (const auto& c : ir.components)
    if (c.qualified_name.rfind("::", 0) == 0) gone.insert(c.id);
  if (gone.empty()) return;
  std::erase_if(ir.components, [&](const ir::Component& c) { return gone.count(c.id) > 0; });
  std::set<std::string> dropped = gone;
  for (const auto& m : ir.modules)
    if (gone.count(m.component) > 0) dropped.insert(m.id);
  for (const auto& p : ir.parameters)
    if (gone.count(p.component) > 0) dropped.insert(p.id);
  std::erase_if(ir.modules, [&](const ir::Module& m) { return gone.count(m.component) > 0; });
  std::erase_if(ir.parameters, [&](const ir::Parameter& p) { return gone.count(p.component) > 0; });
  std::erase_if(ir.architecture_edges, [&](const ir::ArchitectureEdge& e) {
    return dropped.count(e.from) > 0 || dropped.count(e.to) > 0;
  });
  std::erase_if(ir.findings, [&](const ir::Finding& f) {
    return std::any_of(f.related.begin(), f.related.end(),
                       [&](const std::string& id) { return dropped.count(id) > 0; });
  });
}

}  // namespace

runtime::SpanCatalog span_catalog(const rust::Crate& crate, const ir::ModelIr& ir) {
  runtime::SpanCatalog c;
  std::map<std::string, std::size_t> index;
  for (const auto& m : ir.modules) {
    index.emplace(m.id, c.modules.size());
    c.modules.push_back({m.qualified_type.value_or(m.type_name),
                         m.prefix,
                         std::nullopt,
                         {},
                         m.source,
                         std::nullopt});
  }
  std::map<std::string, std::map<std::string, std::size_t>> forward_order;  // by parent type
  for (std::size_t i = 0; i < ir.modules.size(); ++i) {
    if (!ir.modules[i].parent) continue;
    if (auto it = index.find(*ir.modules[i].parent); it != index.end()) {
      c.modules[i].parent = it->second;
      // A span-making wrapper the IR sees through (`q_proj: with_tracing::Linear` typed as the
      // `candle_nn::Linear` it holds): the field's declared type names the span's owner.
      if (ir.modules[i].field) {
        const std::string& parent_type = c.modules[it->second].type;
        c.modules[i].declared_type =
            rust::declared_field_type(crate, parent_type, *ir.modules[i].field);
        auto order = forward_order.find(parent_type);
        if (order == forward_order.end())
          order = forward_order.emplace(parent_type, rust::forward_field_order(crate, parent_type))
                      .first;
        if (auto f = order->second.find(*ir.modules[i].field); f != order->second.end())
          c.modules[i].forward_rank = f->second;
      }
    }
  }
  for (const auto& site : rust::find_span_sites(crate))
    c.types_by_span[site.name].emplace(site.owner_type, site.source);
  return c;
}

Analysis analyze(const Options& opts) {
  return analyze(opts, nullptr);
}

Analysis analyze(const Options& opts,
                 const std::function<void(const rust::LoadedCrate&, const Analysis&)>& visit) {
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
  Analysis a;
  // Dependencies whose source is on disk and that build Candle layers join the crate before it
  // is analysed, so the analysis walks their constructors like the crate's own.
  std::vector<std::string> load_notes;
  // candle-nn's constructors from its source when it is on disk, handed to the inventory.
  CandleNnSource nn_source;
  if (loaded.cargo) {
    a.dependencies = cargo::locate_dependency_sources(*loaded.cargo);
    load_notes = load_dependencies(loaded.crate, *loaded.cargo, a.dependencies);
    nn_source = use_candle_nn_source(*loaded.cargo, a.dependencies);
    load_notes.insert(load_notes.end(), nn_source.notes.begin(), nn_source.notes.end());
  }
  const rust::Crate& crate = loaded.crate;

  a.ir.analysis_id = loaded.analysis_id;
  a.files = crate.units()[0].files;
  a.items = crate.units()[0].items;
  for (std::size_t u = 1; u < crate.units().size(); ++u) {
    a.dependency_files += crate.units()[u].files;
    a.dependency_items += crate.units()[u].items;
  }
  const CandleVersions versions = record_cargo_context(loaded, opts, load_notes, a);
  record_source_findings(crate, versions, nn_source.catalog.get(), a);
  a.ir.functions = functions_of(crate);

  std::optional<analysis::ConfigValues> config;
  if (!opts.config.empty()) config = analysis::read_config_values(opts.config);
  if (!opts.config_key.empty()) {
    if (!config)
      throw InputError("--config-key " + opts.config_key,
                       "expected --config FILE naming the config.json it selects from");
    config = analysis::select_config_object(*config, opts.config_key);
  }
  analysis::InventoryOptions inv;
  inv.candle_nn_version = versions.nn;
  inv.layer_catalog = nn_source.catalog;
  inv.config = config ? &*config : nullptr;
  inv.root = opts.root;
  for (const auto& arg : opts.args) {
    auto eq = arg.find('=');
    std::string name = eq == std::string::npos ? "" : arg.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name.empty() || value.empty())
      throw InputError("--arg " + shown_text(arg),
                       "expected name=value, e.g. --arg num_labels=1000");
    std::optional<analysis::SymValue> v;
    for (const char* kind : {"integer_literal", "float_literal"})
      if (!v) v = analysis::parse_literal(kind, value);
    // Digits past i64 are read as config.json reads them ("exceeds i64"), not as a float.
    if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        (!v || v->kind != analysis::SymValue::Kind::integer))
      v = analysis::SymValue::symbolic(shown_text(value), "the value exceeds i64");
    // Only `true`/`false` are booleans (any other word was read as `false`: `--arg model=Vgg16`).
    if (!v && (value == "true" || value == "false"))
      v = analysis::parse_literal("boolean_literal", value);
    // `None` is an `Option` parameter's `None` (`--arg nclasses=None`); a value given to one is its
    // `Some(value)`.
    if (!v && value == "None") v = analysis::SymValue::none();
    // `Config::convnext_tiny()`: a crate function whose body builds the root's config.
    if (!v && value.back() == ')' && value.find('(') != std::string::npos &&
        (std::isalpha(static_cast<unsigned char>(value[0])) || value[0] == '_'))
      v = analysis::SymValue::symbolic(value, std::string(analysis::kArgCallReason));
    if (!v) v = analysis::SymValue::of_string(value);
    // A repeated name is a mistake the user should see, not a silent "the last one wins".
    if (auto [it, fresh] = inv.args.try_emplace(name, *v); !fresh)
      throw InputError("--arg " + shown_text(name),
                       "given twice (`" + shown_text(it->second.display()) + "` and `" +
                           shown_text(v->display()) + "`); give each parameter once");
  }
  std::map<std::size_t, analysis::ConfigRef> built_configs;
  inv.built_configs = &built_configs;
  analysis::build_inventory(crate, inv, a.ir);
  if (crate.units().size() > 1) drop_dependency_components(a.ir);
  flag_empty_components(a.ir);

  analysis::DataflowOptions df;
  df.candle_version = versions.core;
  df.config = inv.config;
  df.args = &inv.args;
  df.built_configs = &built_configs;
  std::set<std::string> inputs_used, inputs_offered;
  df.input_tensors = &opts.input_tensors;
  df.inputs_used = &inputs_used;
  df.inputs_offered = &inputs_offered;
  // A chosen root: run only the entrypoints its scope keeps (pipeline/scope.hpp), not every
  // model's of the crate; what they call is added round by round as the dataflow finds the calls.
  // (Without --root the crate-wide order of entrypoints is kept: which one runs a shared function
  // first decides some of its facts.)
  const std::vector<std::string> seeds =
      !opts.all && !opts.root.empty() && a.ir.components.size() == 1 ? scope_seeds(crate, a.ir)
                                                                     : std::vector<std::string>{};
  if (!seeds.empty())
    df.reach = [&seeds](const ir::ModelIr& ir) {
      const auto kept = reached_functions(ir, seeds);
      std::vector<bool> wanted(ir.functions.size(), false);
      for (std::size_t i = 0; i < ir.functions.size(); ++i)
        wanted[i] = kept.count(ir.functions[i].id) > 0;
      return wanted;
    };
  analysis::build_dataflow(crate, df, a.ir);
  if (!opts.all) scope_to_component(crate, a.ir);
  // The tensors the root's constructor computes and keeps (rotary tables, masks): `memory`.
  analysis::BufferOptions bo;
  bo.config = inv.config;
  bo.built_configs = &built_configs;
  bo.args = &inv.args;
  analysis::build_buffers(crate, bo, a.ir);
  // Checked after scoping, so that the inputs listed are the root's entrypoints' (a root forward
  // takes them), not every function's in scope nor the whole crate's.
  for (const auto& [name, dims] : opts.input_tensors)
    if (!inputs_used.count(name)) {
      std::set<std::string> names;
      std::set<std::string> in_scope;
      for (const auto& t : a.ir.tensors)
        if (t.role == ir::TensorRole::input) in_scope.insert(t.name);
      // An input offered by name (`xs`), or by a child's key path (`model.encoder.x`).
      for (const auto& n : inputs_offered)
        if (in_scope.count(n.substr(n.rfind('.') == std::string::npos ? 0 : n.rfind('.') + 1)))
          names.insert(n);
      std::string inputs;
      for (const auto& n : names)
        inputs += (inputs.empty() ? "`" : ", `") + n + "`";
      throw InputError("--input-shape " + name + "=...",
                       "`" + name + "` is not a tensor input of the root's forward" +
                           (inputs.empty() ? std::string(" (it has none the analysis found)")
                                           : "; its tensor inputs: " + inputs));
    }
  // What the bound config gave the (scoped) parameters: refused values are input errors, fields
  // left unbound are warnings.
  if (config) {
    check_config(*config, a.ir, opts.partial_config);
    refuse_foreign_config(*config, a.ir, opts.partial_config);
    suggest_config_key(*config, a.ir);
  }

  merge_traces(opts, crate, a);
  ir::normalize(a.ir);
  if (visit) visit(loaded, a);
  return a;
}

}  // namespace cg::pipeline
