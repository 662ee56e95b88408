// normalize(): one canonical form per model so writers, baselines and diffs see identical bytes
// for identical facts regardless of the order analyses emitted them.
#include <algorithm>
#include <tuple>

#include "ir/model.hpp"

namespace cg::ir {
namespace {

void sort_unique(std::vector<std::string>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

// Stable sort so "keep the first" means the first the analysis emitted.
template <typename T, typename Merge>
void sort_dedup_by_id(std::vector<T>& items, Merge merge) {
  std::stable_sort(items.begin(), items.end(), [](const T& a, const T& b) { return a.id < b.id; });
  std::vector<T> out;
  out.reserve(items.size());
  for (T& item : items) {
    if (!out.empty() && out.back().id == item.id) {
      merge(out.back(), item);
    } else {
      out.push_back(std::move(item));
    }
  }
  items = std::move(out);
}

template <typename T>
void sort_dedup_by_id(std::vector<T>& items) {
  sort_dedup_by_id(items, [](T&, T&) {});
}

bool is_component_owner(const ModelIr& ir, const std::optional<std::string>& owner) {
  if (!owner) return false;
  return std::any_of(ir.components.begin(), ir.components.end(), [&](const Component& c) {
    return c.name == *owner || c.qualified_name == *owner;
  });
}

}  // namespace

Coverage compute_coverage(const ModelIr& ir) {
  Coverage c;
  c.components = ir.components.size();
  c.architecture_edges = ir.architecture_edges.size();
  c.modules = ir.modules.size();
  c.parameters = ir.parameters.size();
  c.functions = ir.functions.size();
  for (const Function& f : ir.functions) {
    if (!f.is_entrypoint) continue;
    ++c.entrypoints;
    if (is_component_owner(ir, f.owner_type)) ++c.component_entrypoints;
  }
  for (const ArchitectureEdge& e : ir.architecture_edges) {
    if (e.id.starts_with("composition-edge:")) ++c.composition_edges;
  }
  c.tensors = ir.tensors.size();
  c.operations = ir.operations.size();
  for (const Parameter& p : ir.parameters)
    c.linked_parameter_uses += p.uses.size();
  for (const Tensor& t : ir.tensors) {
    if (t.shape.rank || !t.shape.dimensions.empty()) ++c.tensors_with_shape;
    if (t.dtype != "Unknown") ++c.tensors_with_dtype;
    if (t.device.kind != DeviceKind::unknown) ++c.tensors_with_device;
  }
  if (ir.runtime) {
    const RuntimeSummary& r = *ir.runtime;
    c.runtime_observations = r.tensor_observations + r.operation_observations +
                             r.gradient_observations + r.value_observations;
  }
  c.diagnostics = ir.findings.size();
  return c;
}

void normalize(ModelIr& ir) {
  for (Component& c : ir.components) {
    sort_unique(c.modules);
    sort_unique(c.parameters);
    sort_unique(c.entrypoints);
  }
  for (Parameter& p : ir.parameters) {
    sort_unique(p.uses);
    sort_unique(p.optimizer_memberships);
  }
  for (Function& f : ir.functions) {
    sort_unique(f.calls);
    sort_unique(f.tensor_inputs);
    sort_unique(f.tensor_outputs);
    std::sort(f.execution_phases.begin(), f.execution_phases.end());
    f.execution_phases.erase(std::unique(f.execution_phases.begin(), f.execution_phases.end()),
                             f.execution_phases.end());
  }
  sort_dedup_by_id(ir.components);
  sort_dedup_by_id(ir.architecture_edges);
  sort_dedup_by_id(ir.modules);
  sort_dedup_by_id(ir.parameters);
  sort_dedup_by_id(ir.functions);
  sort_dedup_by_id(ir.tensors);
  sort_dedup_by_id(ir.operations);
  for (InstanceCall& c : ir.instance_calls) {
    sort_unique(c.modules);
    sort_unique(c.operations);
  }
  sort_dedup_by_id(ir.instance_calls);
  sort_dedup_by_id(ir.state_stores);
  sort_dedup_by_id(ir.buffers);
  // The same rule at the same place with the same message is one finding with all its evidence.
  sort_dedup_by_id(ir.findings, [](Finding& keep, Finding& dup) {
    keep.related.insert(keep.related.end(), dup.related.begin(), dup.related.end());
    for (Evidence& e : dup.evidence) {
      if (std::find(keep.evidence.begin(), keep.evidence.end(), e) == keep.evidence.end()) {
        keep.evidence.push_back(std::move(e));
      }
    }
  });
  for (Finding& f : ir.findings)
    sort_unique(f.related);
  if (ir.runtime) {
    auto& m = ir.runtime->module_timings;
    std::sort(m.begin(), m.end(),
              [](const ModuleTiming& a, const ModuleTiming& b) { return a.path < b.path; });
    m.erase(
        std::unique(m.begin(), m.end(),
                    [](const ModuleTiming& a, const ModuleTiming& b) { return a.path == b.path; }),
        m.end());
    sort_unique(ir.runtime->unmatched_module_path_examples);
    auto& ms = ir.runtime->module_stats;
    std::sort(ms.begin(), ms.end(), [](const ModuleStats& a, const ModuleStats& b) {
      return std::tie(a.path, a.index) < std::tie(b.path, b.index);
    });
    auto& gs = ir.runtime->grad_stats;
    std::sort(gs.begin(), gs.end(),
              [](const GradStats& a, const GradStats& b) { return a.key < b.key; });
    for (GradStats& g : gs)
      sort_unique(g.parameters);
    sort_unique(ir.runtime->unmatched_stats_path_examples);
    sort_unique(ir.runtime->unmatched_grad_key_examples);
  }
  ir.coverage = compute_coverage(ir);
}

}  // namespace cg::ir
