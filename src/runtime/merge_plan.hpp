#pragma once
// What merging traces into the model IR changes (spec §2, with its holes fixed), computed against
// a narrow view of the static model so the rules are testable without building an IR. The IR
// adapter applies a plan to `cg::ir::ModelIr`.
//
// Fixes over the reference: several traces (runs, ranks) — each passes the identity gate on its
// own and the accepted ones are aggregated; every static id the model does not know (operation,
// tensor, edge end, gradient parameter) is reported with its count, never dropped; gradient
// findings come from the fixed audit (latest step wins, same-step contradictions are conflicts);
// timings carry p50/p95; edge ends are validated against the model.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/aggregate.hpp"
#include "runtime/audit.hpp"
#include "runtime/reader.hpp"

namespace cg::runtime {

class StaticModel {
 public:
  virtual ~StaticModel() = default;
  virtual bool has_operation(std::string_view id) const = 0;
  virtual bool has_tensor(std::string_view id) const = 0;
  // Ids of the parameters bound at VarBuilder `root` with `key` (empty: none).
  virtual std::vector<std::string> parameters_for(std::string_view root,
                                                  std::string_view key) const = 0;
  // Module path owning an operation: the owner type of the operation's function.
  virtual std::optional<std::string> module_of_operation(std::string_view id) const = 0;
};

struct LoadedTrace {
  TraceInfo info;
  TraceAggregate aggregate;
};

// Reads every trace (each keeps its identity); the first bad one throws cg::InputError.
std::vector<LoadedTrace> read_traces(const std::vector<std::filesystem::path>& paths,
                                     const ReadOptions& options = {});

struct TimingRecord {
  std::uint64_t samples = 0, total_ns = 0, mean_ns = 0, min_ns = 0, max_ns = 0, p50_ns = 0,
                p95_ns = 0;
};
TimingRecord timing_record(const TimingStats& stats);

struct OperationTiming {
  std::string static_id;
  std::string op;
  TimingRecord timing;
  std::map<std::string, TimingRecord> by_phase;
  std::optional<std::uint64_t> self_ns;  // exclusive total, when the traces carry nesting (/4)
};

struct EdgeTiming {
  std::string from_static_id;
  std::string to_static_id;
  TimingRecord timing;
};

struct TensorRefinement {
  std::string static_id;
  std::vector<std::uint64_t> shape;
  std::string dtype;
  std::string device;
  bool contiguous = false;
  bool requires_grad = false;
  std::string source;
  std::string detail;  // evidence text: "agreed runtime observation <event_id> (N observations)"
};

struct GradientEvidence {
  std::vector<std::string> parameter_ids;
  std::string detail;  // "gradient present, norm 0.5 at step 3"
};

enum class Severity : std::uint8_t { information, warning, error };
enum class Confidence : std::uint8_t { proven, unknown };

struct RuntimeFinding {
  std::string rule;  // runtime-identity, runtime-unmapped, runtime-gradient, runtime-*-conflict
  Severity severity = Severity::information;
  Confidence confidence = Confidence::unknown;
  std::string message;
  std::vector<std::string> related;
};

struct TraceVerdict {
  std::string path;
  std::string schema;
  std::string entrypoint;
  std::optional<std::string> phase;
  std::optional<std::string> analysis_id;
  std::optional<std::string> build_id;
  std::vector<IdentityMismatch> mismatches;
  bool merged = false;
  std::uint64_t operations = 0;
  std::uint64_t skipped_lines = 0;
  bool truncated = false;
};

struct MergePlan {
  std::vector<TraceVerdict> traces;
  std::vector<OperationTiming> operations;  // matched to model operations, by static id
  std::vector<EdgeTiming> edges;            // by (from, to)
  std::vector<TensorRefinement> tensors;
  std::vector<GradientEvidence> gradients;
  std::vector<RuntimeFinding> findings;
  RuntimeAudit audit;  // over the merged traces
  // Summary counts over the merged traces.
  std::uint64_t tensor_observations = 0, operation_observations = 0, gradient_observations = 0,
                value_observations = 0, edge_observations = 0;
  std::optional<std::uint64_t> mean_operation_ns;
  std::uint64_t top_level_ns = 0;
  std::uint64_t steps = 0;
  // Module scopes of the merged traces by path (resolved against the IR by merge_runtime).
  std::map<std::string, ModuleScopeStats, std::less<>> modules;
  bool device_sync = false;                   // every merged trace was device-synchronised
  std::vector<std::uint64_t> thread_busy_ns;  // per thread of every merged trace (/4)
  std::uint64_t wall_ns = 0;  // each merged trace's span (its threads' union), summed (/4)
  // runtime/4 `stats` of the merged traces (resolved against the IR by merge_runtime).
  std::uint64_t stats_records = 0;
  std::map<std::pair<std::string, std::uint64_t>, StatsSeries, std::less<>> output_stats;
  std::map<std::string, StatsSeries, std::less<>> grad_stats;
  std::map<std::uint64_t, StatsOrder> first_output_in_step;
};

MergePlan plan_merge(const std::vector<LoadedTrace>& traces, const Identity& expected,
                     const StaticModel& model);

// `profile` / `query profile`: operations and modules with inclusive (total) and exclusive (self)
// time and their share of wall time. Wall time is the run's span: per trace, the union over its
// threads of their outermost timed intervals (runtime/4), summed over traces (`profile` passes
// it; an IR alone gives the sum of the threads' busy time); without timestamps (/1–/3) the sum of
// operation self time (= total there). Self times partition wall time, so self shares add up to at
// most 100 %; total shares of nested rows overlap by design.
struct ProfileRow {
  std::string id;  // static id, owner type, or module scope path
  std::string op;  // empty for modules
  TimingRecord timing;
  double share_of_step = 0;  // self / wall
  std::uint64_t self_ns = 0;
  double total_share = 0;  // total / wall
  // Owner-type roll-ups know only sums: their min/max/mean/p50/p95 are absent, not 0.
  bool sums_only = false;
  std::string module{};     // module scopes: IR module id
  std::string type_name{};  // module scopes: the IR module's type (`Llama` for the root, path "")
  std::optional<std::uint64_t> instance{};
};
struct ProfileReport {
  std::uint64_t step_time_ns = 0;  // wall time, all steps and threads
  std::uint64_t steps = 0;
  std::vector<std::uint64_t> thread_busy_ns;
  bool host_side = true;  // no merged trace had device_sync
  bool has_module_scopes = false;
  std::vector<ProfileRow> operations;       // by self (or total) desc, then id
  std::vector<ProfileRow> modules;          // operation time by owner type; "<unknown>" if none
  std::vector<ProfileRow> module_scopes;    // runtime/4 module scope instances, by path
  std::vector<ProfileRow> module_families;  // `{i}` families, each folding its instances
};

ProfileReport profile_report(const std::vector<OperationTiming>& operations,
                             std::uint64_t step_time_ns, std::uint64_t steps,
                             const StaticModel& model, bool by_self = true);

}  // namespace cg::runtime
