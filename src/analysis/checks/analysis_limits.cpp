// dataflow-bound / dataflow-entrypoint: where the dataflow stopped (a work budget, the nesting
// bound, a recursion guard) or could not start, so a partial graph is never mistaken for a whole.
#include "analysis/checks/check.hpp"

namespace cg::analysis::checks {
namespace {

class AnalysisLimits : public Check {
 public:
  void limit(const LimitFact& l, Reporter& out) override {
    using K = LimitFact::Kind;
    const auto info = ir::Severity::information;
    const auto proven = ir::Confidence::proven;
    switch (l.kind) {
      case K::run_budget:
        out.finding("dataflow-bound", info, proven,
                    "dataflow of `" + l.entry_fid + "` stopped after " + std::to_string(l.limit) +
                        " expression nodes; the graph is partial",
                    "", {l.entry_fid});
        break;
      case K::nesting:
        out.finding("dataflow-bound", ir::Severity::warning, proven,
                    "expression nested deeper than " + std::to_string(l.limit) + " levels in `" +
                        l.entry_fid + "`; the rest of it is not analyzed",
                    l.source, {l.entry_fid});
        break;
      case K::recursion:
        out.finding("dataflow-bound", info, proven,
                    "recursion guard: `" + l.function + "` is not inlined again (depth " +
                        std::to_string(l.depth) + ")",
                    l.source, {l.fid});
        break;
      case K::crate_budget:
        out.finding("dataflow-bound", ir::Severity::warning, proven,
                    "dataflow stopped after " + std::to_string(l.limit) +
                        " expression nodes over the crate; " + std::to_string(l.skipped) +
                        " entrypoints were not analyzed, from `" + l.function + "` on",
                    "", {});
        break;
      case K::entry_missing:
        out.finding("dataflow-entrypoint", info, proven,
                    "entrypoint `" + l.function + "` could not be analyzed: not found or ambiguous",
                    l.source, {l.fid});
        break;
    }
  }
};

}  // namespace

std::unique_ptr<Check> analysis_limits_check() {
  return std::make_unique<AnalysisLimits>();
}

}  // namespace cg::analysis::checks
