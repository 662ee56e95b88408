#include "analysis/checks/numeric_impact.hpp"

namespace cg::analysis::checks {

const char* const kZeroTimesLogMessage =
    "multiply combines a domain that includes 0 with an undischarged `log`, which yields "
    "`0 * -inf = NaN` rather than a loud `-inf` loss";

void HazardReport::report(const RunFacts& run, const std::vector<Hazard>& hazards, Reporter& out) {
  if (hazards.empty()) return;
  const bool entry_is_loss = out.ir().functions[run.fn_index].is_loss;
  std::set<std::string> trainable_reach = run.reach(run.trainable, true);
  for (const auto& p : hazards) {
    std::string impact;
    enum { loss, poison, infer, local } kind = local;
    if (run.loss_tensors.count(p.tensor) || run.reaches_any(p.tensor, run.loss_tensors)) {
      kind = loss;
      impact = " (training impact: loss can become NaN when values saturate)";
    } else if (trainable_reach.count(p.tensor)) {
      kind = poison;
      impact = " (training impact: gradients can be poisoned)";
    } else if (run.reaches_any(p.tensor, run.returned)) {
      kind = infer;
      impact = " (inference impact: the output can become NaN)";
    } else {
      impact = " (local impact)";
    }
    // Proven (an error where it reaches a loss, gradients or an output) only when it happens on
    // every execution; a value that merely may be bad is a conditional warning.
    ir::Severity sev = ir::Severity::warning;
    ir::Confidence conf = p.proven ? ir::Confidence::proven : ir::Confidence::conditional;
    if (p.proven && (kind == loss || kind == poison)) sev = ir::Severity::error;
    if (p.proven && kind == infer && !entry_is_loss) sev = ir::Severity::error;
    std::string rule = p.rule;
    if (p.library && rule == "zero-times-infinity" && (kind == loss || kind == poison))
      rule = "unstable-library-loss";
    // One finding per (rule, operation): a later entrypoint only replaces it when its impact is
    // worse (an op reached from several entrypoints is not reported twice).
    std::string key = rule + '\n' + p.op;
    auto prev = at_.find(key);
    if (prev != at_.end()) {
      const ir::Finding& old = out.ir().findings[prev->second];
      bool old_local = old.message.find("(local impact)") != std::string::npos;
      bool worse = static_cast<int>(sev) < static_cast<int>(old.severity) ||
                   (sev == old.severity && kind != local && old_local);
      if (worse) out.rewrite(prev->second, rule, sev, conf, p.message + impact, p.source);
      continue;
    }
    std::size_t before = out.ir().findings.size();
    if (out.finding(rule, sev, conf, p.message + impact, p.source, {p.op, p.tensor}))
      at_[key] = before;
  }
}

}  // namespace cg::analysis::checks
