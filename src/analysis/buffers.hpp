#pragma once
// The tensors a model's constructor computes and keeps in its fields (issue #38, `memory`'s
// buffers): rotary cos/sin tables, causal masks, position ids. The root's constructor is walked
// with the config bound (and a crate type the root's forward takes as an argument, as llama's
// `Cache`, from its own constructor), following crate-local constructors and helpers, loops over
// known ranges (a layer loop of 32 runs what it calls 32 times) and `Arc`/`Rc`/clones (the same
// tensor, once). Shapes are evaluated from `Tensor::arange`, `from_vec`, `zeros`, `tril2`, .. and
// the operations applied to them (`reshape`, `matmul`, `cat`, `sin`, `to_dtype`, ..). What a
// VarBuilder gives is a weight, never a buffer. A tensor field whose value is not followed is
// recorded with an unknown shape, never left out silently.
#include <map>
#include <string>

#include "analysis/config_binding.hpp"
#include "analysis/config_values.hpp"
#include "analysis/symbolic.hpp"
#include "ir/model.hpp"
#include "rust/crate.hpp"

namespace cg::analysis {

struct BufferOptions {
  const ConfigValues* config = nullptr;
  const std::map<std::size_t, ConfigRef>* built_configs = nullptr;
  const std::map<std::string, SymValue>* args = nullptr;  // `--arg`
};

// Fills ir.buffers for the IR's one component (nothing when there are several or none).
void build_buffers(const rust::Crate& crate, const BufferOptions& opts, ir::ModelIr& ir);

}  // namespace cg::analysis
