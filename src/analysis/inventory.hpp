#pragma once
// The parameter inventory (spec reference-static §4.1–4.2): components (public types whose
// constructor takes a VarBuilder), the module tree their constructors build, and every parameter
// leaf they request — key, shape, certainty and source — by walking constructors
// interprocedurally through the VarBuilder algebra. With a bound config.json, loop bounds, shapes
// and branch conditions evaluate where they can; what cannot stays symbolic with a reason.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/config_values.hpp"
#include "analysis/layer_catalog.hpp"
#include "ir/model.hpp"
#include "rust/crate.hpp"

namespace cg::analysis {

struct ConfigRef;

struct InventoryOptions {
  std::string candle_nn_version;  // exact resolved version; empty when unresolved
  // candle-nn's constructors read from its source (pipeline/dependencies.hpp); null: the
  // hand-written catalogue for `candle_nn_version` (LayerCatalog::for_inventory/for_version).
  std::shared_ptr<const LayerCatalog> layer_catalog;
  const ConfigValues* config = nullptr;  // bound config.json, if any
  std::string root;                      // --root T: only this component; empty = all
  // `--arg name=value`: values of the root constructor's scalar parameters (`num_labels`). A
  // name no analyzed root constructor takes is a usage error.
  std::map<std::string, SymValue> args;
  // Out: the configs an `--arg cfg=Config::v0_1_8x7b(false)` call built, by config struct item,
  // so the dataflow binds the constructors' config parameters to them as to a config.json.
  std::map<std::size_t, ConfigRef>* built_configs = nullptr;
};

// Mutually exclusive alternatives (issue #21): a leaf registered in one arm of a branch the
// analysis cannot decide (`if c {..} else {..}`, a `match` arm, `vb.contains_tensor(..)`, the
// fallback a `match (A, B) { .. (Err(e), _) => fallback }` or `A.or_else(|_| fallback)` tries when
// the primary load fails) carries one mark per enclosing branch, outermost first, as an evidence
// entry of its parameter. Totals never sum two alternatives of one group: they pick one (a range).
struct AlternativeMark {
  std::string group;  // unique per branch occurrence in one component's walk
  std::string site;   // "src/model.rs:42", the branch
  std::string label;  // "if vb.contains_tensor(\"lm_head.weight\")", "fallback when .. fails"
  int index = 0;      // this leaf's alternative, 0-based
  int count = 2;      // alternatives of the group (an arm registering nothing still counts)
};
std::string alternative_detail(const AlternativeMark& m);
// nullopt when the evidence is not an alternative mark.
std::optional<AlternativeMark> parse_alternative(const ir::Evidence& e);

// Fills ir.components, ir.modules and ir.parameters, and adds a finding for everything the walk
// did not understand (never a silent omission).
void build_inventory(const rust::Crate& crate, const InventoryOptions& opts, ir::ModelIr& ir);

}  // namespace cg::analysis
