// dtype-conflict: an op whose rule needs one dtype over its tensor operands (`same_as_inputs`)
// meets two different known dtypes (a proven error: Candle refuses it at run time). dtype-risk: a
// known dtype meets one a constructor was given at run time (`self.dtype`): it fails for every
// other choice. A known dtype against a merely unknown one is no finding: that was false far more
// often than true (64 warnings on candle-transformers, docs/diagnostics.md).
#include <algorithm>

#include "analysis/checks/check.hpp"
#include "analysis/tensor/dtype.hpp"

namespace cg::analysis::checks {
namespace {

class DtypeAgreement : public Check {
 public:
  void operation(const OperationFact& op, Reporter& out) override {
    if (op.rule.dtype != DtypeRule::same_as_inputs) return;
    tensor::OperandDtypes d = tensor::operand_dtypes(op.name, op.ins);
    if (d.conflict) {
      const std::string& first = d.known.front();
      std::string other =
          *std::find_if(d.known.begin(), d.known.end(), [&](const auto& x) { return x != first; });
      out.finding("dtype-conflict", ir::Severity::error, ir::Confidence::proven,
                  op.name + " requires same dtype, got " + first + " vs " + other, op.source,
                  {op.op_id});
    } else if (!d.known.empty() && !d.params.empty()) {
      // Evidence, not absence: one operand's dtype is fixed, another's is the one the caller
      // chooses at run time (`Tensor::zeros(.., self.dtype, ..)` beside an F32 mask).
      out.finding("dtype-risk", ir::Severity::warning, ir::Confidence::conditional,
                  op.name + " mixes " + d.known.front() + " with `" + d.params.front() +
                      "`, a dtype chosen at run time: it fails unless that is " + d.known.front() +
                      " (convert one operand with to_dtype)",
                  op.source, {op.op_id});
    }
  }
};

}  // namespace

std::unique_ptr<Check> dtype_agreement_check() {
  return std::make_unique<DtypeAgreement>();
}

}  // namespace cg::analysis::checks
