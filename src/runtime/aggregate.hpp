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
  // Exclusive time: each duration minus its child operations' (runtime/4 `parent`); without
  // nesting (/1–/3) it equals `timing`.
  TimingStats self;
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

// One module scope path (runtime/4 `module`): inclusive durations and durations exclusive of child
// module scopes.
struct ModuleScopeStats {
  TimingStats total;
  TimingStats self;
};

// Busy time of one thread: the union of its outermost intervals (operations without a parent
// operation, module scopes without a parent scope). A thread's records come in the order they end,
// so the union is kept as a stack of disjoint intervals that a later, enclosing one collapses;
// past kMaxOpen disjoint intervals the oldest is settled (an interval reaching back over it later
// counts only from there). A thread with one interval costs that interval (no deque's blocks:
// a trace of many short-lived threads keeps one of these per thread).
class ThreadWall {
 public:
  static constexpr std::size_t kMaxOpen = 4096;
  void add(std::uint64_t start, std::uint64_t end);
  std::uint64_t busy_ns() const;

 private:
  // open_[first_open_ ..] are the open intervals; settled ones before them are dropped in bulk.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> open_;
  std::size_t first_open_ = 0;
  std::uint64_t open_ns_ = 0;
  std::uint64_t settled_ns_ = 0;
  std::uint64_t settled_end_ = 0;
};

// The union of intervals arriving in any order (every thread's outermost scopes of one trace):
// the run's covered span, idle gaps excluded, overlapping threads counted once. Memory is bounded:
// past kMaxOpen disjoint intervals the earliest is settled (later intervals starting before its
// end are clipped to it).
class SpanUnion {
 public:
  static constexpr std::size_t kMaxOpen = 4096;
  void add(std::uint64_t start, std::uint64_t end);
  std::uint64_t covered_ns() const { return settled_ns_ + open_ns_; }

 private:
  std::map<std::uint64_t, std::uint64_t> open_;  // start -> end, disjoint, not touching
  std::uint64_t open_ns_ = 0, settled_ns_ = 0, settled_end_ = 0;
};

// Where a stats record lies in execution order: step, then at_ns, then thread.
struct StatsOrder {
  std::uint64_t step = 0, at_ns = 0, thread = 0;
  auto operator<=>(const StatsOrder&) const = default;
};

// One stats record, what the aggregate keeps of it.
struct StatsSample {
  StatsOrder at;
  StatsReason reason = StatsReason::sampled;
  std::uint64_t elements = 0, nan = 0, pos_inf = 0, neg_inf = 0, zeros = 0;
  std::optional<FiniteStats> finite;
  std::uint64_t non_finite() const { return nan + pos_inf + neg_inf; }
};

// Every stats record of one module output (path, index) or one gradient key, folded as it streams.
struct StatsSeries {
  std::uint64_t samples = 0;
  StepSet steps;
  StatsSample last;  // the latest in execution order
  std::optional<double> max_abs_max, max_rms;
  std::uint64_t nan = 0, pos_inf = 0, neg_inf = 0;
  double max_zeros_fraction = 0;
  std::optional<StatsSample> first_non_finite;
  // Gradients: norm = rms * sqrt(finite elements), over samples with a finite element.
  std::optional<double> norm_min, norm_max;
  bool all_zero = true;  // every sample's abs_max is 0 (a sample without finite elements is not)
  void add(const StatsSample& s);
  void merge(const StatsSeries& other);
};

std::optional<double> gradient_norm(const StatsSample& s);

class TraceAggregate : public RecordSink {
 public:
  void meta(const RunMeta& m) override;
  void tensor(const TensorRecord& r) override;
  void operation(const OperationRecord& r) override;
  void gradient(const GradientRecord& r) override;
  void value(const ValueRecord& r) override;
  void edge_timing(const EdgeTimingRecord& r) override;
  void module_scope(const ModuleScopeRecord& r) override;
  void stats(const StatsRecord& r) override;

  // Adds another trace's aggregate (another run or rank) into this one.
  void merge(const TraceAggregate& other);
  // Before a trace is read: time of the children its file lists after their parent
  // (TraceInfo::later_children_ns of a first read), so each parent's self time subtracts every
  // child whatever the order.
  void subtract_later_children(std::unordered_map<std::string, std::uint64_t> ns) {
    later_children_ns_ = std::move(ns);
  }

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
  // runtime/4: module scopes by path; busy (wall) time per thread, one entry per thread of each
  // trace merged in (ranks keep their own threads).
  std::map<std::string, ModuleScopeStats, std::less<>> modules;
  bool device_sync = false;          // every merged trace's meta said device_sync
  std::uint64_t traces = 0;          // traces aggregated here (merge adds)
  std::uint64_t nested_records = 0;  // records carrying start_ns and thread (runtime/4)
  std::vector<std::uint64_t> thread_wall_ns() const;
  // Wall time: per trace, the union over its threads of their outermost timed intervals; summed
  // over the traces merged in (their clocks are not comparable). 0 without runtime/4 timestamps.
  std::uint64_t span_ns() const;
  std::optional<std::uint64_t> first_non_finite_value_step;
  // runtime/4 `stats`: module outputs by (path, index), gradients by key.
  std::map<std::pair<std::string, std::uint64_t>, StatsSeries, std::less<>> output_stats;
  std::map<std::string, StatsSeries, std::less<>> grad_stats;
  std::uint64_t stats_records = 0;
  // The earliest output record of each step (to tell whether a module's record was the first of
  // its step, i.e. its inputs were not observed); only steps up to the earliest non-finite output
  // are kept, and at most kMaxStepFirsts of them.
  static constexpr std::size_t kMaxStepFirsts = std::size_t{1} << 16;
  std::map<std::uint64_t, StatsOrder> first_output_in_step;
  std::optional<StatsOrder> first_non_finite_output;

 private:
  std::optional<std::string> phase_;
  std::uint64_t child_ns(StringMap<std::uint64_t>& pending, std::string_view id);
  void wall(std::optional<std::uint64_t> thread, std::uint64_t start, std::uint64_t duration);
  // Child time waiting for its parent's record (children end first): bounded by open scopes.
  StringMap<std::uint64_t> pending_op_children_, pending_module_children_;
  std::unordered_map<std::string, std::uint64_t> later_children_ns_;
  std::map<std::uint64_t, ThreadWall> walls_;
  std::vector<std::uint64_t> merged_walls_;  // threads of traces merged in
  SpanUnion span_;
  std::uint64_t merged_span_ns_ = 0;  // spans of traces merged in
  std::uint64_t last_step_ = ~std::uint64_t{0};
  LocalHint<StringMap<OperationStats>::value_type> last_operation_;
};

}  // namespace cg::runtime
