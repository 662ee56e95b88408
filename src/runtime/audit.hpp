#pragma once
// Gradient audit, tensor agreement and identity check (spec §1.6) over an aggregate, with the
// reference's holes fixed:
// - a stepped series is judged by its latest step (latest step wins);
// - two different states at the same step are a conflict, whether or not facts carry steps
//   (the reference never saw one when every fact was stepped);
// - facts without a step conflict when their states differ; when a series also has stepped facts,
//   the latest step decides the classification and the unstepped disagreement is still reported;
// - problems found in a stepped series are always listed (the reference dropped them from
//   findings when no single agreed fact existed).
// Only states decide conflicts: norms legitimately differ across ranks at one step.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/aggregate.hpp"
#include "runtime/records.hpp"

namespace cg::runtime {

struct GradientVerdict {
  std::string root;
  std::string key;
  GradientState state = GradientState::present;
  std::optional<std::uint64_t> step;  // the latest step, for a series
  std::optional<double> norm;         // only when every fact that decided agrees on it
};

struct GradientConflict {
  std::string root;
  std::string key;
  std::optional<std::uint64_t> step;  // none: among facts without a step
  std::vector<std::string> states;    // sorted distinct
  std::vector<std::string> event_ids;
};

struct TensorConflict {
  std::string static_id;
  std::string kind;  // dtype < device < shape < layout < requires_grad
  std::vector<std::string> values;
};

struct Identity {
  std::optional<std::string> analysis_id;
  std::optional<std::string> build_id;
};

struct IdentityMismatch {
  std::string field;  // analysis_id | build_id
  std::string expected;
  std::string observed;
};

struct RuntimeAudit {
  std::vector<GradientVerdict> verdicts;  // every classified (root, key), sorted
  std::vector<GradientVerdict> missing_gradients, zero_gradients, non_finite_gradients;
  std::vector<GradientConflict> gradient_conflicts;
  std::vector<TensorConflict> tensor_conflicts;
  std::optional<std::uint64_t> first_non_finite_step;
  std::vector<std::string> saturating_activations;

  bool is_clean() const {
    return missing_gradients.empty() && zero_gradients.empty() && non_finite_gradients.empty() &&
           gradient_conflicts.empty() && tensor_conflicts.empty();
  }
};

RuntimeAudit audit(const TraceAggregate& aggregate);

// §1.6: a field is compared only when both sides supply it; omission is compatible.
std::vector<IdentityMismatch> identity_mismatches(const RunMeta& trace, const Identity& expected);

}  // namespace cg::runtime
