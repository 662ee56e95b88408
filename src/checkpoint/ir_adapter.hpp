#pragma once
// The IR's parameters as a verification inventory. The IR says `proven` where we say `certain`:
// only a proven leaf makes a missing key an error; heuristic and unknown leaves become notes.
#include <vector>

#include "checkpoint/inventory.hpp"
#include "ir/model.hpp"

namespace cg::checkpoint {

// One ExpectedParameter per IR parameter, in IR order. The IR carries no family bounds: keys that
// a bound config expanded are concrete already, templates that stayed symbolic match any index.
std::vector<ExpectedParameter> inventory_from_ir(const ir::ModelIr& model);

}  // namespace cg::checkpoint
