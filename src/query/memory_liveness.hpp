#pragma once
// The peak of live tensors over one forward of the root (issue #38, `candle-graph memory`): the
// dataflow's instance calls walked in execution order, each tensor live from the operation that
// makes it until the last operation of its frame that reads it (Candle frees a tensor's storage
// when its last reference drops). Views (`transpose`, `narrow`, `unsqueeze`, a `reshape` of a
// contiguous tensor) share their source's storage; a called method leaves only its returned tensor
// to its caller. Also the activations autograd keeps for backward (every output of an operation
// downstream of a parameter). The rules and the hand arithmetic they are held to: docs/memory.md.
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "ir/model.hpp"
#include "query/summary_instances.hpp"

namespace cg::query {

struct LivenessOptions {
  std::uint64_t elem_bytes = 4;  // every activation at the weights' dtype ...
  std::string dtype = "F32";     // ... named so; a `to_dtype` to it is the same tensor
  // The positions a cache holds after the forward's append (the context): the size of a `cat`
  // with a tensor the state keeps, along the dimension it appends on.
  std::optional<std::uint64_t> positions_held;
};

struct LivenessPeak {
  std::uint64_t peak_bytes = 0;  // the largest sum of live storages (sizes not known: 0)
  std::string peak_at;           // "model.layers.{i}.self_attn softmax_last_dim (src/model.rs:98)"
  std::uint64_t sum_bytes = 0;   // the input and every allocation (families times their count)
  std::uint64_t kept_bytes = 0;  // allocations autograd keeps for backward (downstream of weights)
  // Allocations whose size is not known (counted as 0: the figures are lower bounds); by name.
  std::uint64_t unknown_allocations = 0;
  std::set<std::string> unknown_names;
  // A crate-local helper run more than once in one frame (`repeat_kv(k)`, `repeat_kv(v)`): the
  // IR lists its operations once, so its tensors are counted once (the peak: a lower bound).
  std::set<std::string> merged_helpers;
  bool exact() const { return unknown_allocations == 0 && merged_helpers.empty(); }
};

// Over the main run whose root call is `root`; `idx` indexes the same IR; `dims` binds the root's
// dimension names (the batch, the context, `--input-shape`).
LivenessPeak activation_peak(const ir::ModelIr& ir, const InstanceIndex& idx,
                             const ir::InstanceCall& root, const InputDims& dims,
                             const LivenessOptions& opts);

}  // namespace cg::query
