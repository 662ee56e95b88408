#pragma once
// Tensor contracts and per-entrypoint dataflow (spec reference-static §4.3–4.6, §5): operations
// with edit-stable ids, tensors with shape/dtype/device facts, gradient state, phases, and the
// finding passes over them.
#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "analysis/config_values.hpp"
#include "analysis/symbolic.hpp"
#include "ir/model.hpp"
#include "rust/crate.hpp"

namespace cg::analysis {

struct ConfigRef;

struct DataflowOptions {
  std::string candle_version;            // exact candle-core version; empty when unresolved
  const ConfigValues* config = nullptr;  // bound config.json, if any
  // Configs built by an `--arg` call (InventoryOptions::built_configs): bound like the file.
  const std::map<std::size_t, ConfigRef>* built_configs = nullptr;
  // `--arg name=value`: the root constructor's arguments (a number, a boolean, an enum variant).
  const std::map<std::string, SymValue>* args = nullptr;
  // `--input-shape xs=1x3x224x224`: a tensor input's shape by parameter name; the names given
  // that some root entrypoint takes are added to `inputs_used`.
  const std::map<std::string, std::vector<std::string>>* input_tensors = nullptr;
  std::set<std::string>* inputs_used = nullptr;
  // Every tensor input name a root entrypoint takes (what `--input-shape` can name).
  std::set<std::string>* inputs_offered = nullptr;
  // Expression nodes over all entrypoints of the crate; past it the remaining entrypoints are
  // named in one `dataflow-bound` finding (candle-transformers takes 0.34M).
  std::size_t crate_node_budget = 4'000'000;
  // Which of ir.functions to run as entrypoints, asked again after each round with the calls
  // found so far, until it names no new one: one root's analysis runs only the code its
  // component reaches (pipeline/scope.hpp). Unset: every entrypoint of the crate.
  std::function<std::vector<bool>(const ir::ModelIr&)> reach{};
};

// Runs after ir.functions and the parameter inventory are filled. Adds ir.tensors and
// ir.operations, completes each Function's calls/tensor inputs/outputs/phases/is_loss, links
// Parameter::uses, and appends findings.
void build_dataflow(const rust::Crate& crate, const DataflowOptions& opts, ir::ModelIr& ir);

}  // namespace cg::analysis
