#include "checkpoint/ir_adapter.hpp"

namespace cg::checkpoint {
namespace {

// The checkpoint report has three words; a heuristic claim is reported as unknown.
Certainty certainty_of(ir::Confidence c) {
  return c == ir::Confidence::heuristic ? ir::Confidence::unknown : c;
}

}  // namespace

std::vector<ExpectedParameter> inventory_from_ir(const ir::ModelIr& model) {
  std::vector<ExpectedParameter> out;
  out.reserve(model.parameters.size());
  for (const auto& p : model.parameters) {
    ExpectedParameter e;
    e.id = p.id;
    e.builder_root = p.builder_root;
    e.key = p.key;
    e.shape = p.shape;
    if (p.symbolic_shape) {
      // Appended piecewise: GCC 12's -Wrestrict misfires on `"(" + …` chains.
      std::string text(1, '(');
      for (std::size_t i = 0; i < p.symbolic_shape->size(); ++i) {
        if (i) text.append(", ", 2);
        text.append((*p.symbolic_shape)[i]);
      }
      text.push_back(')');
      e.symbolic_shape = std::move(text);
    }
    e.certainty = certainty_of(p.confidence);
    e.reason = p.reason.value_or("");
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace cg::checkpoint
