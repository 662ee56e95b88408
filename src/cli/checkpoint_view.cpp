#include "cli/checkpoint_view.hpp"

#include <set>
#include <string>
#include <unordered_map>

namespace cg::cli {

viewer::CheckpointView checkpoint_view(const checkpoint::VerifyReport& report,
                                       const checkpoint::Checkpoint& checkpoint,
                                       const ir::ModelIr& ir) {
  std::unordered_map<std::string_view, const ir::Parameter*> params;
  for (const auto& p : ir.parameters)
    params.emplace(p.id, &p);
  const auto expected_shape = [&](const std::string& id) {
    const auto it = params.find(id);
    return it == params.end() ? std::nullopt : it->second->shape;
  };
  const auto tensor_facts = [&](viewer::CheckpointEntry& e, const std::string& name) {
    if (const auto* t = checkpoint.find(name)) {
      e.actual = t->shape;
      e.dtype = t->dtype.value_or("");
    }
  };

  viewer::CheckpointView v;
  v.path = report.checkpoint_path;
  if (report.will_load) {
    v.verdict = "this checkpoint will load";
  } else {
    v.verdict = "will not load";
    for (std::size_t i = 0; i < report.reasons.size(); ++i)
      v.verdict += (i == 0 ? ": " : "; ") + report.reasons[i];
  }
  // A concrete key whose one tensor has the wrong shape is a mismatch, not also a match.
  std::set<std::string> mismatched;
  for (const auto& m : report.shape_mismatches) {
    viewer::CheckpointEntry e;
    e.key = m.tensor;
    e.status = "shape_mismatch";
    e.parameter = m.id;
    e.expected = m.expected;
    e.actual = m.actual;
    if (const auto* t = checkpoint.find(m.tensor)) e.dtype = t->dtype.value_or("");
    if (!m.symbolic_shape.empty()) e.reason = "model shape " + m.symbolic_shape;
    mismatched.insert(m.tensor);
    v.entries.push_back(std::move(e));
  }
  for (const auto& m : report.matched) {
    if (!m.is_template && mismatched.count(m.sample) != 0) continue;
    viewer::CheckpointEntry e;
    e.key = m.key;
    e.status = "matched";
    e.parameter = m.id;
    e.expected = expected_shape(m.id);
    tensor_facts(e, m.sample);
    if (m.is_template) {
      e.reason = std::to_string(m.count) + " tensors, e.g. " + m.sample;
    }
    v.entries.push_back(std::move(e));
  }
  for (const auto& m : report.missing) {
    viewer::CheckpointEntry e;
    e.key = m.key;
    e.status = "missing";
    e.parameter = m.id;
    e.expected = expected_shape(m.id);
    e.reason = checkpoint::certainty_name(m.certainty);
    if (!m.reason.empty()) e.reason += ": " + m.reason;
    v.entries.push_back(std::move(e));
  }
  for (const auto& f : report.family_mismatches) {
    viewer::CheckpointEntry e;
    e.key = f.key;
    e.status = "missing";
    e.parameter = f.id;
    e.reason = f.detail;
    v.entries.push_back(std::move(e));
  }
  for (const auto& name : report.unclaimed) {
    viewer::CheckpointEntry e;
    e.key = name;
    e.status = "unclaimed";
    tensor_facts(e, name);
    v.entries.push_back(std::move(e));
  }
  return v;
}

}  // namespace cg::cli
