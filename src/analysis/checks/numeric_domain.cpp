// numeric-domain-violation: an op whose operand must be non-zero / non-negative / strictly
// positive (`log`, `recip`, `sqrt`, a divisor) gets one from a producer whose domain includes a
// bad value — proven when every value is bad (`log` of zeros). zero-times-infinity: a multiply of
// a factor that can be 0 with an undischarged `log` (`0 * -inf = NaN`). Severity follows the
// impact (numeric_impact.hpp).
#include "analysis/checks/numeric_impact.hpp"

namespace cg::analysis::checks {
namespace {

DomainRequirement requirement_of(Requirement r) {
  return r == Requirement::non_zero       ? DomainRequirement::non_zero
         : r == Requirement::non_negative ? DomainRequirement::non_negative
                                          : DomainRequirement::strictly_positive;
}

class NumericDomainCheck : public HazardCheck {
 public:
  void operation(const OperationFact& op, Reporter&) override {
    const OpTraits& traits = op_traits(op.catalog);
    const auto& ins = op.ins;
    if (traits.combine == DomainCombine::product && ins.size() >= 2) {
      for (std::size_t k = 0; k < 2; ++k) {
        const Val* a = ins[k];
        const Val* b = ins[1 - k];
        if (b->undischarged_log && a->dom != NumericDomain::unknown &&
            domain_includes_zero(a->dom)) {
          // Certain only when both halves are: a factor that is 0 on every execution times a
          // `log` of 0 on every execution. Otherwise each may happen, and it is a warning.
          bool certain = a->dom == NumericDomain::zero && b->log_of_zero;
          hazards_.push_back({"zero-times-infinity", certain, false, kZeroTimesLogMessage,
                              op.source, op.out_id, op.op_id});
          break;
        }
      }
    }
    if (op.rule.requirement == Requirement::none) return;
    auto k = static_cast<std::size_t>(op.rule.checked_operand);
    if (k >= ins.size()) return;
    // Proven only when every value the producer can take is bad; a sigmoid that may saturate,
    // an `exp` that may underflow or a ReLU that may output 0 is a possible violation, reported
    // for `log`/`recip`. A producer whose domain is unknown is no evidence of anything: a
    // learned `alpha + 1e-9` or a position bucket the code keeps positive would be a warning
    // on working code, so it is not reported.
    auto v = domain_violation(requirement_of(op.rule.requirement), ins[k]->dom);
    if (!v) return;
    if (*v != Violation::proven &&
        (!traits.report_possible_violation || ins[k]->dom == NumericDomain::unknown))
      return;
    hazards_.push_back(
        {"numeric-domain-violation", *v == Violation::proven, false,
         "`" + op.catalog + "` needs a " + std::string(to_string(op.rule.requirement)) +
             " operand, but its producer's domain is " + std::string(to_string(ins[k]->dom)),
         op.source, op.out_id, op.op_id});
  }
};

}  // namespace

std::unique_ptr<Check> numeric_domain_check() {
  return std::make_unique<NumericDomainCheck>();
}

}  // namespace cg::analysis::checks
