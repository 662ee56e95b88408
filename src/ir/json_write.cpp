// Writer for candle-graph/model/1. Field order is fixed here and mirrored by json_read.cpp.
#include "ir/model.hpp"
#include "ir/record_json.hpp"
#include "util/json_writer.hpp"

namespace cg::ir {
namespace {

using W = JsonWriter;

void opt(W& w, std::string_view k, const std::optional<std::string>& v) {
  w.key(k);
  v ? w.value(*v) : w.null();
}
void opt(W& w, std::string_view k, const std::optional<std::uint64_t>& v) {
  w.key(k);
  v ? w.value(*v) : w.null();
}
void opt(W& w, std::string_view k, const std::optional<bool>& v) {
  w.key(k);
  v ? w.value(*v) : w.null();
}
template <typename E>
void enum_field(W& w, std::string_view k, E e) {
  w.field(k, to_string(e));
}
template <typename E>
void opt_enum(W& w, std::string_view k, const std::optional<E>& v) {
  w.key(k);
  v ? w.value(to_string(*v)) : w.null();
}
void strings(W& w, std::string_view k, const std::vector<std::string>& v) {
  w.key(k).begin_array();
  for (const auto& s : v)
    w.value(s);
  w.end_array();
}
void uints(W& w, const std::vector<std::uint64_t>& v) {
  w.begin_array();
  for (auto n : v)
    w.value(n);
  w.end_array();
}

void evidence(W& w, const std::vector<Evidence>& v) {
  w.key("evidence").begin_array();
  for (const Evidence& e : v) {
    w.begin_object();
    enum_field(w, "kind", e.kind);
    enum_field(w, "confidence", e.confidence);
    opt(w, "source", e.source);
    w.field("detail", e.detail);
    w.end_object();
  }
  w.end_array();
}

void stats_fields(W& w, const TimingStats& t) {
  w.field("samples", t.samples)
      .field("total_ns", t.total_ns)
      .field("mean_ns", t.mean_ns)
      .field("min_ns", t.min_ns)
      .field("max_ns", t.max_ns)
      .field("p50_ns", t.p50_ns)
      .field("p95_ns", t.p95_ns);
}

void stats(W& w, const TimingStats& t) {
  w.begin_object();
  stats_fields(w, t);
  w.end_object();
}

void device(W& w, const DeviceFact& d) {
  w.key("device");
  switch (d.kind) {
    case DeviceKind::cuda:
      w.begin_object().key("cuda").begin_object();
      opt(w, "ordinal", d.ordinal);
      w.end_object().end_object();
      break;
    case DeviceKind::same_as:
      w.begin_object().field("same_as", d.same_as).end_object();
      break;
    default:
      w.value(to_string(d.kind));
  }
}

void layout(W& w, const LayoutFact& l) {
  w.key("layout");
  if (l.kind == LayoutKind::same_as) {
    w.begin_object().field("same_as", l.same_as).end_object();
  } else {
    w.value(to_string(l.kind));
  }
}

void cargo(W& w, const std::optional<CargoSummary>& c) {
  w.key("cargo");
  write_record(w, c);
}

void coverage(W& w, const Coverage& c) {
  w.key("coverage").begin_object();
  w.field("components", c.components)
      .field("architecture_edges", c.architecture_edges)
      .field("modules", c.modules)
      .field("parameters", c.parameters)
      .field("functions", c.functions)
      .field("entrypoints", c.entrypoints)
      .field("component_entrypoints", c.component_entrypoints)
      .field("composition_edges", c.composition_edges)
      .field("tensors", c.tensors)
      .field("operations", c.operations)
      .field("linked_parameter_uses", c.linked_parameter_uses)
      .field("tensors_with_shape", c.tensors_with_shape)
      .field("tensors_with_dtype", c.tensors_with_dtype)
      .field("tensors_with_device", c.tensors_with_device)
      .field("runtime_observations", c.runtime_observations)
      .field("diagnostics", c.diagnostics);
  w.end_object();
}

void runtime(W& w, const std::optional<RuntimeSummary>& r) {
  w.key("runtime");
  write_record(w, r);
}

template <typename T>
void section(W& w, std::string_view k, const std::vector<T>& items) {
  w.key(k).begin_array();
  for (const T& item : items)
    write_record(w, item);
  w.end_array();
}

}  // namespace

void write_record(W& w, const std::optional<CargoSummary>& c) {
  if (!c) {
    w.null();
    return;
  }
  w.begin_object();
  w.field("build_id", c->build_id)
      .field("workspace_root", c->workspace_root)
      .field("manifest_path", c->manifest_path)
      .field("package_name", c->package_name)
      .field("package_version", c->package_version);
  opt(w, "selected_target", c->selected_target);
  strings(w, "active_features", c->active_features);
  strings(w, "active_cfg", c->active_cfg);
  w.key("candle_packages").begin_object();
  for (const auto& [name, version] : c->candle_packages)
    w.field(name, version);
  w.end_object();
  w.end_object();
}

void write_record(W& w, const Component& c) {
  w.begin_object();
  w.field("id", c.id)
      .field("name", c.name)
      .field("qualified_name", c.qualified_name)
      .field("source", c.source)
      .field("constructor", c.constructor);
  w.key("builders").begin_array();
  for (const Builder& b : c.builders) {
    w.begin_object();
    w.field("name", b.name);
    enum_field(w, "role", b.role);
    evidence(w, b.evidence);
    w.end_object();
  }
  w.end_array();
  strings(w, "modules", c.modules);
  strings(w, "parameters", c.parameters);
  strings(w, "entrypoints", c.entrypoints);
  evidence(w, c.evidence);
  w.end_object();
}

void write_record(W& w, const ArchitectureEdge& e) {
  w.begin_object();
  w.field("id", e.id)
      .field("from", e.from)
      .field("to", e.to)
      .field("via_function", e.via_function)
      .field("source", e.source);
  evidence(w, e.evidence);
  w.end_object();
}

void write_record(W& w, const Module& m) {
  w.begin_object();
  w.field("id", m.id).field("component", m.component);
  opt(w, "parent", m.parent);
  w.field("type_name", m.type_name);
  opt(w, "qualified_type", m.qualified_type);
  opt(w, "field", m.field);
  w.field("builder_root", m.builder_root).field("prefix", m.prefix);
  opt(w, "repeat", m.repeat);
  w.field("source", m.source);
  enum_field(w, "confidence", m.confidence);
  if (!m.attributes.empty()) {  // written only when present: IRs without conv layers unchanged
    w.key("attributes").begin_object();
    for (const auto& [k, v] : m.attributes)
      w.field(k, v);
    w.end_object();
  }
  if (!m.arguments.empty()) {  // written only when present
    w.key("arguments").begin_object();
    for (const auto& [k, v] : m.arguments)
      w.field(k, v);
    w.end_object();
  }
  w.end_object();
}

void write_record(W& w, const Parameter& p) {
  w.begin_object();
  w.field("id", p.id).field("component", p.component);
  opt(w, "module", p.module);
  w.field("key", p.key).field("builder_root", p.builder_root);
  enum_field(w, "role", p.role);
  w.field("kind", p.kind);
  if (p.symbolic_shape) {
    strings(w, "symbolic_shape", *p.symbolic_shape);
  } else {
    w.key("symbolic_shape").null();
  }
  w.key("shape");
  p.shape ? uints(w, *p.shape) : void(w.null());
  enum_field(w, "confidence", p.confidence);
  opt(w, "reason", p.reason);
  w.key("checkpoint_shape");
  p.checkpoint_shape ? uints(w, *p.checkpoint_shape) : void(w.null());
  opt(w, "checkpoint_dtype", p.checkpoint_dtype);
  w.field("source", p.source);
  strings(w, "uses", p.uses);
  strings(w, "optimizer_memberships", p.optimizer_memberships);
  evidence(w, p.evidence);
  w.end_object();
}

void write_record(W& w, const Function& f) {
  w.begin_object();
  w.field("id", f.id).field("name", f.name).field("qualified_name", f.qualified_name);
  opt(w, "owner_type", f.owner_type);
  enum_field(w, "visibility", f.visibility);
  w.key("parameters").begin_array();
  for (const FunctionParam& p : f.parameters) {
    w.begin_object().field("name", p.name).field("type_name", p.type_name).end_object();
  }
  w.end_array();
  opt(w, "return_type", f.return_type);
  strings(w, "cfg_predicates", f.cfg_predicates);
  opt(w, "cfg_active", f.cfg_active);
  w.field("source", f.source);
  strings(w, "calls", f.calls);
  strings(w, "tensor_inputs", f.tensor_inputs);
  strings(w, "tensor_outputs", f.tensor_outputs);
  w.field("is_entrypoint", f.is_entrypoint).field("is_loss", f.is_loss);
  w.key("execution_phases").begin_array();
  for (ExecutionPhase ph : f.execution_phases)
    w.value(to_string(ph));
  w.end_array();
  w.end_object();
}

void shape(W& w, std::string_view k, const TensorShape& s) {
  w.key(k).begin_object();
  opt(w, "rank", s.rank);
  w.key("dimensions").begin_array();
  for (const Dimension& d : s.dimensions) {
    w.begin_object();
    opt(w, "name", d.name);
    w.field("expr", d.expr);
    w.end_object();
  }
  w.end_array();
  opt(w, "source_expr", s.source_expr);
  w.end_object();
}

void write_record(W& w, const StateStore& s) {
  w.begin_object();
  w.field("id", s.id);
  w.field("entrypoint", s.entrypoint);
  w.field("function", s.function);
  w.field("place", s.place);
  w.field("source", s.source);
  opt(w, "instance", s.instance);
  opt(w, "instances", s.instances);
  if (!s.library.empty()) w.field("library", s.library);
  opt(w, "cache_dim", s.cache_dim);
  opt(w, "cache_max_seq_len", s.cache_max_seq_len);
  opt(w, "slots", s.slots);
  w.key("tensors").begin_array();
  for (const auto& t : s.tensors) {
    w.begin_object();
    w.field("tensor", t.tensor);
    shape(w, "shape", t.shape);
    w.field("dtype", t.dtype);
    if (!t.dtype_param.empty()) w.field("dtype_param", t.dtype_param);
    opt(w, "appends_along", t.appends_along);
    opt(w, "narrowed_at", t.narrowed_at);
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

void write_record(W& w, const Buffer& b) {
  w.begin_object();
  w.field("id", b.id);
  w.field("owner_type", b.owner_type);
  w.field("field", b.field);
  w.field("source", b.source);
  w.field("created_at", b.created_at);
  w.field("instance", b.instance);
  opt(w, "instances", b.instances);
  w.field("reached", b.reached);
  shape(w, "shape", b.shape);
  w.field("dtype", b.dtype);
  if (!b.dtype_param.empty()) w.field("dtype_param", b.dtype_param);
  if (!b.alternative.empty()) w.field("alternative", b.alternative);
  w.end_object();
}

void branch_arms(W& w, std::string_view k, const std::vector<BranchArm>& v) {
  w.key(k).begin_array();
  for (const BranchArm& b : v) {
    w.begin_object();
    w.field("site", b.site).field("offset", b.offset);
    w.key("arms");
    uints(w, b.arms);
    w.field("count", b.count);
    if (!b.dead.empty()) {
      w.key("dead");
      uints(w, b.dead);
    }
    w.end_object();
  }
  w.end_array();
}

void write_record(W& w, const InstanceCall& c) {
  w.begin_object();
  w.field("id", c.id).field("entrypoint", c.entrypoint);
  opt(w, "parent", c.parent);
  w.field("path", c.path);
  strings(w, "modules", c.modules);
  w.field("method", c.method);
  opt(w, "function", c.function);
  opt(w, "call_site", c.call_site);
  opt(w, "repeat", c.repeat);
  opt(w, "count", c.count);
  opt(w, "sequence", c.sequence);
  shape(w, "output_shape", c.output_shape);
  w.field("output_dtype", c.output_dtype);
  opt(w, "mult_adds", c.mult_adds);
  strings(w, "operations", c.operations);
  if (!c.operation_mult_adds.empty()) {
    w.key("operation_mult_adds").begin_object();
    for (const auto& [k, v] : c.operation_mult_adds)
      w.field(k, v);
    w.end_object();
  }
  if (!c.operation_shapes.empty()) {
    w.key("operation_shapes").begin_object();
    for (const auto& [k, v] : c.operation_shapes)
      shape(w, k, v);
    w.end_object();
  }
  if (!c.branch.empty()) branch_arms(w, "branch", c.branch);
  if (!c.operation_branches.empty()) {
    w.key("operation_branches").begin_object();
    for (const auto& [k, v] : c.operation_branches)
      branch_arms(w, k, v);
    w.end_object();
  }
  w.end_object();
}

void write_record(W& w, const Tensor& t) {
  w.begin_object();
  w.field("id", t.id).field("name", t.name);
  enum_field(w, "role", t.role);
  w.field("owner_function", t.owner_function);
  opt(w, "parameter", t.parameter);
  shape(w, "shape", t.shape);
  w.field("dtype", t.dtype);
  device(w, t.device);
  layout(w, t.layout);
  opt(w, "requires_grad", t.requires_grad);
  evidence(w, t.evidence);
  opt_enum(w, "execution_phase", t.execution_phase);
  w.end_object();
}

void write_record(W& w, const Operation& o) {
  w.begin_object();
  w.field("id", o.id).field("function", o.function).field("name", o.name);
  opt(w, "qualified_name", o.qualified_name);
  strings(w, "inputs", o.inputs);
  w.field("output", o.output)
      .field("source", o.source)
      .field("dtype_rule", o.dtype_rule)
      .field("gradient_rule", o.gradient_rule)
      .field("device_rule", o.device_rule)
      .field("shape_rule", o.shape_rule)
      .field("domain_rule", o.domain_rule);
  evidence(w, o.evidence);
  opt_enum(w, "execution_phase", o.execution_phase);
  opt(w, "mult_adds", o.mult_adds);
  w.key("timing");
  if (o.timing) {
    w.begin_object();
    stats_fields(w, o.timing->stats);
    opt(w, "self_ns", o.timing->self_ns);
    w.key("by_phase").begin_object();
    for (const auto& [phase, s] : o.timing->by_phase) {
      w.key(phase);
      stats(w, s);
    }
    w.end_object();
    w.end_object();
  } else {
    w.null();
  }
  w.end_object();
}

void write_record(W& w, const Finding& f) {
  w.begin_object();
  w.field("id", f.id).field("rule", f.rule);
  enum_field(w, "severity", f.severity);
  enum_field(w, "confidence", f.confidence);
  w.field("message", f.message);
  opt(w, "source", f.source);
  strings(w, "related", f.related);
  evidence(w, f.evidence);
  w.end_object();
}

void opt_number(W& w, std::string_view k, const std::optional<double>& v) {
  w.key(k);
  if (v) {
    w.value(*v);
  } else {
    w.null();
  }
}

void tensor_stats_values(W& w, const TensorStatsValues& v) {
  w.begin_object()
      .field("step", v.step)
      .field("at_ns", v.at_ns)
      .field("elements", v.elements)
      .field("nan", v.nan)
      .field("pos_inf", v.pos_inf)
      .field("neg_inf", v.neg_inf)
      .field("zeros", v.zeros);
  opt_number(w, "min", v.min);
  opt_number(w, "max", v.max);
  opt_number(w, "mean", v.mean);
  opt_number(w, "rms", v.rms);
  opt_number(w, "abs_max", v.abs_max);
  w.end_object();
}

void first_non_finite(W& w, const std::optional<FirstNonFinite>& f) {
  w.key("first_non_finite");
  if (!f) {
    w.null();
    return;
  }
  w.begin_object()
      .field("step", f->step)
      .field("at_ns", f->at_ns)
      .field("thread", f->thread)
      .field("reason", f->reason)
      .field("nan", f->nan)
      .field("pos_inf", f->pos_inf)
      .field("neg_inf", f->neg_inf)
      .end_object();
}

void write_tensor_stats(W& w, const RuntimeSummary& r) {
  w.field("stats_records", r.stats_records);
  w.key("module_stats").begin_array();
  for (const ModuleStats& m : r.module_stats) {
    w.begin_object().field("path", m.path).field("module", m.module);
    opt(w, "instance", m.instance);
    w.field("index", m.index).field("samples", m.samples).field("steps", m.steps);
    w.key("last");
    tensor_stats_values(w, m.last);
    opt_number(w, "max_abs_max", m.max_abs_max);
    opt_number(w, "max_rms", m.max_rms);
    w.field("nan", m.nan)
        .field("pos_inf", m.pos_inf)
        .field("neg_inf", m.neg_inf)
        .field("max_zeros_fraction", m.max_zeros_fraction);
    first_non_finite(w, m.first_non_finite);
    w.end_object();
  }
  w.end_array();
  w.key("grad_stats").begin_array();
  for (const GradStats& g : r.grad_stats) {
    w.begin_object().field("key", g.key);
    strings(w, "parameters", g.parameters);
    w.field("samples", g.samples).field("steps", g.steps);
    opt_number(w, "norm_last", g.norm_last);
    opt_number(w, "norm_min", g.norm_min);
    opt_number(w, "norm_max", g.norm_max);
    opt_number(w, "max_abs_max", g.max_abs_max);
    w.field("nan", g.nan)
        .field("pos_inf", g.pos_inf)
        .field("neg_inf", g.neg_inf)
        .field("all_zero", g.all_zero);
    first_non_finite(w, g.first_non_finite);
    w.end_object();
  }
  w.end_array();
  w.field("unmatched_stats_paths", r.unmatched_stats_paths);
  strings(w, "unmatched_stats_path_examples", r.unmatched_stats_path_examples);
  w.field("unmatched_grad_keys", r.unmatched_grad_keys);
  strings(w, "unmatched_grad_key_examples", r.unmatched_grad_key_examples);
}

void write_record(W& w, const std::optional<RuntimeSummary>& r) {
  if (!r) {
    w.null();
    return;
  }
  w.begin_object();
  w.field("trace_schema", r->trace_schema);
  opt(w, "entrypoint", r->entrypoint);
  opt(w, "profile", r->profile);
  w.field("tensor_observations", r->tensor_observations)
      .field("operation_observations", r->operation_observations)
      .field("gradient_observations", r->gradient_observations)
      .field("missing_gradients", r->missing_gradients)
      .field("zero_gradients", r->zero_gradients)
      .field("non_finite_gradients", r->non_finite_gradients)
      .field("tensor_conflicts", r->tensor_conflicts)
      .field("gradient_conflicts", r->gradient_conflicts)
      .field("identity_mismatches", r->identity_mismatches);
  opt(w, "first_non_finite_step", r->first_non_finite_step);
  w.field("saturating_activations", r->saturating_activations)
      .field("value_observations", r->value_observations);
  opt_enum(w, "execution_phase", r->execution_phase);
  opt(w, "avg_operation_duration_ns", r->avg_operation_duration_ns);
  w.key("edge_timings").begin_array();
  for (const EdgeTiming& e : r->edge_timings) {
    w.begin_object().field("from", e.from).field("to", e.to);
    w.key("timing");
    stats(w, e.timing);
    w.end_object();
  }
  w.end_array();
  w.key("module_timings").begin_array();
  for (const ModuleTiming& m : r->module_timings) {
    w.begin_object().field("path", m.path).field("module", m.module);
    opt(w, "instance", m.instance);
    w.field("calls", m.calls);
    w.key("total");
    stats(w, m.total);
    w.key("self");
    stats(w, m.self);
    w.end_object();
  }
  w.end_array();
  w.field("unmatched_module_paths", r->unmatched_module_paths);
  strings(w, "unmatched_module_path_examples", r->unmatched_module_path_examples);
  w.field("host_side_timings", r->host_side_timings);
  w.key("thread_busy_ns").begin_array();
  for (auto ns : r->thread_busy_ns)
    w.value(ns);
  w.end_array();
  w.field("wall_ns", r->wall_ns);
  w.field("steps", r->steps);
  write_tensor_stats(w, *r);
  w.end_object();
}

std::string write_model_ir(const ModelIr& ir) {
  W w(2);
  w.begin_object();
  w.field("schema", kModelSchema).field("analysis_id", ir.analysis_id);
  cargo(w, ir.cargo);
  coverage(w, ir.coverage);
  section(w, "components", ir.components);
  section(w, "architecture_edges", ir.architecture_edges);
  section(w, "modules", ir.modules);
  section(w, "parameters", ir.parameters);
  section(w, "functions", ir.functions);
  section(w, "tensors", ir.tensors);
  section(w, "operations", ir.operations);
  section(w, "instance_calls", ir.instance_calls);
  if (!ir.state_stores.empty()) section(w, "state_stores", ir.state_stores);
  if (!ir.buffers.empty()) section(w, "buffers", ir.buffers);
  section(w, "findings", ir.findings);
  runtime(w, ir.runtime);
  w.end_object();
  std::string out = w.take();
  out += '\n';
  return out;
}

}  // namespace cg::ir
