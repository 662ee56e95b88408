#include "analysis/inventory.hpp"

namespace cg::analysis {

// Placeholder until the inventory issue (#4) lands.
void build_inventory(const rust::Crate&, const InventoryOptions&, ir::ModelIr&) {}

}  // namespace cg::analysis
