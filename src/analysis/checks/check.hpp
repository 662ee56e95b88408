#pragma once
// Finding rules of the dataflow as small passes, in the style of clang-tidy checks: each check
// looks at the facts the tensor domain records while the interpreter runs — every operation as it
// is applied, and every entrypoint's run when it ends — and reports through one Reporter. A new
// rule is one file here, a row in `dataflow_checks()`, and its rule id in docs/diagnostics.md.
#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analysis/op_catalog.hpp"
#include "analysis/tensor/value.hpp"
#include "ir/model.hpp"

namespace cg::analysis::checks {

using tensor::Val;

// One operation as it is applied (its output value already computed).
struct OperationFact {
  const std::string& name;     // as called (`broadcast_add`, `forward`)
  const std::string& catalog;  // the catalog name its traits are looked up by
  const OpRule& rule;
  const std::vector<const Val*>& ins;  // tensor operands
  const Val& out;
  const std::string& op_id;
  const std::string& out_id;
  const std::string& source;  // "file:line"
};

// One entrypoint's run: what reaches what, losses, trainable tensors, outputs.
struct RunFacts {
  std::size_t fn_index = 0;  // into ir.functions
  std::string entry_fid;
  bool train = false;
  std::set<std::string> loss_tensors, trainable, returned;
  // tensor -> (tensor computed from it, whether that op severs gradients)
  std::unordered_map<std::string, std::vector<std::pair<std::string, bool>>> succ;
  std::set<std::size_t> ops;  // indexes into ir.operations

  // Tensors reachable from `from` (included), optionally not through gradient-severing ops.
  std::set<std::string> reach(const std::set<std::string>& from, bool skip_severing) const;
  bool reaches_any(const std::string& t, const std::set<std::string>& targets) const;
};

// The IR the dataflow writes: tensors by id, and findings (one per finding id) with the static
// dataflow's evidence.
class Reporter {
 public:
  explicit Reporter(ir::ModelIr& ir) : ir_(ir) {}
  ir::ModelIr& ir() { return ir_; }

  // Adds a finding unless one with its id exists; false when it existed.
  bool finding(const std::string& rule, ir::Severity sev, ir::Confidence conf,
               const std::string& msg, const std::string& source, std::vector<std::string> related);
  // Rewrites finding `index` in place (severity, confidence, message), keeping ids unique.
  void rewrite(std::size_t index, const std::string& rule, ir::Severity sev, ir::Confidence conf,
               const std::string& msg, const std::string& source);

  // The tensor with that id, added (with that name, role and owner) when new; its index.
  std::size_t add_tensor(const std::string& id, const std::string& name, ir::TensorRole role,
                         const std::string& owner);
  ir::Tensor* tensor(const std::string& id);

 private:
  ir::ModelIr& ir_;
  std::unordered_set<std::string> emitted_;
  std::unordered_map<std::string, std::size_t> tensor_index_;
};

// A limit of the analysis itself was reached, or an entrypoint could not be analyzed.
struct LimitFact {
  enum class Kind {
    run_budget,     // one entrypoint's node budget: `limit`, `entry_fid`
    nesting,        // expression nesting: `limit`, `entry_fid`, `source`
    recursion,      // a call not inlined again: `function`, `fid`, `depth`, `source`
    crate_budget,   // the crate-wide budget: `limit`, `skipped` entrypoints from `function` on
    entry_missing,  // an entrypoint not found or ambiguous: `function`, `fid`, `source`
  } kind = Kind::run_budget;
  std::string entry_fid, function, fid, source;
  std::size_t limit = 0, depth = 0, skipped = 0;
};

class Check {
 public:
  virtual ~Check() = default;
  virtual void run_begin() {}
  virtual void operation(const OperationFact&, Reporter&) {}
  virtual void run_end(const RunFacts&, Reporter&) {}
  virtual void limit(const LimitFact&, Reporter&) {}
};

// Every dataflow check, in the order their run-end findings are written.
std::vector<std::unique_ptr<Check>> dataflow_checks();

// The individual checks (for tests and for dataflow_checks()).
std::unique_ptr<Check> dtype_agreement_check();  // dtype-conflict, dtype-risk
std::unique_ptr<Check> dead_gradient_check();    // dead-gradient-path
std::unique_ptr<Check> numeric_domain_check();   // numeric-domain-violation, zero-times-infinity
std::unique_ptr<Check> unstable_library_loss_check();  // expanded candle-nn losses
std::unique_ptr<Check> analysis_limits_check();        // dataflow-bound, dataflow-entrypoint

}  // namespace cg::analysis::checks
