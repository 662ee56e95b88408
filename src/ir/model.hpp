#pragma once
// The candle-graph/model/1 IR (spec §2, minus the heuristic-only sections). Plain value types with
// defaulted equality so a round trip can be checked with ==. Optional fields serialize as null and
// every list is always written. Paths (`source`, cargo paths) are relative to the crate root.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/enums.hpp"

namespace cg::ir {

inline constexpr std::string_view kModelSchema = "candle-graph/model/1";

struct Evidence {
  EvidenceKind kind = EvidenceKind::source;
  Confidence confidence = Confidence::unknown;
  std::optional<std::string> source;  // "src/model.rs:42"
  std::string detail;
  bool operator==(const Evidence&) const = default;
};

struct CargoSummary {
  std::string build_id;
  std::string workspace_root;  // relative, usually "."
  std::string manifest_path;   // relative, e.g. "Cargo.toml"
  std::string package_name;
  std::string package_version;
  std::optional<std::string> selected_target;
  std::vector<std::string> active_features;
  std::vector<std::string> active_cfg;
  std::map<std::string, std::string> candle_packages;  // name -> version
  bool operator==(const CargoSummary&) const = default;
};

// Counters recomputed by normalize() from the sections (§2.3 "Coverage").
struct Coverage {
  std::uint64_t components = 0;
  std::uint64_t architecture_edges = 0;
  std::uint64_t modules = 0;
  std::uint64_t parameters = 0;
  std::uint64_t functions = 0;
  std::uint64_t entrypoints = 0;
  std::uint64_t component_entrypoints = 0;
  std::uint64_t composition_edges = 0;
  std::uint64_t tensors = 0;
  std::uint64_t operations = 0;
  std::uint64_t linked_parameter_uses = 0;
  std::uint64_t tensors_with_shape = 0;
  std::uint64_t tensors_with_dtype = 0;
  std::uint64_t tensors_with_device = 0;
  std::uint64_t runtime_observations = 0;
  std::uint64_t diagnostics = 0;
  bool operator==(const Coverage&) const = default;
};

struct Builder {
  std::string name;
  BuilderRole role = BuilderRole::unknown;
  std::vector<Evidence> evidence;
  bool operator==(const Builder&) const = default;
};

struct Component {
  std::string id, name, qualified_name, source;
  std::string constructor;  // function id
  std::vector<Builder> builders;
  std::vector<std::string> modules, parameters, entrypoints;  // ids
  std::vector<Evidence> evidence;
  bool operator==(const Component&) const = default;
};

// Only `composition-edge:` ids are produced (no name-guessing architecture edges).
struct ArchitectureEdge {
  std::string id, from, to, via_function, source;
  std::vector<Evidence> evidence;
  bool operator==(const ArchitectureEdge&) const = default;
};

struct Module {
  std::string id, component;
  std::optional<std::string> parent;  // module id
  std::string type_name;
  std::optional<std::string> qualified_type, field;
  std::string builder_root, prefix;
  std::optional<std::string> repeat;  // "i in 0..n"
  std::string source;
  Confidence confidence = Confidence::unknown;
  // A candle-nn layer's constructor configuration, by field name, as the source gives it
  // (`Conv2dConfig { stride: 2, .. }` with candle-nn's defaults for the rest: "stride" -> "2",
  // "padding" -> "0"); a value the analysis does not evaluate is its expression text. Conv layers
  // only (padding, stride, dilation, groups, output_padding); empty otherwise.
  std::map<std::string, std::string> attributes;
  // The numbers the instance's constructor call passed, by parameter name, where the call gave a
  // number (`MultiHeadAttention::load(n_state, n_head, vb)` with the config bound: "n_head" ->
  // "6"); parameters given anything else are absent. Empty for candle-nn layers.
  std::map<std::string, std::string> arguments;
  bool operator==(const Module&) const = default;
};

struct Parameter {
  std::string id, component;
  std::optional<std::string> module;
  std::string key, builder_root;
  ParameterRole role = ParameterRole::unknown;
  std::string kind;  // acquisition label: "nn::linear", "get", ...
  std::optional<std::vector<std::string>> symbolic_shape;  // dim expressions
  std::optional<std::vector<std::uint64_t>> shape;         // when a config is bound
  Confidence confidence = Confidence::unknown;             // certainty of the leaf
  std::optional<std::string> reason;                       // why not proven
  std::optional<std::vector<std::uint64_t>> checkpoint_shape;
  std::optional<std::string> checkpoint_dtype;
  std::string source;
  std::vector<std::string> uses, optimizer_memberships;  // ids
  std::vector<Evidence> evidence;
  bool operator==(const Parameter&) const = default;
};

struct FunctionParam {
  std::string name, type_name;
  bool operator==(const FunctionParam&) const = default;
};

struct Function {
  std::string id, name, qualified_name;
  std::optional<std::string> owner_type;
  Visibility visibility = Visibility::unknown;
  std::vector<FunctionParam> parameters;
  std::optional<std::string> return_type;  // null for "()"
  std::vector<std::string> cfg_predicates;
  std::optional<bool> cfg_active;
  std::string source;
  std::vector<std::string> calls, tensor_inputs, tensor_outputs;  // ids
  bool is_entrypoint = false;
  bool is_loss = false;
  std::vector<ExecutionPhase> execution_phases;
  bool operator==(const Function&) const = default;
};

struct Dimension {
  std::optional<std::string> name;
  std::string expr;
  bool operator==(const Dimension&) const = default;
};

struct TensorShape {
  std::optional<std::uint64_t> rank;
  std::vector<Dimension> dimensions;
  std::optional<std::string> source_expr;
  bool operator==(const TensorShape&) const = default;
};

// JSON: "cpu" | {"cuda":{"ordinal":n|null}} | "metal" | {"same_as":"x"} | "unknown".
struct DeviceFact {
  DeviceKind kind = DeviceKind::unknown;
  std::optional<std::uint64_t> ordinal;  // cuda only
  std::string same_as;                   // same_as only
  bool operator==(const DeviceFact&) const = default;
};

// JSON: "contiguous" | "non_contiguous" | "strided" | {"same_as":"x"} | "unknown".
struct LayoutFact {
  LayoutKind kind = LayoutKind::unknown;
  std::string same_as;
  bool operator==(const LayoutFact&) const = default;
};

struct Tensor {
  std::string id, name;
  TensorRole role = TensorRole::unknown;
  std::string owner_function;
  std::optional<std::string> parameter;
  TensorShape shape;
  std::string dtype = "Unknown";
  DeviceFact device;
  LayoutFact layout;
  std::optional<bool> requires_grad;
  std::vector<Evidence> evidence;
  std::optional<ExecutionPhase> execution_phase;
  bool operator==(const Tensor&) const = default;
};

// Duration statistics in nanoseconds; shared with the runtime merge.
struct TimingStats {
  std::uint64_t samples = 0, total_ns = 0, mean_ns = 0, min_ns = 0, max_ns = 0, p50_ns = 0,
                p95_ns = 0;
  bool operator==(const TimingStats&) const = default;
};

struct OperationTiming {
  TimingStats stats;                            // written flat: {"samples":..,...,"by_phase":{..}}
  std::map<std::string, TimingStats> by_phase;  // phase name -> stats
  // Total exclusive time: durations minus those of child operations (runtime/4 `parent`); null
  // when the trace has no nesting (runtime/1-3, where it equals total_ns).
  std::optional<std::uint64_t> self_ns;
  bool operator==(const OperationTiming&) const = default;
};

struct Operation {
  std::string id, function, name;
  std::optional<std::string> qualified_name;
  std::vector<std::string> inputs;  // tensor ids, argument order
  std::string output;               // tensor id
  std::string source;
  std::string dtype_rule, gradient_rule, device_rule, shape_rule, domain_rule;
  std::vector<Evidence> evidence;
  std::optional<ExecutionPhase> execution_phase;
  // Multiply-adds (torchinfo's "mult-adds") of a matmul/Linear forward: a number ("4194304") or a
  // product symbolic only in batch/sequence names ("b*t*4194304"); absent when not derivable.
  std::optional<std::string> mult_adds;
  std::optional<OperationTiming> timing;
  bool operator==(const Operation&) const = default;
};

// One arm of an undecided `if`/`match` that an instance call or an operation ran in (the run
// could not tell which arm executes, so it ran each): the arms of one branch point are
// alternatives, of which one runs per call. `arms` has one entry for an arm; the rest of a
// function after arms that `return` stands in every arm that did not return (several entries).
struct BranchArm {
  std::string site;                 // "src/models/qwen3.rs:232": the `if`/`match`
  std::uint64_t offset = 0;         // its byte offset in that file (two on one line differ)
  std::vector<std::uint64_t> arms;  // the arms (0-based, `if`: 0 then, 1 else), ascending
  std::uint64_t count = 0;          // how many arms the branch point has
  // Arms that never complete in this run (they panic, `bail!` or `return Err(..)`): no forward
  // pass takes them, so they are no alternative. Written when not empty.
  std::vector<std::uint64_t> dead;
  bool operator==(const BranchArm&) const = default;
};

// One call of a module's method on a known module instance, as one entrypoint's run reached it
// (issue #18): the dataflow unrolled along the module tree. Operations keep their static ids;
// `operations` lists those the call ran in its own frame (an operation run inside a nested instance
// call is listed there, not here), so a viewer draws each instance as a box of its own operations
// and a timing keyed by a static id lands on every instance listing it. A family run in a loop
// (`for l in self.layers.iter()`) is one record standing for `count` instances per call of its
// parent (`repeat` says how the source iterates them).
struct InstanceCall {
  std::string id;          // instance-call:<entrypoint>:<path>:<method>:<occurrence in the run>
  std::string entrypoint;  // function id of the run that made it
  std::optional<std::string> parent;     // the enclosing instance call; null for the run's root
  std::string path;                      // module prefix; a family's index is `{i}`
  std::vector<std::string> modules;      // module ids it stands for (each member of a family)
  std::string method;                    // "forward"
  std::optional<std::string> function;   // the inlined method; null for a candle-nn layer's
  std::optional<std::string> call_site;  // the operation calling it; null for the run's root
  std::optional<std::string> repeat;     // a family's iteration ("i in 0..n")
  std::optional<std::uint64_t> count;    // instances per parent call; null when not known
  // The call's place in its run, in the order calls start (0: the run's root): the forward's
  // execution order, which ids sorted do not keep. Null in an IR written before it existed.
  std::optional<std::uint64_t> sequence;
  TensorShape output_shape;  // rank null when not known
  std::string output_dtype = "Unknown";
  std::optional<std::string> mult_adds;  // this call alone (a candle-nn layer), as Operation's
  std::vector<std::string> operations;   // operation ids, sorted
  // An operation's multiply-adds in this call where they differ from the operation's own figure
  // (that of its first analysed context): the attention's matmul reached from the model's forward
  // reads `b*seq_len*seq_len*512` in the root's names, not `b*t*t*512`; "" when this call does not
  // know them. Operation id -> figure; written only when not empty.
  std::map<std::string, std::string> operation_mult_adds;
  // An operation's output shape in this call where it differs from its output tensor's own (the
  // shape every analysed context agreed on): the root's `[b_sz, seq_len, 4096]` where a second
  // entrypoint leaves the embedding size unknown. Operation id -> shape; written when not empty.
  std::map<std::string, TensorShape> operation_shapes;
  // The undecided branches the call was made in, outermost first (empty: it runs on every path
  // of its run), and per operation of `operations` run in a branch its parent call was not in,
  // that operation's (written when not empty). Totals add one arm of each branch point, not all.
  std::vector<BranchArm> branch;
  std::map<std::string, std::vector<BranchArm>> operation_branches;
  bool operator==(const InstanceCall&) const = default;
};

struct Finding {
  std::string id, rule;
  Severity severity = Severity::information;
  Confidence confidence = Confidence::unknown;
  std::string message;
  std::optional<std::string> source;
  std::vector<std::string> related;  // ids
  std::vector<Evidence> evidence;
  bool operator==(const Finding&) const = default;
};

struct EdgeTiming {
  std::string from, to;  // operation ids
  TimingStats timing;
  bool operator==(const EdgeTiming&) const = default;
};

// Timing of one module scope path (runtime/4 `module` records), resolved to the IR module it
// times: an instance (exact prefix) or a family member (a `{i}` prefix; `instance` is its index).
// A family row (`path` with `{i}`, no instance) folds every member's scopes.
struct ModuleTiming {
  std::string path;    // VarBuilder path as traced ("model.layers.3.mlp")
  std::string module;  // IR module id; the family module for a family member
  std::optional<std::uint64_t> instance;
  std::uint64_t calls = 0;
  TimingStats total;  // inclusive
  TimingStats self;   // exclusive of child module scopes
  bool operator==(const ModuleTiming&) const = default;
};

// Tensor statistics (runtime/4 `stats` records, docs/runtime-4.md): the values of one recorded
// tensor. The five numbers are over its finite elements and null when it had none.
struct TensorStatsValues {
  std::uint64_t step = 0, at_ns = 0;
  std::uint64_t elements = 0, nan = 0, pos_inf = 0, neg_inf = 0, zeros = 0;
  std::optional<double> min, max, mean, rms, abs_max;
  bool operator==(const TensorStatsValues&) const = default;
};

// The first recorded sample holding a NaN or ±Inf (order: step, then at_ns, then thread).
struct FirstNonFinite {
  std::uint64_t step = 0, at_ns = 0, thread = 0;
  std::string reason;  // "sampled" or "non_finite" (the record's `reason`)
  std::uint64_t nan = 0, pos_inf = 0, neg_inf = 0;
  bool operator==(const FirstNonFinite&) const = default;
};

// Output statistics of one module path (`of: "output"`), resolved as module_timings are: an
// instance, a family member, or (`module` empty) a path naming no module. A family row (`path`
// with `{i}`, no instance) folds its members' samples.
struct ModuleStats {
  std::string path;
  std::string module;  // IR module id; empty when the path resolves to none
  std::optional<std::uint64_t> instance;
  std::uint64_t index = 0;  // which of the module's outputs
  std::uint64_t samples = 0, steps = 0;
  TensorStatsValues last;  // the latest sample (step, at_ns, thread)
  std::optional<double> max_abs_max, max_rms;
  std::uint64_t nan = 0, pos_inf = 0, neg_inf = 0;  // totals over the samples
  double max_zeros_fraction = 0;                    // worst zeros / elements
  std::optional<FirstNonFinite> first_non_finite;
  bool operator==(const ModuleStats&) const = default;
};

// Gradient statistics of one parameter key (`of: "grad"`). norm = rms * sqrt(finite elements).
struct GradStats {
  std::string key;                      // VarBuilder key as recorded
  std::vector<std::string> parameters;  // IR parameter ids it resolves to (empty: none)
  std::uint64_t samples = 0, steps = 0;
  std::optional<double> norm_last, norm_min, norm_max, max_abs_max;
  std::uint64_t nan = 0, pos_inf = 0, neg_inf = 0;
  bool all_zero = false;  // every sample's abs_max was 0
  std::optional<FirstNonFinite> first_non_finite;
  bool operator==(const GradStats&) const = default;
};

struct RuntimeSummary {
  std::string trace_schema;
  std::optional<std::string> entrypoint, profile;
  std::uint64_t tensor_observations = 0, operation_observations = 0, gradient_observations = 0,
                missing_gradients = 0, zero_gradients = 0, non_finite_gradients = 0,
                tensor_conflicts = 0, gradient_conflicts = 0, identity_mismatches = 0;
  std::optional<std::uint64_t> first_non_finite_step;
  std::uint64_t saturating_activations = 0, value_observations = 0;
  std::optional<ExecutionPhase> execution_phase;
  std::optional<std::uint64_t> avg_operation_duration_ns;
  std::vector<EdgeTiming> edge_timings;
  // Module scopes (sorted by path). Paths that name no IR module of the selected component under
  // the caller prefix are counted (distinct paths), the first 100 (sorted) listed.
  std::vector<ModuleTiming> module_timings;
  std::uint64_t unmatched_module_paths = 0;
  std::vector<std::string> unmatched_module_path_examples;
  // False only when every merged trace's meta says `device_sync` (durations include device work).
  bool host_side_timings = true;
  // Wall time: per thread (of every merged trace), the union of its outermost timed intervals;
  // and the distinct steps seen. Empty / 0 without runtime/4 timestamps.
  std::vector<std::uint64_t> thread_busy_ns;
  // The run's real wall time: per merged trace the union of every thread's timed intervals (so
  // two threads busy at once count once), summed over the traces; 0 without timestamps. Shares
  // of wall time divide by it (the busy times' sum counts parallel work twice).
  std::uint64_t wall_ns = 0;
  std::uint64_t steps = 0;
  // Tensor statistics (sorted by path and index / by key). Paths naming no module instance and
  // keys naming no parameter are counted (distinct), the first 100 listed, and still get rows.
  std::uint64_t stats_records = 0;
  std::vector<ModuleStats> module_stats;
  std::vector<GradStats> grad_stats;
  std::uint64_t unmatched_stats_paths = 0, unmatched_grad_keys = 0;
  std::vector<std::string> unmatched_stats_path_examples, unmatched_grad_key_examples;
  bool operator==(const RuntimeSummary&) const = default;
};

// A forward's store of tensors into the model's state (issue #38): `self.kv_cache = Some((k,
// v))`, `cache.kvs[block_idx] = Some(..)`, `state.hs[i] = h` — what one call keeps for the next
// (KV caches, recurrent states, cached masks), recorded in a root's run with each tensor's shape
// in the root's dimensions.
struct StateStore {
  std::string id;          // state:<entrypoint>:<function>:<place>:<occurrence>
  std::string entrypoint;  // the root entrypoint whose run made the store
  std::string function;    // the function holding the assignment
  std::string place;       // the assigned place as written (`self.kv_cache`)
  std::string source;      // file:line of the assignment
  // The module instance whose call made it (`model.layers.{i}.self_attn`) and how many instances
  // of it one root call runs (the product of its families' counts; null when one is not known).
  std::optional<std::string> instance;
  std::optional<std::uint64_t> instances;
  // A candle-nn cache the forward appends to (`self.kv_cache.append(&k, &v)`): its type
  // (`ConcatKvCache`, `KvCache`, `RotatingKvCache`); the tensors are what one call appends.
  std::string library;
  // That cache's constructor arguments where its owner's constructor builds it
  // (`KvCache::new(2, cfg.max_position_embeddings)`): the dimension it appends along and the
  // positions it allocates (`max_seq_len`: `KvCache` grows by as many, `RotatingKvCache` keeps
  // that window). Absent when not evaluated.
  std::optional<std::uint64_t> cache_dim;
  std::optional<std::uint64_t> cache_max_seq_len;
  // A store into an element of a fixed-size array by a computed index (`state.prev_xs[li][pos %
  // D_CONV] = x` of `prev_xs: Vec<[Tensor; D_CONV]>`): over calls it fills each of the array's
  // slots, so the state holds this many of what one call stores (absent: 1).
  std::optional<std::uint64_t> slots;
  struct Stored {
    std::string tensor;  // IR tensor id
    TensorShape shape;   // in this call
    std::string dtype = "Unknown";
    std::string dtype_param;  // a run-time dtype expression (`self.dtype`) when dtype is Unknown
    // Made by `cat` with what the state held (through `contiguous`, `clone`, `to_dtype`,
    // `narrow`): the dimension it appends along, `shape` then being the appended operand's.
    std::optional<std::uint64_t> appends_along;
    // A `narrow` on the way from that `cat` (file:line): the code may trim the positions kept.
    std::optional<std::string> narrowed_at;
    bool operator==(const Stored&) const = default;
  };
  std::vector<Stored> tensors;
  bool operator==(const StateStore&) const = default;
};

// A tensor a constructor computes and keeps in a struct field (issue #38, `memory`'s buffers):
// rotary cos/sin tables, masks, position ids, built with `Tensor::arange`, `from_vec`, `zeros`,
// .. and the operations on them, walked from the root's constructor with the config bound (and
// from the constructor of a crate type the root's forward takes as an argument, as llama's
// `Cache`). A VarBuilder weight is no buffer. One record per creation: a tensor shared by an
// `Arc` or a clone across the instances holding it is one record, counted as often as the code
// creating it runs.
struct Buffer {
  std::string id;          // buffer:<owner type>:<field>:<source>
  std::string owner_type;  // the struct whose field keeps it (`models::mistral::RotaryEmbedding`)
  std::string field;       // `sin`
  std::string source;      // file:line of the field's initializer
  std::string created_at;  // file:line of the operation that made the tensor
  // The VarBuilder prefix of the constructor that made it (`model.layers.{i}.self_attn`; "" for
  // the root's) and how many times one construction of the root runs it (the product of the
  // loops around it; null when one is not known).
  std::string instance;
  std::optional<std::uint64_t> instances;
  // "constructor", or "forward argument `cache`" (a crate type the root's forward takes, which
  // its caller builds once).
  std::string reached;
  TensorShape shape;  // with the config bound: a dimension not evaluated is its text
  std::string dtype = "Unknown";
  // When dtype is Unknown: the run-time dtype it is made at (`vb.dtype()`: the model's; or a
  // constructor parameter, `dtype`, its caller's).
  std::string dtype_param;
  // Made in one arm of an `if`/`match` the walk could not decide (`src/x.rs:12#1/3`: the branch,
  // the arm and how many arms it has; an `if` without `else` has two): only one arm runs, so the
  // arms of one branch are alternatives; "" otherwise.
  std::string alternative;
  bool operator==(const Buffer&) const = default;
};

struct ModelIr {
  std::string analysis_id;
  std::optional<CargoSummary> cargo;
  Coverage coverage;
  std::vector<Component> components;
  std::vector<ArchitectureEdge> architecture_edges;
  std::vector<Module> modules;
  std::vector<Parameter> parameters;
  std::vector<Function> functions;
  std::vector<Tensor> tensors;
  std::vector<Operation> operations;
  std::vector<InstanceCall> instance_calls;
  std::vector<StateStore> state_stores;  // written only when not empty
  std::vector<Buffer> buffers;           // written only when not empty
  std::vector<Finding> findings;
  std::optional<RuntimeSummary> runtime;
  bool operator==(const ModelIr&) const = default;
};

// A finding with its stable id (rule, source, message); `source` "" means no location.
Finding make_finding(std::string rule, Severity severity, Confidence confidence,
                     std::string message, std::string source,
                     std::vector<std::string> related = {});

// Sorts every section by id (byte order), drops repeated ids (keeping the first; findings merge
// `related` and `evidence`), sorts and dedups nested id lists, and recomputes `coverage`.
void normalize(ModelIr& ir);
Coverage compute_coverage(const ModelIr& ir);

// Deterministic 2-space-indented JSON; same IR -> same bytes.
std::string write_model_ir(const ModelIr& ir);
// Throw cg::InputError naming `origin` and the JSON pointer of the first bad field.
ModelIr parse_model_ir(std::string_view json, std::string_view origin);
ModelIr read_model_ir_file(const std::string& path);

}  // namespace cg::ir
