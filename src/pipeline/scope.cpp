#include "pipeline/scope.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "rust/crate.hpp"
#include "rust/types.hpp"

namespace cg::pipeline {

namespace {

// Whether a function's parameter names one of `types`, resolved where the function is written
// (`&mut TinyLlama` in `train` with `use crate::model::TinyLlama`).
bool takes_one_of(const rust::Crate& crate, const ir::Function& f,
                  const std::set<std::string>& types) {
  for (std::size_t item : crate.find(f.qualified_name)) {
    const rust::Item& it = crate.items()[item];
    for (const auto& p : it.params) {
      std::string base = rust::peel_type(p.type_text).base;
      if (base.empty()) continue;
      for (const auto& c : crate.resolve(it.module, base))
        if (c.kind == rust::Candidate::Kind::Item && types.count(crate.items()[c.item].qualified))
          return true;
    }
  }
  return false;
}

std::string count(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

std::vector<std::string> scope_seeds(const rust::Crate& crate, const ir::ModelIr& ir) {
  std::vector<std::string> seeds;
  if (ir.components.size() != 1) return seeds;
  const ir::Component& comp = ir.components.front();

  std::set<std::string> types{comp.qualified_name};
  for (const auto& m : ir.modules)
    if (m.component == comp.id && m.qualified_type) types.insert(*m.qualified_type);
  seeds.push_back(comp.constructor);
  for (const auto& e : comp.entrypoints)
    seeds.push_back(e);
  for (const auto& f : ir.functions)
    if ((f.owner_type && types.count(*f.owner_type)) || takes_one_of(crate, f, types))
      seeds.push_back(f.id);
  return seeds;
}

std::unordered_set<std::string> reached_functions(const ir::ModelIr& ir,
                                                  const std::vector<std::string>& seeds) {
  std::unordered_set<std::string> kept;
  if (ir.components.size() != 1) return kept;
  std::unordered_map<std::string, const ir::Function*> by_id;
  for (const auto& f : ir.functions)
    by_id.emplace(f.id, &f);
  std::vector<std::string> work;
  auto keep = [&](const std::string& id) {
    if (by_id.count(id) && kept.insert(id).second) work.push_back(id);
  };
  for (const auto& id : seeds)
    keep(id);
  // What these call, and the other methods of every type whose code is kept (a rotary
  // embedding's `new` beside its `apply`).
  std::unordered_map<std::string, std::vector<std::string>> methods_of;
  for (const auto& f : ir.functions)
    if (f.owner_type) methods_of[*f.owner_type].push_back(f.id);
  std::unordered_set<std::string> owners_done;
  while (!work.empty()) {
    std::string id = work.back();
    work.pop_back();
    const ir::Function& f = *by_id[id];
    for (const auto& c : f.calls)
      keep(c);
    if (f.owner_type && owners_done.insert(*f.owner_type).second)
      for (const auto& m : methods_of[*f.owner_type])
        keep(m);
  }
  return kept;
}

ScopeCounts scope_to_component(const rust::Crate& crate, ir::ModelIr& ir) {
  ScopeCounts counts;
  if (ir.components.size() != 1) return counts;
  const ir::Component& comp = ir.components.front();
  const std::unordered_set<std::string> kept = reached_functions(ir, scope_seeds(crate, ir));

  std::unordered_set<std::string> dropped;
  std::erase_if(ir.functions, [&](const ir::Function& f) {
    if (kept.count(f.id)) return false;
    dropped.insert(f.id);
    ++counts.functions;
    return true;
  });
  std::erase_if(ir.operations, [&](const ir::Operation& o) {
    if (kept.count(o.function)) return false;
    dropped.insert(o.id);
    ++counts.operations;
    return true;
  });
  std::erase_if(ir.tensors, [&](const ir::Tensor& t) {
    if (t.owner_function.empty() || kept.count(t.owner_function)) return false;
    dropped.insert(t.id);
    ++counts.tensors;
    return true;
  });
  std::erase_if(ir.instance_calls,
                [&](const ir::InstanceCall& c) { return kept.count(c.entrypoint) == 0; });
  for (auto& c : ir.instance_calls)
    std::erase_if(c.operations, [&](const std::string& o) { return dropped.count(o) > 0; });
  // A finding goes with the code it is about: dropped when every record it names was dropped.
  std::erase_if(ir.findings, [&](const ir::Finding& f) {
    if (f.related.empty()) return false;
    bool all = std::all_of(f.related.begin(), f.related.end(),
                           [&](const std::string& r) { return dropped.count(r) > 0; });
    if (all) ++counts.findings;
    return all;
  });
  if (counts.functions + counts.operations + counts.tensors + counts.findings == 0) return counts;
  counts.scoped = true;
  ir.findings.push_back(ir::make_finding(
      "analysis-scope", ir::Severity::information, ir::Confidence::proven,
      "scoped to component `" + comp.qualified_name + "`: " + count(counts.functions, "function") +
          ", " + count(counts.operations, "operation") + " and " +
          count(counts.findings, "finding") +
          " of code it does not reach are not shown; --all shows the whole crate",
      "", {comp.id}));
  return counts;
}

}  // namespace cg::pipeline
