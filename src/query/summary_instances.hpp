#pragma once
// What the dataflow's instance calls (ir::InstanceCall, issue #18) say about a module row, from
// the run of the component's main entrypoint (its root module's `forward`): the output shape of
// one call, symbolic in the input's dimension names or with `--input-shape` bound; the
// multiply-adds of that call's operations and nested instance calls (a nested family times its
// count), marked as a lower bound when an operation that may multiply has no rule; and the
// elements its operations output (one forward's activations).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/model.hpp"

namespace cg::query {

using InputDims = std::map<std::string, std::uint64_t>;

// A sum of products of names and numbers: {"b*t" -> 65536, "" -> 42}. `missing` names what was
// left out (an operation without a rule, a shape not known): the sum is then a lower bound.
struct SymSum {
  std::map<std::string, std::uint64_t> terms;
  bool overflow = false;
  std::set<std::string> missing;  // operation names left out
  std::uint64_t missing_ops = 0;  // how many operations (per call of the root) were left out
  // Undecided `if`/`match` sites ("src/models/qwen3.rs:232") whose arms add different sums:
  // the least of them is added (ir::BranchArm), so the sum is a lower bound.
  std::set<std::string> branches;
  bool empty() const { return terms.empty() && !overflow; }
  bool lower_bound() const { return missing_ops > 0 || !branches.empty(); }
  // Adds `times` × a product written `b*t*65536` (names bound by `dims` become numbers);
  // false when the expression is not such a product (nothing is added).
  bool add(const std::string& expr, std::uint64_t times, const InputDims& dims);
  void add(const SymSum& o, std::optional<std::uint64_t> times);
  void scale(std::uint64_t times);
  // "b*t*65,536 + 42"; "" when empty; "over 2^64" on overflow.
  std::string text() const;
  // The number, when no term keeps a name.
  std::optional<std::uint64_t> number() const;
};

class InstanceIndex {
 public:
  InstanceIndex(const ir::ModelIr& ir, const InputDims& dims);
  // The root calls of the main runs, one per component whose root module has a `forward`: each
  // the whole forward pass.
  const std::vector<const ir::InstanceCall*>& main_roots() const { return main_roots_; }
  // The main runs are a root's children's (the root has no forward of its own).
  bool children_run() const { return children_run_; }
  // An operation several module paths run (one wrapper's `self.inner.forward(xs)`): its figure
  // is the first context's, no other module's.
  bool shared_op(const std::string& id) const { return shared_ops_.count(id) > 0; }
  // The call of the main run that a module stands in; nullptr when that run does not reach it.
  const ir::InstanceCall* call_of(const std::string& module_id) const;
  // "[b, t, 4096]", names bound by `--input-shape` as numbers; "" when not known.
  std::string output_shape(const ir::InstanceCall& c) const;
  // The call's own multiply-adds plus its nested calls' (families times their count).
  SymSum mult_adds(const ir::InstanceCall& c) const;
  // Elements output by the call's operations and its nested calls' (one forward's activations).
  SymSum activations(const ir::InstanceCall& c) const;
  // An operation's output shape in a call: a candle-nn layer call's own output shape, else the
  // call's shape of it (`operation_shapes`, in the root's names), else its output tensor's; a
  // dimension the call's frame names itself (`t` from a helper's `xs.dims4()`) is written in the
  // root's names where a shape-keeping operation of the call ties it to one (`unsqueeze` of
  // `[b, 4, seq_len, 32]` giving `[b, 4, 1, t, 32]`: `t` is `seq_len`). Rank null: not known.
  ir::TensorShape op_shape(const ir::InstanceCall& c, const std::string& op_id) const;
  // A dimension expression that is a number, an input dimension name, `--input-shape`'s, or such a
  // name divided by a number: a size known in the root's terms.
  bool root_dimension(const std::string& expr) const;
  const ir::Operation* op(const std::string& id) const;
  const ir::Tensor* tensor(const std::string& id) const;
  // The calls nested directly in a call, in the order the IR lists them.
  const std::vector<const ir::InstanceCall*>& kids(const ir::InstanceCall& c) const;
  // The input dimension names (`b`, `t`): those the Mult-Adds are written in and the root input's
  // own, else the output shapes' names.
  std::set<std::string> symbols() const;

 private:
  const InputDims& dims_;
  std::map<std::string, std::vector<const ir::InstanceCall*>> kids_;
  std::map<std::string, const ir::Operation*> ops_;
  // Operations run by the calls of more than one module path (with_tracing's `self.inner.forward`
  // serves q_proj and lm_head alike): their figure is one call's, not each instance's.
  std::set<std::string> shared_ops_;
  std::map<std::string, const ir::Tensor*> tensors_;
  std::map<std::string, const ir::Module*> modules_;
  std::map<std::string, const ir::InstanceCall*> by_module_;
  std::vector<const ir::InstanceCall*> main_roots_;
  bool children_run_ = false;
  // The input's dimension names: those the main runs' Mult-Adds are written in (`b`, `t`); an
  // output size in any other name (a local's `n_kv * n_rep`) is not known.
  std::set<std::string> input_names_;
  // The dimension names of the main runs' root inputs (`b`, `seq_len`).
  std::set<std::string> root_names_;
  // Per call (of the main runs): a frame-local dimension name -> the root's expression.
  std::map<std::string, std::map<std::string, std::string>> frame_names_;
  ir::TensorShape raw_shape(const ir::InstanceCall& c, const std::string& op_id) const;
  void bind_frame_names(const ir::InstanceCall& c);
};

}  // namespace cg::query
