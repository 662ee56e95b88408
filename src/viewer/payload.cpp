#include "viewer/payload.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "util/json_writer.hpp"
#include "util/text.hpp"

namespace cg::viewer {

namespace {

using cg::JsonWriter;
namespace ir = cg::ir;

void opt_string(JsonWriter& w, std::string_view key, const std::optional<std::string>& v) {
  w.key(key);
  if (v) {
    w.value(*v);
  } else {
    w.null();
  }
}

// Empty strings in the IR mean "not known"; the viewer shows null as a dash, never as "".
void string_or_null(JsonWriter& w, std::string_view key, const std::string& v) {
  w.key(key);
  if (v.empty()) {
    w.null();
  } else {
    w.value(v);
  }
}

void u64_list(JsonWriter& w, std::string_view key,
              const std::optional<std::vector<std::uint64_t>>& v) {
  w.key(key);
  if (!v) {
    w.null();
    return;
  }
  w.begin_array();
  for (const auto d : *v)
    w.value(d);
  w.end_array();
}

void string_list(JsonWriter& w, std::string_view key, const std::vector<std::string>& v) {
  w.key(key).begin_array();
  for (const auto& s : v)
    w.value(s);
  w.end_array();
}

void opt_u64(JsonWriter& w, std::string_view key, const std::optional<std::uint64_t>& v) {
  w.key(key);
  if (v) {
    w.value(*v);
  } else {
    w.null();
  }
}

// `memory` (docs/viewer.md): the memory report's figures and per-layer state.
void write_memory(JsonWriter& w, const MemoryView& m) {
  w.key("memory").begin_object();
  w.field("dtype", m.dtype).field("batch", m.batch).field("context", m.context);
  w.field("context_source", m.context_source);
  w.key("figures").begin_array();
  for (const auto& f : m.figures) {
    w.begin_object().field("name", f.name);
    opt_u64(w, "bytes", f.bytes);
    w.field("bound", f.bound);
    string_or_null(w, "note", f.note);
    w.end_object();
  }
  w.end_array();
  w.key("states").begin_array();
  for (const auto& s : m.states) {
    w.begin_object().field("instance", s.instance).field("place", s.place);
    string_or_null(w, "source", s.source);
    opt_u64(w, "instances", s.instances);
    opt_u64(w, "per_instance_bytes", s.per_instance_bytes);
    opt_u64(w, "total_bytes", s.total_bytes);
    w.field("bound", s.bound);
    string_list(w, "shapes", s.shapes);
    w.field("kind", s.buffer ? "buffer" : s.grows ? "kv_cache" : "state");
    w.end_object();
  }
  w.end_array();
  string_list(w, "notes", m.notes);
  w.end_object();
}

void stats(JsonWriter& w, const ir::TimingStats& s) {
  w.field("samples", s.samples)
      .field("total_ns", s.total_ns)
      .field("mean_ns", s.mean_ns)
      .field("min_ns", s.min_ns)
      .field("max_ns", s.max_ns)
      .field("p50_ns", s.p50_ns)
      .field("p95_ns", s.p95_ns);
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Tensor shape as the viewer draws it: numbers for literal dims, expressions as text.
// A shape as the page reads it: dimensions (numbers where known), or the text or rank alone.
void shape_value(JsonWriter& w, const ir::TensorShape& shape) {
  if (shape.dimensions.empty()) {
    if (shape.source_expr) {
      w.value(*shape.source_expr);
    } else if (shape.rank) {
      w.value("rank " + std::to_string(*shape.rank));
    } else {
      w.null();
    }
    return;
  }
  w.begin_array();
  for (const auto& d : shape.dimensions) {
    if (all_digits(d.expr) && d.expr.size() < 19) {
      w.value(static_cast<std::uint64_t>(std::stoull(d.expr)));
    } else {
      w.value(d.name && d.expr.empty() ? *d.name : d.expr);
    }
  }
  w.end_array();
}

void tensor_shape(JsonWriter& w, const ir::TensorShape& shape) {
  w.key("shape");
  shape_value(w, shape);
}

// Operations are grouped in the dataflow view by a dotted path: the owning function's qualified
// name (crate::model::Attention::forward -> crate.model.Attention.forward). The static IR has one
// op per source call, not per module instance, so the Rust item path is the honest hierarchy.
std::string group_path(const ir::Function* f) {
  if (f == nullptr) return "(unknown function)";
  const std::string& q = f->qualified_name.empty() ? f->name : f->qualified_name;
  std::string out;
  out.reserve(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (q[i] == ':' && i + 1 < q.size() && q[i + 1] == ':') {
      out += '.';
      ++i;
    } else if (q[i] == '.') {
      out += '_';  // a dot inside a segment would split the group
    } else {
      out += q[i];
    }
  }
  return out;
}

void write_checkpoint(JsonWriter& w, const CheckpointView& c) {
  w.begin_object();
  string_or_null(w, "path", c.path);
  string_or_null(w, "verdict", c.verdict);
  w.key("entries").begin_array();
  for (const auto& e : c.entries) {
    w.begin_object().field("key", e.key).field("status", e.status);
    string_or_null(w, "parameter", e.parameter);
    u64_list(w, "expected", e.expected);
    u64_list(w, "actual", e.actual);
    string_or_null(w, "dtype", e.dtype);
    if (!e.reason.empty()) w.field("reason", e.reason);
    w.end_object();
  }
  w.end_array().end_object();
}

// A module's name in the tree, as PyTorch prints it: an indexed instance (`model.layers.3`) is
// "3" even though its field is `layers`, so the viewer folds the instances into one family; the
// root (empty prefix, no field) is named by its type.
std::string module_name(const ir::Module& m) {
  std::string last(last_key_segment(m.prefix));
  if (all_digits(last)) return last;
  if (m.field) return *m.field;
  return last.empty() ? m.type_name : last;
}

}  // namespace

PayloadParts project_payload_parts(const ir::ModelIr& ir, const CheckpointView* checkpoint,
                                   const ModuleFiguresById* figures, const MemoryView* memory) {
  std::unordered_map<std::string_view, const ir::Function*> functions;
  for (const auto& f : ir.functions)
    functions.emplace(f.id, &f);
  // "Severs" in an op's gradient rule marks its output tensor: drawn as a severed edge.
  std::unordered_map<std::string_view, bool> severed;
  std::unordered_set<std::string_view> produced;
  for (const auto& op : ir.operations) {
    if (op.gradient_rule.find("Severs") != std::string::npos) severed[op.output] = true;
    produced.insert(op.output);
  }

  const bool any_checkpoint =
      checkpoint != nullptr ||
      std::any_of(ir.parameters.begin(), ir.parameters.end(),
                  [](const auto& p) { return p.checkpoint_shape.has_value(); });
  JsonWriter w(0);   // main part: what the first (dataflow) view needs
  JsonWriter tw(0);  // tree part: modules, parameters, checkpoint (read after the first view)
  tw.begin_object();
  w.begin_object().field("schema", kViewerSchema);
  w.key("model").begin_object();
  w.field("name", ir.cargo && !ir.cargo->package_name.empty() ? ir.cargo->package_name
                                                              : std::string("model"));
  w.field("analysis_id", ir.analysis_id);
  if (ir.cargo) {
    // What the analysis was run under: shown as the model's properties when nothing is selected.
    const auto& c = *ir.cargo;
    w.field("version", c.package_version);
    opt_string(w, "target", c.selected_target);
    string_list(w, "features", c.active_features);
    string_list(w, "cfg", c.active_cfg);
    w.key("candle").begin_object();
    for (const auto& [name, version] : c.candle_packages)
      w.field(name, version);
    w.end_object();
  }
  // One component: the Dataflow view opens on its main forward (its first entrypoint that has
  // operations, `forward` preferred) instead of every function at once.
  if (ir.components.size() == 1) {
    std::optional<std::string> main;
    for (const auto& e : ir.components.front().entrypoints) {
      bool has_ops = std::any_of(ir.operations.begin(), ir.operations.end(),
                                 [&](const auto& o) { return o.function == e; });
      if (!has_ops) continue;
      bool is_forward = std::any_of(ir.functions.begin(), ir.functions.end(), [&](const auto& f) {
        return f.id == e && f.name == "forward";
      });
      if (!main || is_forward) main = e;
      if (is_forward) break;
    }
    opt_string(w, "main_function", main);
  }
  w.end_object();
  w.key("summary").begin_object();
  w.field("modules", ir.coverage.modules)
      .field("parameters", ir.coverage.parameters)
      .field("operations", ir.coverage.operations)
      .field("tensors", ir.coverage.tensors)
      .field("functions", ir.coverage.functions)
      .field("checkpoint", any_checkpoint);  // the tab exists before the tree part is read
  w.end_object();
  if (memory != nullptr) write_memory(w, *memory);

  w.key("components").begin_array();
  for (const auto& c : ir.components) {
    w.begin_object().field("id", c.id).field("name", c.name);
    string_or_null(w, "qualified_name", c.qualified_name);
    string_or_null(w, "source", c.source);
    w.end_object();
  }
  w.end_array();

  tw.key("modules").begin_array();
  for (const auto& m : ir.modules) {
    tw.begin_object().field("id", m.id);
    tw.field("name", module_name(m));
    tw.field("type", m.type_name).field("prefix", m.prefix);
    opt_string(tw, "parent", m.parent);
    tw.field("component", m.component);
    opt_string(tw, "repeat", m.repeat);
    opt_string(tw, "qualified_type", m.qualified_type);
    string_or_null(tw, "builder_root", m.builder_root);
    string_or_null(tw, "source", m.source);
    tw.field("confidence", ir::to_string(m.confidence));
    if (m.confidence == ir::Confidence::conditional) tw.field("conditional", true);
    // The summary's figures for this module (`query module`'s fields); absent when none.
    const auto fig = figures ? figures->find(m.id) : ModuleFiguresById::const_iterator{};
    if (figures && fig != figures->end()) {
      const ModuleFigures& f = fig->second;
      if (!f.output_shape.empty()) tw.field("output_shape", f.output_shape);
      if (!f.mult_adds.empty()) tw.field("mult_adds", f.mult_adds);
      if (f.mult_adds_lower_bound) tw.field("mult_adds_lower_bound", true);
      if (f.parameter_count) tw.field("parameter_count", *f.parameter_count);
      if (f.weights_bytes) tw.field("weights_bytes", *f.weights_bytes);
      if (!f.weights_dtype.empty()) tw.field("weights_dtype", f.weights_dtype);
      if (f.shared_weights) tw.field("shared_weights", true);
      if (f.order) tw.field("order", *f.order);
    }
    tw.end_object();
  }
  tw.end_array();

  tw.key("parameters").begin_array();
  for (const auto& p : ir.parameters) {
    tw.begin_object().field("id", p.id).field("key", p.key);
    opt_string(tw, "module", p.module);
    u64_list(tw, "shape", p.shape);
    tw.key("symbolic_shape");
    if (p.symbolic_shape) {
      tw.begin_array();
      for (const auto& d : *p.symbolic_shape)
        tw.value(d);
      tw.end_array();
    } else {
      tw.null();
    }
    opt_string(tw, "dtype", p.checkpoint_dtype);
    tw.field("role", ir::to_string(p.role));
    string_or_null(tw, "kind", p.kind);
    tw.field("confidence", ir::to_string(p.confidence));
    opt_string(tw, "reason", p.reason);
    u64_list(tw, "checkpoint_shape", p.checkpoint_shape);
    string_or_null(tw, "source", p.source);
    if (p.role == ir::ParameterRole::conditional || p.confidence == ir::Confidence::conditional) {
      tw.field("conditional", true);
    }
    tw.end_object();
  }
  tw.end_array();

  w.key("functions").begin_array();
  for (const auto& f : ir.functions) {
    w.begin_object()
        .field("id", f.id)
        .field("name", f.qualified_name.empty() ? f.name : f.qualified_name)
        .field("entrypoint", f.is_entrypoint);
    string_or_null(w, "source", f.source);
    w.end_object();
  }
  w.end_array();

  w.key("tensors").begin_array();
  for (const auto& t : ir.tensors) {
    w.begin_object().field("id", t.id).field("name", t.name);
    tensor_shape(w, t.shape);
    w.key("dtype");
    if (t.dtype.empty() || t.dtype == "Unknown") {
      w.null();
    } else {
      w.value(t.dtype);
    }
    w.field("role", ir::to_string(t.role));
    w.key("requires_grad");
    if (t.requires_grad) {
      w.value(*t.requires_grad);
    } else {
      w.null();
    }
    opt_string(w, "parameter", t.parameter);
    // An input no operation produces (a method's tensor parameter): its function, so the page can
    // connect it to what a module instance call passes in.
    if (t.role == ir::TensorRole::input && produced.count(t.id) == 0 && !t.owner_function.empty())
      w.field("function", t.owner_function);
    if (severed.count(t.id) != 0) w.field("grad", "severed");
    w.end_object();
  }
  w.end_array();

  w.key("operations").begin_array();
  for (const auto& op : ir.operations) {
    const auto fn = functions.find(op.function);
    w.begin_object().field("id", op.id).field("op", op.name);
    opt_string(w, "name", op.qualified_name);
    w.field("module", group_path(fn == functions.end() ? nullptr : fn->second));
    w.field("function", op.function);
    w.key("phases").begin_array();
    if (op.execution_phase) w.value(ir::to_string(*op.execution_phase));
    w.end_array();
    string_list(w, "inputs", op.inputs);
    w.key("outputs").begin_array();
    if (!op.output.empty()) w.value(op.output);
    w.end_array();
    string_or_null(w, "source", op.source);
    string_or_null(w, "dtype_rule", op.dtype_rule);
    string_or_null(w, "gradient_rule", op.gradient_rule);
    string_or_null(w, "shape_rule", op.shape_rule);
    string_or_null(w, "device_rule", op.device_rule);
    string_or_null(w, "domain_rule", op.domain_rule);
    opt_string(w, "mult_adds", op.mult_adds);  // shown in the inspector like every field
    w.key("timing");
    if (op.timing) {
      w.begin_object();
      stats(w, op.timing->stats);
      w.key("by_phase").begin_object();
      for (const auto& [phase, s] : op.timing->by_phase)
        w.field(phase, s.total_ns);
      w.end_object().end_object();
    } else {
      w.null();
    }
    w.end_object();
  }
  w.end_array();

  // The dataflow unrolled along the module tree (IR `instance_calls`): each call is sent once, a
  // family's call once with its `count`; the page unrolls the instances itself, so 32 layers do
  // not copy every operation 32 times. `parent` and `operations` are indices (into this list and
  // into `operations` above), which keeps the records short.
  {
    std::unordered_map<std::string_view, std::size_t> op_index, call_index;
    for (std::size_t i = 0; i < ir.operations.size(); ++i)
      op_index.emplace(ir.operations[i].id, i);
    for (std::size_t i = 0; i < ir.instance_calls.size(); ++i)
      call_index.emplace(ir.instance_calls[i].id, i);
    w.key("instance_calls").begin_array();
    for (const auto& c : ir.instance_calls) {
      w.begin_object().field("entrypoint", c.entrypoint);
      w.key("parent");
      const auto par = c.parent ? call_index.find(*c.parent) : call_index.end();
      if (par != call_index.end()) {
        w.value(static_cast<std::uint64_t>(par->second));
      } else {
        w.null();
      }
      w.field("path", c.path).field("method", c.method);
      opt_string(w, "function", c.function);
      opt_string(w, "call_site", c.call_site);
      opt_string(w, "repeat", c.repeat);
      w.key("count");
      if (c.count) {
        w.value(*c.count);
      } else {
        w.null();
      }
      if (c.output_shape.rank || !c.output_shape.dimensions.empty() || c.output_shape.source_expr) {
        tensor_shape(w, c.output_shape);
      }
      if (!c.output_dtype.empty() && c.output_dtype != "Unknown") w.field("dtype", c.output_dtype);
      if (c.mult_adds) w.field("mult_adds", *c.mult_adds);
      w.key("ops").begin_array();
      for (const auto& o : c.operations) {
        const auto it = op_index.find(o);
        if (it != op_index.end()) w.value(static_cast<std::uint64_t>(it->second));
      }
      w.end_array();
      // An operation's output shape in this call where it is not its tensor's own: operation
      // index -> shape (the edge labels of this instance's graph).
      if (!c.operation_shapes.empty()) {
        w.key("op_shapes").begin_object();
        for (const auto& [o, s] : c.operation_shapes) {
          const auto it = op_index.find(o);
          if (it == op_index.end()) continue;
          w.key(std::to_string(it->second));
          shape_value(w, s);
        }
        w.end_object();
      }
      w.end_object();
    }
    w.end_array();
  }

  w.key("findings").begin_array();
  for (const auto& f : ir.findings) {
    w.begin_object()
        .field("id", f.id)
        .field("rule", f.rule)
        .field("severity", ir::to_string(f.severity))
        .field("confidence", ir::to_string(f.confidence))
        .field("message", f.message);
    opt_string(w, "source", f.source);
    string_list(w, "related", f.related);
    w.end_object();
  }
  w.end_array();

  w.key("runtime");
  if (ir.runtime) {
    const auto& r = *ir.runtime;
    w.begin_object()
        .field("trace_schema", r.trace_schema)
        .field("operation_observations", r.operation_observations)
        .field("tensor_observations", r.tensor_observations)
        .field("missing_gradients", r.missing_gradients)
        .field("non_finite_gradients", r.non_finite_gradients);
    opt_string(w, "entrypoint", r.entrypoint);
    // Module scope timings (runtime/4 `module` records) for the Architecture tree's Time column.
    // The run's real wall time (threads' union), as `profile` and `query` divide by.
    std::uint64_t wall = r.wall_ns;
    if (wall == 0)
      for (auto ns : r.thread_busy_ns)
        wall += ns;
    w.field("wall_ns", wall).field("host_side", r.host_side_timings);
    w.field("unmatched_module_paths", r.unmatched_module_paths);
    w.key("module_timings").begin_array();
    for (const auto& t : r.module_timings) {
      w.begin_object().field("path", t.path).field("module", t.module);
      w.key("instance");
      if (t.instance) {
        w.value(*t.instance);
      } else {
        w.null();
      }
      w.field("family", t.path.find('{') != std::string::npos);
      w.field("calls", t.calls).field("total_ns", t.total.total_ns);
      w.field("self_ns", t.self.total_ns).field("p50_ns", t.total.p50_ns);
      w.field("p95_ns", t.total.p95_ns);
      w.end_object();
    }
    w.end_array();
    // Numeric health (runtime/4 `stats` records) for the Architecture tree's Health column: per
    // module output its worst figures, the first module to go non-finite, and the modules named
    // by an activation-growth finding.
    w.key("module_stats").begin_array();
    const ir::ModuleStats* first = nullptr;
    for (const auto& m : r.module_stats) {
      const bool family = m.path.find('{') != std::string::npos;
      w.begin_object().field("path", m.path).field("module", m.module);
      w.field("family", family).field("index", m.index).field("samples", m.samples);
      w.key("max_abs_max");
      if (m.max_abs_max) {
        w.value(*m.max_abs_max);
      } else {
        w.null();
      }
      w.key("max_rms");
      if (m.max_rms) {
        w.value(*m.max_rms);
      } else {
        w.null();
      }
      w.field("non_finite", m.nan + m.pos_inf + m.neg_inf);
      w.key("first_non_finite_step");
      if (m.first_non_finite) {
        w.value(m.first_non_finite->step);
      } else {
        w.null();
      }
      w.end_object();
      if (!family && m.first_non_finite &&
          (first == nullptr ||
           std::tie(m.first_non_finite->step, m.first_non_finite->at_ns,
                    m.first_non_finite->thread) < std::tie(first->first_non_finite->step,
                                                           first->first_non_finite->at_ns,
                                                           first->first_non_finite->thread)))
        first = &m;
    }
    w.end_array();
    w.key("first_non_finite");
    if (first != nullptr) {
      w.begin_object().field("path", first->path).field("module", first->module);
      w.field("step", first->first_non_finite->step).end_object();
    } else {
      w.null();
    }
    w.key("activation_growth").begin_array();
    for (const auto& f : ir.findings)
      if (f.rule == "runtime-activation-growth")
        for (const auto& id : f.related)
          w.value(id);
    w.end_array();
    w.end_object();
  } else {
    w.null();
  }

  tw.key("checkpoint");
  if (checkpoint != nullptr) {
    write_checkpoint(tw, *checkpoint);
  } else if (any_checkpoint) {
    // An IR read back with checkpoint shapes but no report: present = matched or shape mismatch,
    // absent = missing (unclaimed tensors are unknown here).
    CheckpointView derived;
    for (const auto& p : ir.parameters) {
      CheckpointEntry e;
      e.key = p.key;
      e.parameter = p.id;
      e.status = "missing";
      if (p.checkpoint_shape)
        e.status = p.shape && *p.shape != *p.checkpoint_shape ? "shape_mismatch" : "matched";
      e.expected = p.shape;
      e.actual = p.checkpoint_shape;
      e.dtype = p.checkpoint_dtype.value_or("");
      derived.entries.push_back(std::move(e));
    }
    write_checkpoint(tw, derived);
  } else {
    tw.null();
  }
  tw.end_object();
  w.end_object();
  return {w.take(), tw.take()};
}

std::string project_payload(const ir::ModelIr& ir, const CheckpointView* checkpoint,
                            const ModuleFiguresById* figures, const MemoryView* memory) {
  PayloadParts parts = project_payload_parts(ir, checkpoint, figures, memory);
  // Both parts are objects with disjoint keys: splice the tree's members into the main one.
  std::string out = std::move(parts.main);
  if (parts.tree.size() > 2) {
    out.back() = ',';
    out.append(parts.tree, 1, std::string::npos);
  }
  return out;
}

std::string render_viewer_html(const ir::ModelIr& ir, const ViewerOptions& options,
                               const CheckpointView* checkpoint, const ModuleFiguresById* figures,
                               const MemoryView* memory) {
  ViewerOptions opts = options;
  if (opts.title.empty() && ir.cargo) opts.title = ir.cargo->package_name;
  // One model: the page is named after it (its root), then the crate.
  if (ir.components.size() == 1 && options.title.empty() &&
      !ir.components.front().qualified_name.empty())
    opts.title =
        ir.components.front().qualified_name + (opts.title.empty() ? "" : " · " + opts.title);
  const PayloadParts parts = project_payload_parts(ir, checkpoint, figures, memory);
  return render_viewer_html_from_payload(parts.main, opts, parts.tree);
}

}  // namespace cg::viewer
