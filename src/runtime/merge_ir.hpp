#pragma once
// Applies a merge plan (merge_plan.hpp) to the model IR: operation timings, tensor refinement,
// parameter gradient evidence, findings and the RuntimeSummary (spec §2 with its fixes).
#include <vector>

#include "ir/model.hpp"
#include "runtime/merge_plan.hpp"
#include "runtime/module_paths.hpp"

namespace cg::runtime {

// The IR as the merge sees it. Module roll-up: an operation belongs to its function's owner type.
class IrStaticModel : public StaticModel {
 public:
  explicit IrStaticModel(const ir::ModelIr& ir);
  bool has_operation(std::string_view id) const override;
  bool has_tensor(std::string_view id) const override;
  std::vector<std::string> parameters_for(std::string_view root,
                                          std::string_view key) const override;
  std::optional<std::string> module_of_operation(std::string_view id) const override;

 private:
  StringMap<std::optional<std::string>> operations_;  // id → owner type
  StringMap<bool> tensors_;
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> parameters_;
};

// analysis_id of the IR and the cargo build id when there is a cargo context (§2.1).
Identity expected_identity(const ir::ModelIr& ir);

// Thresholds of the findings drawn from tensor statistics (docs/diagnostics.md).
struct StatsFindingOptions {
  // runtime-activation-growth: a family member's output RMS above `growth_factor` times the
  // previous member's, for `growth_layers` consecutive layers.
  double growth_factor = 2.0;
  std::uint64_t growth_layers = 3;
};

// Merges `traces` into `ir` (then normalizes it) and returns the plan that was applied.
// Module scope paths (and stats paths and gradient keys) resolve under `modules` (caller prefix,
// component root).
MergePlan merge_runtime(ir::ModelIr& ir, const std::vector<LoadedTrace>& traces,
                        const ModulePathOptions& modules = {},
                        const StatsFindingOptions& stats_options = {});

// `query profile` data from an IR that already carries timings.
// Rows sorted by self time (by_self) or by total time.
// `span_ns`: the merged traces' wall time (the sum of their TraceInfo::span_ns), when the caller
// has the traces; without it (0), the sum of the threads' busy time the IR keeps stands in.
ProfileReport profile_report(const ir::ModelIr& ir, bool by_self = true, std::uint64_t span_ns = 0);

}  // namespace cg::runtime
