// unstable-library-loss: a candle-nn loss whose expansion computes `log(sigmoid(x))` and
// multiplies it by the targets (binary_cross_entropy_with_logit): the log is -inf where the
// logits saturate and `0 * -inf` is NaN. Reported as the expansion's two hazards, each with the
// expansion's source; where it reaches a loss or gradients the multiply is this rule.
#include "analysis/checks/numeric_impact.hpp"

namespace cg::analysis::checks {
namespace {

class UnstableLibraryLoss : public HazardCheck {
 public:
  void operation(const OperationFact& op, Reporter&) override {
    const OpTraits& traits = op_traits(op.catalog);
    if (!traits.expanded_log_loss) return;
    const std::string suffix = " [expanded from " + std::string(traits.expansion) + "]";
    // The expansion's log can be -inf only when the logits saturate: possible, not certain.
    hazards_.push_back({"numeric-domain-violation", false, true,
                        "`log` needs a strictly_positive operand, but its producer's domain is "
                        "saturating_unit (sigmoid of the logits)" +
                            suffix,
                        op.source, op.out_id, op.op_id});
    hazards_.push_back({"zero-times-infinity", false, true, kZeroTimesLogMessage + suffix,
                        op.source, op.out_id, op.op_id});
  }
};

}  // namespace

std::unique_ptr<Check> unstable_library_loss_check() {
  return std::make_unique<UnstableLibraryLoss>();
}

}  // namespace cg::analysis::checks
