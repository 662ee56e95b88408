#include <utility>

#include "analysis/checks/check.hpp"
#include "ir/stable_id.hpp"

namespace cg::analysis::checks {

bool Reporter::finding(const std::string& rule, ir::Severity sev, ir::Confidence conf,
                       const std::string& msg, const std::string& source,
                       std::vector<std::string> related) {
  ir::Finding f = ir::make_finding(rule, sev, conf, msg, source, std::move(related));
  if (!emitted_.insert(f.id).second) return false;
  ir::Evidence e;
  e.kind = ir::EvidenceKind::source;
  e.confidence = conf;
  if (!source.empty()) e.source = source;
  e.detail = "static dataflow";
  f.evidence.push_back(std::move(e));
  ir_.findings.push_back(std::move(f));
  return true;
}

void Reporter::rewrite(std::size_t index, const std::string& rule, ir::Severity sev,
                       ir::Confidence conf, const std::string& msg, const std::string& source) {
  ir::Finding& old = ir_.findings[index];
  emitted_.erase(old.id);
  old.severity = sev;
  old.confidence = conf;
  old.message = msg;
  old.id = ir::finding_id(rule, source, old.message);
  old.evidence.front().confidence = conf;
  emitted_.insert(old.id);
}

std::size_t Reporter::add_tensor(const std::string& id, const std::string& name,
                                 ir::TensorRole role, const std::string& owner) {
  auto it = tensor_index_.find(id);
  if (it != tensor_index_.end()) return it->second;
  ir::Tensor t;
  t.id = id;
  t.name = name;
  t.role = role;
  t.owner_function = owner;
  ir_.tensors.push_back(std::move(t));
  tensor_index_[id] = ir_.tensors.size() - 1;
  return ir_.tensors.size() - 1;
}

ir::Tensor* Reporter::tensor(const std::string& id) {
  auto it = tensor_index_.find(id);
  return it == tensor_index_.end() ? nullptr : &ir_.tensors[it->second];
}

std::set<std::string> RunFacts::reach(const std::set<std::string>& from, bool skip_severing) const {
  std::set<std::string> seen(from);
  std::vector<std::string> work(from.begin(), from.end());
  while (!work.empty()) {
    std::string t = work.back();
    work.pop_back();
    auto it = succ.find(t);
    if (it == succ.end()) continue;
    for (const auto& [o, sev] : it->second)
      if (!(skip_severing && sev) && seen.insert(o).second) work.push_back(o);
  }
  return seen;
}

bool RunFacts::reaches_any(const std::string& t, const std::set<std::string>& targets) const {
  auto r = reach({t}, false);
  for (const auto& x : targets)
    if (r.count(x)) return true;
  return false;
}

std::vector<std::unique_ptr<Check>> dataflow_checks() {
  std::vector<std::unique_ptr<Check>> out;
  out.push_back(dtype_agreement_check());
  out.push_back(dead_gradient_check());
  out.push_back(numeric_domain_check());
  out.push_back(unstable_library_loss_check());
  out.push_back(analysis_limits_check());
  return out;
}

}  // namespace cg::analysis::checks
