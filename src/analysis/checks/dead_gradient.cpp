// dead-gradient-path: in a train graph (one that reaches a loss or a backward step), a trainable
// tensor (a `Var`) with no differentiable path to any loss: its gradient is always absent.
#include "analysis/checks/check.hpp"

namespace cg::analysis::checks {
namespace {

class DeadGradient : public Check {
 public:
  void run_end(const RunFacts& run, Reporter& out) override {
    if (!run.train) return;
    const ir::Function& f = out.ir().functions[run.fn_index];
    std::string fid = f.id, source = f.source;
    for (const auto& t : run.trainable) {
      auto r = run.reach({t}, true);
      bool ok = false;
      for (const auto& l : run.loss_tensors)
        ok = ok || r.count(l);
      if (ok) continue;
      const ir::Tensor* tensor = out.tensor(t);
      out.finding("dead-gradient-path", ir::Severity::warning, ir::Confidence::conditional,
                  "trainable expression `" + (tensor ? tensor->name : std::string()) +
                      "` has no differentiable path to a loss",
                  source, {fid, t});
    }
  }
};

}  // namespace

std::unique_ptr<Check> dead_gradient_check() {
  return std::make_unique<DeadGradient>();
}

}  // namespace cg::analysis::checks
