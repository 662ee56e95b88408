#include "analysis/dataflow.hpp"

#include <optional>

#include "analysis/checks/check.hpp"
#include "analysis/interp/engine.hpp"
#include "analysis/tensor/domain.hpp"
#include "ir/stable_id.hpp"
#include "util/deep_stack.hpp"

// Per-entrypoint expression dataflow (spec reference-static §4.4): the interpreter
// (analysis/interp/) with the tensor domain (analysis/tensor/) runs each entrypoint; the checks
// (analysis/checks/) turn what it records into findings.
namespace cg::analysis {
namespace {

std::optional<std::size_t> item_of(const rust::Crate& crate, const ir::Function& f) {
  for (std::size_t it : crate.find(f.qualified_name)) {
    const auto& item = crate.items()[it];
    if (ir::function_id(item.qualified, item.cfg.predicates) == f.id) return it;
  }
  return std::nullopt;
}

void run(const rust::Crate& crate, const DataflowOptions& opts, ir::ModelIr& ir) {
  checks::Reporter out(ir);
  auto all = checks::dataflow_checks();
  tensor::TensorDomain domain(crate, opts, ir, out, all);
  interp::Engine<tensor::TensorDomain> engine(crate, domain);
  // Struct roots whose fields hold closures run their constructor before their entrypoints.
  for (const auto& comp : ir.components) {
    if (comp.entrypoints.empty()) continue;
    for (const ir::Function& f : ir.functions) {
      if (f.id != comp.constructor || !f.owner_type) continue;
      auto item = item_of(crate, f);
      if (!item) continue;
      for (std::size_t t : crate.find(comp.qualified_name))
        if (crate.items()[t].kind == rust::ItemKind::Struct)
          domain.root_constructor(static_cast<std::ptrdiff_t>(t), *item, comp.id);
    }
  }
  std::size_t total = 0, skipped = 0;
  std::string first_skipped;
  std::vector<bool> ran(ir.functions.size(), false);
  for (bool more = true; more;) {
    more = false;
    std::vector<bool> wanted = opts.reach ? opts.reach(ir) : std::vector<bool>();
    for (std::size_t i = 0; i < ir.functions.size(); ++i) {
      if (!ir.functions[i].is_entrypoint || ran[i]) continue;
      if (opts.reach && (i >= wanted.size() || !wanted[i])) continue;
      ran[i] = true;
      more = opts.reach != nullptr;
      // A crate-wide budget as well as the per-entrypoint one: time and memory stay bounded on any
      // crate (tens of thousands of entrypoints), and what was not analyzed is said.
      if (total > opts.crate_node_budget) {
        if (skipped++ == 0) first_skipped = ir.functions[i].qualified_name;
        continue;
      }
      auto item = item_of(crate, ir.functions[i]);
      if (!item) {
        checks::LimitFact l;
        l.kind = checks::LimitFact::Kind::entry_missing;
        l.function = ir.functions[i].qualified_name;
        l.fid = ir.functions[i].id;
        l.source = ir.functions[i].source;
        domain.limit(l);
        continue;
      }
      total += domain.run_entry(engine, i, *item);
    }
  }
  // Function-style models (`--root models::resnet::resnet18`): no forward method, the function
  // returns a closure; it runs as a constructor and its closure as the root's forward.
  for (const auto& comp : ir.components) {
    if (!comp.entrypoints.empty() || total > opts.crate_node_budget) continue;
    for (std::size_t i = 0; i < ir.functions.size(); ++i) {
      const ir::Function& f = ir.functions[i];
      if (f.id != comp.constructor || f.owner_type || f.qualified_name != comp.qualified_name)
        continue;
      if (auto item = item_of(crate, f))
        total += domain.run_function_root(engine, i, *item, comp.id);
    }
  }
  if (skipped > 0) {
    checks::LimitFact l;
    l.kind = checks::LimitFact::Kind::crate_budget;
    l.limit = opts.crate_node_budget;
    l.skipped = skipped;
    l.function = first_skipped;
    domain.limit(l);
  }
  domain.finish();
}

}  // namespace

void build_dataflow(const rust::Crate& crate, const DataflowOptions& opts, ir::ModelIr& ir) {
  util::run_on_deep_stack([&] { run(crate, opts, ir); });
}

}  // namespace cg::analysis
