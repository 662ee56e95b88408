#pragma once
// The parameter inventory (spec reference-static §4.1–4.2): components (public types whose
// constructor takes a VarBuilder), the module tree their constructors build, and every parameter
// leaf they request — key, shape, certainty and source — by walking constructors
// interprocedurally through the VarBuilder algebra. With a bound config.json, loop bounds, shapes
// and branch conditions evaluate where they can; what cannot stays symbolic with a reason.
#include <string>
#include <vector>

#include "analysis/config_values.hpp"
#include "ir/model.hpp"
#include "rust/crate.hpp"

namespace cg::analysis {

struct InventoryOptions {
  std::string candle_nn_version;         // exact resolved version; empty when unresolved
  const ConfigValues* config = nullptr;  // bound config.json, if any
  std::string root;                      // --root T: only this component; empty = all
};

// Fills ir.components, ir.modules and ir.parameters, and adds a finding for everything the walk
// did not understand (never a silent omission).
void build_inventory(const rust::Crate& crate, const InventoryOptions& opts, ir::ModelIr& ir);

}  // namespace cg::analysis
