#pragma once
// Typed trace records: what every importer (runtime/1–3 documents, JSONL /1–/4) hands inward.
// Record fields are views into the importer's parse buffer and live only for the sink call that
// receives them (zero-copy, like simdjson values); whoever keeps one copies what it needs.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cg::runtime {

enum class Schema : std::uint8_t { v1 = 1, v2 = 2, v3 = 3, v4 = 4 };

// Accepts exactly "candle-graph/runtime/1" … "/4" (spec §1.1; /4 is docs/runtime-4.md).
std::optional<Schema> parse_schema(std::string_view text);
std::string_view schema_name(Schema schema);

enum class GradientState : std::uint8_t { present, missing, zero, non_finite };
std::optional<GradientState> parse_gradient_state(std::string_view text);
std::string_view gradient_state_name(GradientState state);

// `run` of a document, or the flattened fields of a JSONL `meta` line. Owned: one per trace.
struct RunMeta {
  Schema schema = Schema::v1;
  std::string entrypoint;
  std::string profile;
  std::vector<std::string> cargo_features;  // sorted, deduplicated (§1.5)
  std::vector<std::string> cfg;             // sorted, deduplicated (§1.5)
  std::optional<std::string> analysis_id;
  std::optional<std::string> build_id;
  std::optional<std::string> phase;
  // runtime/4 `meta.device_sync` (module scopes): true when the profiler synchronised the device
  // around each module scope; false means every duration is host-side.
  bool device_sync = false;
  // runtime/4 `meta.pid` (the writer's process id) and `meta.start_unix_ns` (wall clock at session
  // start, to align several processes' or ranks' traces); absent in older traces.
  std::optional<std::uint64_t> pid;
  std::optional<std::uint64_t> start_unix_ns;
};

struct TensorRecord {
  std::string_view event_id;
  std::optional<std::string_view> static_id;
  std::optional<std::string_view> source;
  std::optional<std::uint64_t> step;
  std::span<const std::uint64_t> shape;
  std::string_view dtype;
  std::string_view device;
  bool contiguous = false;
  bool requires_grad = false;
};

// The last `thread` number the profiler writes (threads past it share it): readers refuse larger
// ones, so what they keep per thread is bounded.
inline constexpr std::uint64_t kMaxTraceThread = 65535;

struct OperationRecord {
  std::string_view event_id;
  std::string_view op;
  std::optional<std::string_view> static_id;
  std::optional<std::string_view> source;
  std::optional<std::string_view> output;
  std::optional<std::uint64_t> step;
  std::optional<std::uint64_t> duration_ns;
  // runtime/4 only (required there): begin instant since session start, thread, enclosing op.
  std::optional<std::uint64_t> start_ns;
  std::optional<std::uint64_t> thread;
  std::optional<std::string_view> parent;
};

struct GradientRecord {
  std::string_view event_id;
  std::string_view root;
  std::string_view key;
  GradientState state = GradientState::present;
  std::optional<std::uint64_t> step;
  std::optional<double> norm;
};

struct ValueRecord {
  std::string_view event_id;
  std::optional<std::string_view> static_id;
  std::optional<std::string_view> source;
  std::optional<std::uint64_t> step;
  double min = 0;
  double max = 0;
  double abs_max = 0;
  std::uint64_t nonfinite_count = 0;
  std::uint64_t saturated_count = 0;
};

struct EdgeTimingRecord {
  std::string_view event_id;
  std::string_view from_static_id;
  std::string_view to_static_id;
  std::uint64_t duration_ns = 0;
  std::optional<std::uint64_t> step;
  std::optional<std::uint64_t> at_ns;   // runtime/4
  std::optional<std::uint64_t> thread;  // runtime/4
};

// runtime/4 `module` (docs/runtime-4.md, Additions): one closed module scope, keyed by the
// module's VarBuilder path. Also what the tracing-chrome importer produces from `tracing` spans.
struct ModuleScopeRecord {
  std::string_view event_id;
  std::string_view path;  // "model.layers.3.self_attn"
  std::optional<std::uint64_t> step;
  std::uint64_t duration_ns = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t thread = 0;
  std::optional<std::string_view> parent;  // event_id of the enclosing module scope, same thread
};

// runtime/4 `stats` (docs/runtime-4.md, "Additions: tensor statistics"): a few scalars about one
// tensor, a module's output or a parameter's gradient, as the program computed them. The five
// numbers are over the finite elements only and present iff some element is finite.
enum class StatsOf : std::uint8_t { output, grad };
enum class StatsReason : std::uint8_t { sampled, non_finite };

struct FiniteStats {
  double min = 0, max = 0, mean = 0, rms = 0, abs_max = 0;
};

struct StatsRecord {
  std::string_view event_id;
  std::string_view path;  // module path (output) or parameter VarBuilder key (grad)
  StatsOf of = StatsOf::output;
  std::uint64_t index = 0;  // which of a module's outputs
  StatsReason reason = StatsReason::sampled;
  std::uint64_t step = 0;
  std::uint64_t at_ns = 0;
  std::uint64_t thread = 0;
  std::string_view dtype;
  std::span<const std::uint64_t> shape;
  std::uint64_t elements = 0;
  std::uint64_t nan = 0, pos_inf = 0, neg_inf = 0, zeros = 0;
  std::optional<FiniteStats> finite;
  std::uint64_t non_finite() const { return nan + pos_inf + neg_inf; }
};

// runtime/4 `end`: counts the writer claims; the reader checks them against what it read.
struct EndRecord {
  std::uint64_t operations = 0;
  std::uint64_t edge_timings = 0;
  std::uint64_t dropped = 0;
  std::uint64_t errors = 0;
  std::uint64_t open_operations = 0;
  std::uint64_t threads = 0;
  std::uint64_t duration_ns = 0;
  // Present only when the session began a module scope (absent reads as 0).
  std::uint64_t modules = 0;
  std::uint64_t open_modules = 0;
  // Present only when the session wrote a `stats` line (absent reads as 0).
  std::uint64_t stats = 0;
};

// Receives validated records in file order. `meta` may arrive after other records in /1–/3 JSONL
// (§1.3: meta anywhere), so a sink must not assume it first.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void meta(const RunMeta&) {}
  virtual void tensor(const TensorRecord&) {}
  virtual void operation(const OperationRecord&) {}
  virtual void gradient(const GradientRecord&) {}
  virtual void value(const ValueRecord&) {}
  virtual void edge_timing(const EdgeTimingRecord&) {}
  virtual void module_scope(const ModuleScopeRecord&) {}
  virtual void stats(const StatsRecord&) {}
  virtual void end(const EndRecord&) {}
};

}  // namespace cg::runtime
