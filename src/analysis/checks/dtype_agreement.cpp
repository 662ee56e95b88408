// dtype-conflict: an op whose rule needs one dtype over its tensor operands (`same_as_inputs`)
// meets two different known dtypes (a proven error: Candle refuses it at run time). A known dtype
// against an unknown one is no finding: the unknown operand is usually the model's own dtype, right
// on every run the author tested, and a warning on it was false far more often than true (64 on
// candle-transformers, docs/diagnostics.md).
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
    }
  }
};

}  // namespace

std::unique_ptr<Check> dtype_agreement_check() {
  return std::make_unique<DtypeAgreement>();
}

}  // namespace cg::analysis::checks
