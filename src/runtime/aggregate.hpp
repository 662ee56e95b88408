#pragma once
// Folds a trace's records into per-static-id statistics while it streams past: memory grows with
// distinct static ids, (from, to) pairs, tensors and gradient identities, never with operation
// events. Aggregates of several traces (runs, ranks) merge with `merge`.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/records.hpp"
#include "runtime/timing_stats.hpp"

namespace cg::runtime {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// A pointer into one table that copies (and so moves) as null: a hint must not travel with
// copied stats into another table.
template <typename T>
struct LocalHint {
  T* to = nullptr;
  LocalHint() = default;
  LocalHint(const LocalHint&) {}
  LocalHint& operator=(const LocalHint&) {
    to = nullptr;
    return *this;
  }
};

struct OperationStats {
  std::string op;  // the first op name seen for this static id
  TimingStats timing;
  std::uint64_t observations = 0;  // with or without a duration
  std::map<std::string, TimingStats, std::less<>> by_phase;
  // The id that followed this one last time: a trace repeats its step's sequence, so the next
  // record is compared with it before the table is hashed.
  LocalHint<std::pair<const std::string, OperationStats>> next;
};

// Every observation of one tensor static id; distinct values per attribute expose conflicts.
struct TensorStats {
  std::string first_event_id;
  std::string first_source;
  std::uint64_t observations = 0;
  std::set<std::string> dtypes, devices, shapes, layouts, requires_grads;  // rendered as §1.6
  std::vector<std::uint64_t> shape;  // the first observation's
  bool contiguous = false;
  bool requires_grad = false;
};

// Facts about one (root, key) at one step (or without a step).
struct GradientStepFacts {
  std::uint8_t states = 0;  // bit per GradientState
  std::optional<double> norm;
  bool norms_agree = true;
  std::vector<std::string> event_ids;  // the first few, for conflict reports
};

struct GradientSeries {
  std::uint64_t observations = 0;
  std::map<std::uint64_t, GradientStepFacts> steps;
  std::optional<GradientStepFacts> unstepped;
};

// Distinct steps, kept as disjoint runs: steps arrive in order, so memory grows with the gaps
// between runs, not with steps (10^7 steps in a std::set took 0.9 GB; as runs, one entry).
// Past kMaxStepRuns separate runs `insert` throws std::length_error (the reader names the line).
class StepSet {
 public:
  static constexpr std::size_t kMaxStepRuns = std::size_t{1} << 20;
  void insert(std::uint64_t step);
  void insert(const StepSet& other);
  std::uint64_t size() const { return count_; }
  std::size_t runs() const { return runs_.size(); }

 private:
  void check() const;
  std::map<std::uint64_t, std::uint64_t> runs_;  // first → last; disjoint, never adjacent
  std::uint64_t count_ = 0;
};

class TraceAggregate : public RecordSink {
 public:
  void meta(const RunMeta& m) override;
  void tensor(const TensorRecord& r) override;
  void operation(const OperationRecord& r) override;
  void gradient(const GradientRecord& r) override;
  void value(const ValueRecord& r) override;
  void edge_timing(const EdgeTimingRecord& r) override;

  // Adds another trace's aggregate (another run or rank) into this one.
  void merge(const TraceAggregate& other);

  StringMap<OperationStats> operations;  // by static id
  TimingStats unattributed_operations;   // durations of operations without a static id
  TimingStats all_operations;            // every duration (the reference's average, §2.4)
  std::uint64_t operations_without_static_id = 0;
  std::map<std::pair<std::string, std::string>, TimingStats> edges;  // by (from, to)
  std::map<std::string, TensorStats> tensors;                        // by static id
  std::uint64_t tensors_without_static_id = 0;
  std::uint64_t tensor_observations = 0;
  std::map<std::pair<std::string, std::string>, GradientSeries> gradients;  // by (root, key)
  std::uint64_t gradient_observations = 0;
  std::uint64_t value_observations = 0;
  std::set<std::string> saturating_sources;
  // Step time for profile shares: durations of operations with no enclosing operation (every
  // operation before runtime/4, which has no `parent`), and the distinct steps they ran in.
  std::uint64_t top_level_ns = 0;
  StepSet steps;
  std::optional<std::uint64_t> first_non_finite_value_step;

 private:
  std::optional<std::string> phase_;
  std::uint64_t last_step_ = ~std::uint64_t{0};
  LocalHint<StringMap<OperationStats>::value_type> last_operation_;
};

}  // namespace cg::runtime
